// ISA listing text -> parseKernel -> verifyKernel (1 TiB per argument, as spyre-isa-dump checks a
// listing) -> timeKernel. Also checks the printer and parser agree on what was parsed:
// print(parse(print(k))) == print(k).
#include "fuzz_common.h"
#include "spyre/isa/listing.h"
#include "spyre/isa/timing.h"
#include "spyre/isa/verifier.h"
#include <cstdint>

using namespace spyre;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  isa::Kernel k;
  if (!fuzz::accepted([&] { k = isa::parseKernel(text, "fuzz.lst"); }))
    return 0;
  fuzz::checkRoundTrip(isa::printKernel(k), "k", [](const std::string &printed) {
    return isa::printKernel(isa::parseKernel(printed, "printed.lst"));
  });
  if (fuzz::accepted([&] { isa::verifyKernel(k, std::vector<uint64_t>(k.args.size(), uint64_t{1} << 40)); }))
    fuzz::accepted([&] { isa::timeKernel(k, isa::HardwareConfig{}); });
  return 0;
}
