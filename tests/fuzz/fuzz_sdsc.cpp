// SuperDSC JSON -> parseSuperDscText -> backend compileSuperDsc -> verifyKernel -> timeKernel,
// as spyre-isa-dump and compileJobPlan run them. Every argument is bound to a buffer of its
// tensors' device bytes (the sizes the frontend would allocate). Also checks that the reader
// and writer agree: write(parse(write(s))) == write(s).
#include "fuzz_common.h"
#include "spyre/backend/backend.h"
#include "spyre/isa/superdsc.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include <algorithm>
#include <cstdint>

using namespace spyre;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  isa::SuperDsc s;
  if (!fuzz::accepted([&] { s = isa::parseSuperDscText(text, "fuzz/sdsc_0.json"); }))
    return 0;
  const std::string written = isa::writeSuperDsc(s).dump();
  try {
    if (isa::writeSuperDsc(isa::parseSuperDscText(written, "fuzz/rewritten.json")).dump() != written)
      fuzz::finding("write(parse(write(s))) != write(s):\n" + written);
  } catch (const Error &e) {
    fuzz::finding(std::string("the printed form does not parse back: ") + e.what() + "\n" + written);
  }

  isa::Kernel k;
  if (!fuzz::accepted([&] { k = backend::compileSuperDsc(s); }))
    return 0;
  std::vector<uint64_t> argBytes(k.args.size(), 0);
  for (const auto &t : s.labeledDs) {
    uint64_t seg = t.startAddress.empty() || t.inLx ? UINT64_MAX : t.startAddress[0] / isa::kSegmentBytes;
    if (seg < argBytes.size())
      argBytes[seg] = std::max<uint64_t>(argBytes[seg], static_cast<uint64_t>(backend::sdscTensorBytes(s, t)));
  }
  if (fuzz::accepted([&] { isa::verifyKernel(k, argBytes); }))
    fuzz::accepted([&] { isa::timeKernel(k, isa::HardwareConfig{}); });
  return 0;
}
