// The "spyre" device, part 5: what torch.save records of a spyre tensor beyond its bytes.
//
// torch.save pickles a spyre tensor like a CUDA one: its storage goes to the file as CPU bytes
// (UntypedStorage.cpu(), the host image of the storage: device_transfers.cpp) with the location
// "spyre:0", and torch.load copies them back into a storage allocated raw, on which the tensor
// is set (it adopts a flat geometry there). The storage's geometry and SpyreTensorLayout travel
// in the tensor's metadata through torch's PrivateUse1 BackendMeta hook: one key
//   spyre.storage=v1;sizes=3,70;strides=70,1;dtype=5;device_size=3,2,64;stride_map=...;
//   device_dtype=0;arrangement=0
// (value true), so the loaded storage is retiled into the layout it was saved in. A CPU load
// (map_location="cpu") ignores the key.
#include "device_internal.h"

#include "spyre/isa/error.h"
#include "spyre/sim/host_transfer.h"

#include <torch/csrc/jit/serialization/pickler_helper.h>

#include <cctype>
#include <map>
#include <sstream>

namespace spyre::py {

using namespace detail;

namespace {

constexpr const char *kKeyPrefix = "spyre.storage=v1;";

std::string join(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string encode(const StorageGeometry &g) {
  const SpyreTensorLayout &l = g.layout;
  return std::string(kKeyPrefix) + "sizes=" + join(g.sizes) + ";strides=" + join(g.strides) +
         ";dtype=" + std::to_string(static_cast<int>(g.dtype)) +
         ";device_size=" + join(l.device_size) + ";stride_map=" + join(l.stride_map) +
         ";device_dtype=" + std::to_string(static_cast<int>(l.device_dtype)) +
         ";arrangement=" + std::to_string(static_cast<int>(l.element_arrangement));
}

[[noreturn]] void bad(const std::string &key, const std::string &why) {
  throw Error("torch.load: spyre tensor metadata '" + key + "': " + why);
}

int64_t parseInt(const std::string &key, const std::string &text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception &) {
    bad(key, "expected an integer, got '" + text + "'");
  }
  if (used != text.size() || text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-'))
    bad(key, "expected an integer, got '" + text + "'");
  return v;
}

std::vector<int64_t> parseList(const std::string &key, const std::string &text) {
  std::vector<int64_t> out;
  if (text.empty())
    return out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(parseInt(key, item));
  return out;
}

StorageGeometry decode(const std::string &key) {
  std::map<std::string, std::string> fields;
  std::stringstream ss(key.substr(std::string(kKeyPrefix).size()));
  std::string item;
  while (std::getline(ss, item, ';')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      bad(key, "expected name=value, got '" + item + "'");
    fields[item.substr(0, eq)] = item.substr(eq + 1);
  }
  auto field = [&](const char *name) -> const std::string & {
    auto it = fields.find(name);
    if (it == fields.end())
      bad(key, std::string("missing field '") + name + "'");
    return it->second;
  };
  StorageGeometry g;
  g.sizes = parseList(key, field("sizes"));
  g.strides = parseList(key, field("strides"));
  const int64_t dtype = parseInt(key, field("dtype"));
  if (dtype < 0 || dtype >= static_cast<int64_t>(at::ScalarType::NumOptions) ||
      !hostTypeOf(static_cast<at::ScalarType>(dtype)))
    bad(key, "dtype " + std::to_string(dtype) + " is not a dtype spyre holds");
  g.dtype = static_cast<at::ScalarType>(dtype);
  const int64_t fmt = parseInt(key, field("device_dtype"));
  const int64_t arrangement = parseInt(key, field("arrangement"));
  const DataFormat expected = deviceFormatOf(g.dtype);
  if (fmt != static_cast<int64_t>(expected))
    bad(key, "device_dtype " + std::to_string(fmt) + " does not match " + dtypeName(g.dtype) +
                 " (DataFormats." + std::string(dataFormatName(expected)) + ")");
  if (arrangement != static_cast<int64_t>(ElementArrangement::STANDARD))
    bad(key, "element arrangement " + std::to_string(arrangement) + " (expected 0, STANDARD)");
  g.layout = SpyreTensorLayout::fromDevice(parseList(key, field("device_size")),
                                           parseList(key, field("stride_map")), expected);
  for (int64_t d : g.sizes)
    if (d < 0)
      bad(key, "negative size in " + vecStr(g.sizes));
  if (g.sizes.size() != g.strides.size())
    bad(key, "sizes " + vecStr(g.sizes) + " and strides " + vecStr(g.strides) + " differ in rank");
  const SpyreTensorLayout &l = g.layout;
  if (l.device_size.empty() || l.device_size.size() != l.stride_map.size() ||
      l.device_size.back() != l.elemsPerStick())
    bad(key, "malformed layout " + l.str());
  return g;
}

void saveMeta(const at::Tensor &t, std::unordered_map<std::string, bool> &meta) {
  Allocation *a = allocationOf(t.storage());
  if (a && a->geom && c10::multiply_integers(a->geom->sizes) != 0)
    meta[encode(*a->geom)] = true;
}

void loadMeta(const at::Tensor &t, std::unordered_map<std::string, bool> &meta) {
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    if (it->first.rfind(kKeyPrefix, 0) != 0)
      continue;
    const std::string key = it->first;
    meta.erase(it);
    withTorchErrors([&] {
      StorageGeometry g = decode(key);
      Allocation *a = allocationOf(t.storage());
      if (!a || (a->geom && a->geom->sizes == g.sizes && a->geom->strides == g.strides &&
                 a->geom->dtype == g.dtype && a->geom->layout == g.layout))
        return; // already retiled (another tensor of the same storage)
      (void)sim::mapLayout(g.layout, g.sizes, g.strides); // the layout describes the geometry
      retileStorage(t, g);
    });
    return;
  }
}

const bool gRegistered = [] {
  torch::jit::TensorBackendMetaRegistry(kSpyre, &saveMeta, &loadMeta);
  return true;
}();

} // namespace

} // namespace spyre::py
