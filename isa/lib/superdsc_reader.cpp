// Parsing SuperDSC JSON (docs/superdsc.md §2): every field read as int64 and range-checked
// before any narrowing, every error `<file>: <JSON pointer>: <what was expected>`, unknown
// fields of torch-spyre's schema objects reported as warnings, unknown keys of data objects
// (core and dim tables, memOrg_) rejected.
#include "json_reader.h"
#include "spyre/isa/error.h"
#include "spyre/isa/superdsc.h"
#include <algorithm>
#include <limits>
#include <set>

namespace spyre::isa {

namespace {

using detail::pointerToken;
using detail::inQuotes;
using detail::Reader;

constexpr int64_t kMaxIndex = INT32_MAX;                          ///< ldsIdx_ (an int in the model)
constexpr int64_t kMaxDdrAddress = kMaxSegments * kSegmentBytes - 1; ///< DDR start addresses
constexpr int64_t kMaxLxAddress = (int64_t{1} << 21) - 1;          ///< LX start addresses (2 MiB LX)
/// SuperDSC JSON text (real ones are tens of KiB; a 16 MiB string parses in ~0.4 s).
constexpr size_t kMaxSuperDscBytes = size_t{16} << 20;

std::string coreRange(const SuperDsc &s) {
  return "0.." + std::to_string(s.numCoresUsed - 1) + " (numCoresUsed_ " + std::to_string(s.numCoresUsed) + ")";
}

/// "<dsName>-idx<N>": the ldsIdx_ N, whose tensor must be named dsName.
int parseLdsRef(const Reader &r, const SuperDsc &s, const std::string &ref, const std::string &path) {
  auto pos = ref.rfind("-idx");
  int64_t idx = -1;
  std::string digits = pos == std::string::npos ? "" : ref.substr(pos + 4);
  if (pos == std::string::npos || digits.empty() || digits[0] == '-' || !detail::parseDecimal(digits, idx) ||
      idx > kMaxIndex)
    r.fail(path, "expected '<dsName>-idx<ldsIdx_>' with ldsIdx_ in 0.." + std::to_string(kMaxIndex) + ", got " +
                     inQuotes(ref));
  for (const auto &t : s.labeledDs)
    if (t.ldsIdx == idx) {
      if (t.dsName != ref.substr(0, pos))
        r.fail(path, inQuotes(ref) + " names " + inQuotes(ref.substr(0, pos)) + " but ldsIdx_ " + std::to_string(idx) +
                         " is " + inQuotes(t.dsName));
      return static_cast<int>(idx);
    }
  r.fail(path, "no labeledDs_ entry with ldsIdx_ " + std::to_string(idx));
}

/// numCoresUsed_ and the optional lxReservedBytes_ of the kernel entry `top` (at `tp`).
void parseKernelCounts(const Reader &r, const ojson &top, const std::string &tp, SuperDsc &s) {
  r.object(top, tp);
  r.warnUnknown(top, tp, {"numCoresUsed_", "dscs_", "numWkSlicesPerDim_", "coreIdToWkSlice_", "lxReservedBytes_"},
                {"sdscFoldProps_", "sdscFolds_", "coreFoldProp_", "coreletFoldProp_", "coreIdToDsc_",
                 "coreIdToDscSchedule"});
  s.numCoresUsed = static_cast<int>(r.integer(r.field(top, tp, "numCoresUsed_"), tp + "/numCoresUsed_", 1, kMaxSdscCores));
  if (auto it = top.find("lxReservedBytes_"); it != top.end()) {
    s.lxReservedBytes = r.integer(*it, tp + "/lxReservedBytes_", 0, 1677721);
    if (s.lxReservedBytes % 128 != 0)
      r.fail(tp + "/lxReservedBytes_", "expected a multiple of 128 in [0, 1677721], got " +
                                          std::to_string(s.lxReservedBytes));
  }
}

/// The iteration space: N_ of the DSC `dsc` (at `dp`) gives dims and N.
void parseDims(const Reader &r, const ojson &dsc, const std::string &dp, SuperDsc &s) {
  const ojson &n = r.object(r.field(dsc, dp, "N_"), dp + "/N_");
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (it.key() == "name_")
      continue;
    std::string label = it.key(), kp = dp + "/N_/" + pointerToken(it.key());
    if (label.size() < 2 || label.back() != '_')
      r.fail(kp, "expected a dimension key ending in '_'");
    label.pop_back();
    if (s.dims.size() == static_cast<size_t>(kMaxSdscDims))
      r.fail(kp, "more than " + std::to_string(kMaxSdscDims) + " dimensions (the SuperDSC limit)");
    s.N.push_back(r.integer(it.value(), kp, 1, kMaxSdscDimSize));
    s.dims.push_back(label);
  }
  if (s.dims.empty())
    r.fail(dp + "/N_", "expected at least one dimension");
}

/// The work division of the kernel entry `top` (at `tp`): numWkSlicesPerDim_ and
/// coreIdToWkSlice_ (keys: exactly the core ids 0..numCoresUsed_-1, each with every N_ dim).
void parseWorkSlices(const Reader &r, const ojson &top, const std::string &tp, SuperDsc &s) {
  const ojson &slices = r.object(r.field(top, tp, "numWkSlicesPerDim_"), tp + "/numWkSlicesPerDim_");
  for (auto it = slices.begin(); it != slices.end(); ++it)
    if (s.dimIndex(it.key()) < 0)
      r.fail(tp + "/numWkSlicesPerDim_/" + pointerToken(it.key()), "dimension is not in N_");
  s.numWkSlicesPerDim.assign(s.dims.size(), 1);
  int64_t product = 1; // <= 32^8: no overflow
  for (size_t d = 0; d < s.dims.size(); ++d) {
    std::string sp = tp + "/numWkSlicesPerDim_/" + pointerToken(s.dims[d]);
    auto it = slices.find(s.dims[d]);
    if (it == slices.end())
      r.fail(sp, "missing split count for dimension '" + s.dims[d] + "'");
    s.numWkSlicesPerDim[d] = r.integer(*it, sp, 1, s.numCoresUsed);
    product *= s.numWkSlicesPerDim[d];
  }
  if (product != s.numCoresUsed)
    r.fail(tp + "/numWkSlicesPerDim_", "product of splits " + std::to_string(product) +
                                           " does not equal numCoresUsed_ " + std::to_string(s.numCoresUsed));
  const std::string c2sp = tp + "/coreIdToWkSlice_";
  const ojson &c2s = r.object(r.field(top, tp, "coreIdToWkSlice_"), c2sp);
  for (auto it = c2s.begin(); it != c2s.end(); ++it) {
    int64_t c = -1;
    if (!detail::parseDecimal(it.key(), c) || std::to_string(c) != it.key() || c < 0 || c >= s.numCoresUsed)
      r.fail(c2sp + "/" + pointerToken(it.key()), "key is not a core id in " + coreRange(s));
  }
  for (int c = 0; c < s.numCoresUsed; ++c) {
    std::string cp = c2sp + "/" + std::to_string(c);
    const ojson &sl = r.object(r.field(c2s, c2sp, std::to_string(c)), cp);
    for (auto it = sl.begin(); it != sl.end(); ++it)
      if (s.dimIndex(it.key()) < 0)
        r.fail(cp + "/" + pointerToken(it.key()), "dimension is not in N_");
    std::vector<int64_t> idx(s.dims.size());
    for (size_t d = 0; d < s.dims.size(); ++d) {
      std::string ip = cp + "/" + pointerToken(s.dims[d]);
      const ojson &v = r.field(sl, cp, s.dims[d]);
      idx[d] = r.integer(v, ip, INT64_MIN, INT64_MAX);
      if (idx[d] < 0 || idx[d] >= s.numWkSlicesPerDim[d])
        r.fail(ip, "slice " + std::to_string(idx[d]) + " outside 0.." + std::to_string(s.numWkSlicesPerDim[d] - 1));
    }
    s.coreIdToWkSlice.push_back(idx);
  }
}

/// Dims of N_, each once.
std::vector<std::string> dimList(const Reader &r, const ojson &v, const std::string &path, const SuperDsc &s) {
  std::vector<std::string> out = r.strings(v, path);
  for (size_t i = 0; i < out.size(); ++i) {
    if (s.dimIndex(out[i]) < 0)
      r.fail(path, "dimension " + inQuotes(out[i]) + " is not in N_");
    for (size_t j = 0; j < i; ++j)
      if (out[j] == out[i])
        r.fail(path, "dimension " + inQuotes(out[i]) + " is listed twice");
  }
  return out;
}

/// The layout classes: primaryDsInfo_ of the DSC `dsc` (at `dp`) of op `op`.
void parsePrimaryDsInfo(const Reader &r, const ojson &dsc, const std::string &dp, const std::string &op,
                        SuperDsc &s) {
  const ojson &pdi = r.field(dsc, dp, "primaryDsInfo_");
  if (!pdi.is_object() || pdi.empty())
    r.fail(dp + "/primaryDsInfo_", "expected a non-empty object");
  for (auto it = pdi.begin(); it != pdi.end(); ++it) {
    std::string lp = dp + "/primaryDsInfo_/" + pointerToken(it.key());
    r.object(it.value(), lp);
    r.warnUnknown(it.value(), lp, {"layoutDimOrder_", "stickDimOrder_", "stickSize_"}, {});
    SdscLayout l;
    l.layoutDimOrder = dimList(r, r.field(it.value(), lp, "layoutDimOrder_"), lp + "/layoutDimOrder_", s);
    l.stickDimOrder = dimList(r, r.field(it.value(), lp, "stickDimOrder_"), lp + "/stickDimOrder_", s);
    l.stickSize = r.integers(r.field(it.value(), lp, "stickSize_"), lp + "/stickSize_", 1, 1024);
    // A stick spans one dim, except in a lane-moving reshape: there a tensor's row (its
    // stick) may be two dims of the common refinement N_ (backend_reshape.cpp).
    if (l.stickSize.size() != 1 || l.stickDimOrder.empty() || (l.stickDimOrder.size() != 1 && op != "reshape"))
      r.fail(lp, "expected exactly one stick dimension and stick size");
    s.primaryDsInfo[it.key()] = l;
  }
}

/// memOrg_ (at `mp`): {"hbm": {"isPresent": 0|1}, "lx": {"isPresent": 0|1}}, each optional, at
/// least one present. True for LX-resident (lx present, hbm not).
bool parseMemOrg(const Reader &r, const ojson &mem, const std::string &mp) {
  r.object(mem, mp);
  bool hbm = false, lx = false;
  for (auto it = mem.begin(); it != mem.end(); ++it) {
    std::string cp = mp + "/" + pointerToken(it.key());
    if (it.key() != "hbm" && it.key() != "lx")
      r.fail(cp, "unknown memory component (expected hbm or lx)");
    const ojson &c = r.object(it.value(), cp);
    for (auto f = c.begin(); f != c.end(); ++f)
      if (f.key() != "isPresent")
        r.fail(cp + "/" + pointerToken(f.key()), "unknown field (expected only isPresent)");
    bool present = r.integer(r.field(c, cp, "isPresent"), cp + "/isPresent", 0, 1) == 1;
    (it.key() == "hbm" ? hbm : lx) = present;
  }
  if (!hbm && !lx)
    r.fail(mp, "neither hbm nor lx has isPresent 1");
  return lx && !hbm;
}

/// The tensors: labeledDs_ of the DSC `dsc` (at `dp`).
void parseLabeledDs(const Reader &r, const ojson &dsc, const std::string &dp, SuperDsc &s) {
  const ojson &lds = r.field(dsc, dp, "labeledDs_");
  if (!lds.is_array() || lds.empty())
    r.fail(dp + "/labeledDs_", "expected a non-empty array");
  if (lds.size() > static_cast<size_t>(kMaxLabeledDs))
    r.fail(dp + "/labeledDs_", std::to_string(lds.size()) + " labeled data structures; the backend allows at most " +
                                   std::to_string(kMaxLabeledDs));
  for (size_t i = 0; i < lds.size(); ++i) {
    std::string lp = dp + "/labeledDs_/" + std::to_string(i);
    r.object(lds[i], lp);
    r.warnUnknown(lds[i], lp, {"ldsIdx_", "dsName_", "dsType_", "scale_", "dataFormat_", "memOrg_"}, {"wordLength"});
    SdscTensor t;
    t.ldsIdx = static_cast<int>(r.integer(r.field(lds[i], lp, "ldsIdx_"), lp + "/ldsIdx_", 0, kMaxIndex));
    t.dsName = r.string(r.field(lds[i], lp, "dsName_"), lp + "/dsName_");
    for (size_t j = 0; j < s.labeledDs.size(); ++j) {
      std::string other = dp + "/labeledDs_/" + std::to_string(j);
      if (s.labeledDs[j].ldsIdx == t.ldsIdx)
        r.fail(lp + "/ldsIdx_", "duplicate ldsIdx_ " + std::to_string(t.ldsIdx) + " (also at " + other + ")");
      if (s.labeledDs[j].dsName == t.dsName)
        r.fail(lp + "/dsName_", "duplicate dsName_ " + inQuotes(t.dsName) + " (also at " + other + ")");
    }
    t.dsType = r.string(r.field(lds[i], lp, "dsType_"), lp + "/dsType_");
    if (!s.primaryDsInfo.count(t.dsType))
      r.fail(lp + "/dsType_", "layout class " + inQuotes(t.dsType) + " is not in primaryDsInfo_");
    for (int64_t v : r.integers(r.field(lds[i], lp, "scale_"), lp + "/scale_", INT64_MIN, INT64_MAX)) {
      if (v != 1 && v != -1 && v != -2)
        r.fail(lp + "/scale_", "expected scales 1, -1 or -2, got " + std::to_string(v));
      t.scale.push_back(static_cast<int>(v));
    }
    if (t.scale.size() != s.dims.size())
      r.fail(lp + "/scale_", "expected " + std::to_string(s.dims.size()) + " scales (one per N_ dimension), got " +
                                 std::to_string(t.scale.size()));
    std::string fmt = r.string(r.field(lds[i], lp, "dataFormat_"), lp + "/dataFormat_");
    auto f = parseDataFormat(fmt);
    if (!f || *f == DataFormat::INVALID)
      r.fail(lp + "/dataFormat_", "unknown data format " + inQuotes(fmt));
    t.dataFormat = *f;
    t.inLx = parseMemOrg(r, r.field(lds[i], lp, "memOrg_"), lp + "/memOrg_");
    s.labeledDs.push_back(t);
  }
}

/// maxDimSizes_ / offsets_ / steps_ (layoutDimOrder_ order) of the allocate node `node` (at
/// `np`): a view of a larger allocation, stored in tensor `t` in N_ order.
void parseAllocateView(const Reader &r, const ojson &node, const std::string &np, const SuperDsc &s, SdscTensor &t) {
  auto ms = node.find("maxDimSizes_");
  if (ms == node.end())
    return;
  const auto &order = s.primaryDsInfo.at(t.dsType).layoutDimOrder;
  std::vector<int64_t> sizes = r.integers(*ms, np + "/maxDimSizes_", -1, kMaxSdscDimSize);
  for (size_t k = 0; k < sizes.size(); ++k)
    if (sizes[k] == 0)
      r.fail(np + "/maxDimSizes_/" + std::to_string(k), "expected -1 (the dim's N_) or a size >= 1, got 0");
  std::vector<int64_t> offs(sizes.size(), 0), steps(sizes.size(), 1);
  if (auto os = node.find("offsets_"); os != node.end())
    offs = r.integers(*os, np + "/offsets_", 0, kMaxSdscDimSize);
  bool stepped = false;
  if (auto ss = node.find("steps_"); ss != node.end()) {
    steps = r.integers(*ss, np + "/steps_", 1, kMaxSdscDimSize);
    if (steps.size() != sizes.size())
      r.fail(np + "/steps_", "expected " + std::to_string(sizes.size()) + " entries (one per layoutDimOrder_ dim)");
    for (int64_t st : steps)
      stepped |= st != 1;
  }
  if (sizes.size() != order.size() || offs.size() != order.size())
    r.fail(np + "/maxDimSizes_", "expected " + std::to_string(order.size()) +
                                     " entries (one per layoutDimOrder_ dim) in maxDimSizes_ and offsets_");
  bool view = stepped;
  for (size_t k = 0; k < sizes.size(); ++k)
    view |= sizes[k] != -1 || offs[k] != 0;
  if (!view)
    return;
  t.maxDimSizes.assign(s.dims.size(), -1);
  t.offsets.assign(s.dims.size(), 0);
  if (stepped)
    t.steps.assign(s.dims.size(), 1);
  for (size_t k = 0; k < order.size(); ++k) {
    int d = s.dimIndex(order[k]);
    int64_t size = sizes[k] == -1 ? s.N[d] : sizes[k];
    // The view's last element: offset + (N - 1) * step (all <= 2^40: no overflow in 128 bits).
    __int128 last = static_cast<__int128>(offs[k]) + static_cast<__int128>(s.N[d] - 1) * steps[k];
    if (last + 1 > size)
      r.fail(np + "/offsets_", "the view from " + std::to_string(offs[k]) + " (" + std::to_string(s.N[d]) +
                                   " elements, step " + std::to_string(steps[k]) + ") of dim " + order[k] +
                                   " does not fit its allocation of " + std::to_string(size));
    t.maxDimSizes[d] = sizes[k];
    t.offsets[d] = offs[k];
    if (stepped)
      t.steps[d] = steps[k];
  }
}

/// startAddressCoreCorelet_.data_ of an allocate node (at `dataPath`): exactly one key
/// "[c, 0, 0]" per core c; DDR addresses inside the argument segments, LX ones inside LX.
void parseStartAddresses(const Reader &r, const ojson &data, const std::string &dataPath, const SuperDsc &s,
                         SdscTensor &t) {
  r.object(data, dataPath);
  for (auto it = data.begin(); it != data.end(); ++it) {
    bool ok = false;
    const std::string &key = it.key();
    if (key.size() > 8 && key.front() == '[' && key.compare(key.size() - 7, 7, ", 0, 0]") == 0) {
      int64_t c = -1;
      std::string digits = key.substr(1, key.size() - 8);
      ok = detail::parseDecimal(digits, c) && std::to_string(c) == digits && c >= 0 && c < s.numCoresUsed;
    }
    if (!ok)
      r.fail(dataPath + "/" + pointerToken(key), "key is not \"[c, 0, 0]\" for a core c in " + coreRange(s));
  }
  const int64_t hi = t.inLx ? kMaxLxAddress : kMaxDdrAddress;
  t.startAddress.assign(s.numCoresUsed, 0);
  for (int c = 0; c < s.numCoresUsed; ++c) {
    std::string key = "[" + std::to_string(c) + ", 0, 0]";
    t.startAddress[c] = static_cast<uint64_t>(r.integer(r.field(data, dataPath, key), dataPath + "/" + key, 0, hi));
  }
}

/// Start addresses (and views) from the allocate nodes of scheduleTree_ in the DSC `dsc` (at
/// `dp`); every tensor needs exactly one.
void parseScheduleTree(const Reader &r, const ojson &dsc, const std::string &dp, SuperDsc &s) {
  const ojson &tree = r.field(dsc, dp, "scheduleTree_");
  if (!tree.is_array())
    r.fail(dp + "/scheduleTree_", "expected an array");
  std::vector<std::string> allocatedAt(s.labeledDs.size());
  for (size_t i = 0; i < tree.size(); ++i) {
    std::string np = dp + "/scheduleTree_/" + std::to_string(i);
    if (r.string(r.field(tree[i], np, "nodeType_"), np + "/nodeType_") != "allocate")
      continue;
    r.warnUnknown(tree[i], np, {"nodeType_", "ldsIdx_", "startAddressCoreCorelet_", "maxDimSizes_", "offsets_", "steps_"},
                  {"name_", "prev_", "component_", "layoutDimOrder_", "indirectAllocType_", "coordinates_"});
    int64_t idx = r.integer(r.field(tree[i], np, "ldsIdx_"), np + "/ldsIdx_", 0, kMaxIndex);
    size_t ti = 0;
    while (ti < s.labeledDs.size() && s.labeledDs[ti].ldsIdx != idx)
      ++ti;
    if (ti == s.labeledDs.size())
      r.fail(np + "/ldsIdx_", "no labeledDs_ entry with ldsIdx_ " + std::to_string(idx));
    if (!allocatedAt[ti].empty())
      r.fail(np + "/ldsIdx_", "a second allocate node for ldsIdx_ " + std::to_string(idx) + " (the first is " +
                                  allocatedAt[ti] + ")");
    allocatedAt[ti] = np;
    SdscTensor &t = s.labeledDs[ti];
    parseAllocateView(r, tree[i], np, s, t);
    std::string sp = np + "/startAddressCoreCorelet_";
    const ojson &sa = r.object(r.field(tree[i], np, "startAddressCoreCorelet_"), sp);
    r.warnUnknown(sa, sp, {"data_"}, {"dim_prop_func", "dim_prop_attr"});
    parseStartAddresses(r, r.field(sa, sp, "data_"), sp + "/data_", s, t);
  }
  for (const auto &t : s.labeledDs)
    if (t.startAddress.empty())
      r.fail(dp + "/scheduleTree_", "no allocate node for " + t.dsName + " (ldsIdx_ " + std::to_string(t.ldsIdx) + ")");
}

/// The optional constantInfo_ of the DSC `dsc` (at `dp`).
void parseConstants(const Reader &r, const ojson &dsc, const std::string &dp, SuperDsc &s) {
  auto it = dsc.find("constantInfo_");
  if (it == dsc.end())
    return;
  r.object(*it, dp + "/constantInfo_");
  for (auto c = it->begin(); c != it->end(); ++c) {
    std::string kp = dp + "/constantInfo_/" + pointerToken(c.key());
    r.object(c.value(), kp);
    r.warnUnknown(c.value(), kp, {"name_", "value_", "argIdx_"}, {"dataFormat_"});
    std::string cname = r.string(r.field(c.value(), kp, "name_"), kp + "/name_");
    if (s.constants.count(cname))
      r.fail(kp + "/name_", "constant " + inQuotes(cname) + " is defined twice");
    if (auto a = c.value().find("argIdx_"); a != c.value().end())
      s.constantArgs[cname] = static_cast<int>(r.integer(*a, kp + "/argIdx_", 0, 65535));
    const ojson &v = r.field(c.value(), kp, "value_");
    if (v.is_string() && (v == "inf" || v == "-inf" || v == "nan")) {
      const std::string t = v.get<std::string>();
      s.constants[cname] = t == "nan" ? std::numeric_limits<double>::quiet_NaN()
                           : t == "inf" ? std::numeric_limits<double>::infinity()
                                        : -std::numeric_limits<double>::infinity();
      continue;
    }
    if (!v.is_number())
      r.fail(kp + "/value_", "expected a number or \"inf\", \"-inf\", \"nan\", got " + detail::brief(v));
    s.constants[cname] = v.get<double>();
  }
}

/// The operand list `key` of the compute op `cop` (at `cp`) into `out`: ldsIdx_ values, -1 for
/// a "Constant-<name>" input (its name recorded in inputConsts).
void parseOperandRefs(const Reader &r, const ojson &cop, const std::string &cp, const char *key, SuperDsc &s,
                      std::vector<int> &out) {
  auto list = r.strings(r.field(cop, cp, key), cp + "/" + key);
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p = cp + "/" + key + "/" + std::to_string(i);
    if (std::string_view(key) == "inputLabeledDs" && list[i].rfind("Constant-", 0) == 0) {
      std::string cname = list[i].substr(9);
      if (!s.constants.count(cname))
        r.fail(p, "constant " + inQuotes(cname) + " is not in constantInfo_");
      out.push_back(-1);
      s.inputConsts.resize(out.size());
      s.inputConsts.back() = cname;
      continue;
    }
    out.push_back(parseLdsRef(r, s, list[i], p));
  }
}

/// The computeOp_ entries of a fused DSC (our extension, docs/superdsc.md §6.9): operands may
/// be "Result-op<k>" (entry k < this one); s.inputs / s.outputs become the external tensors.
void parseFusedOps(const Reader &r, const ojson &cops, const std::string &dp, SuperDsc &s) {
  if (!cops.is_array() || cops.size() < 2 || cops.size() > 64)
    r.fail(dp + "/computeOp_", "a fused DSC expects 2..64 compute ops");
  for (size_t k = 0; k < cops.size(); ++k) {
    std::string cp = dp + "/computeOp_/" + std::to_string(k);
    r.object(cops[k], cp);
    r.warnUnknown(cops[k], cp, {"exUnit", "opFuncName", "inputLabeledDs", "outputLabeledDs"},
                  {"attributes_", "location"});
    const std::string unit = r.string(r.field(cops[k], cp, "exUnit"), cp + "/exUnit");
    SdscComputeOp op;
    op.opFuncName = r.string(r.field(cops[k], cp, "opFuncName"), cp + "/opFuncName");
    // A fused matmul (§6.11): entry 0 is the batchmatmul on the pt, the epilogue on the sfp.
    const bool matmul = k == 0 && op.opFuncName == "batchmatmul";
    if (unit != (matmul ? "pt" : "sfp"))
      r.fail(cp + "/exUnit", std::string(matmul ? "a fused batchmatmul runs on the pt" : "a fused op runs on the sfp") +
                                 ", got " + inQuotes(unit));
    if (k > 0 && op.opFuncName == "batchmatmul")
      r.fail(cp + "/opFuncName", "a fused batchmatmul must be computeOp_ 0");
    s.exUnit = k == 0 ? unit : s.exUnit;
    auto ins = r.strings(r.field(cops[k], cp, "inputLabeledDs"), cp + "/inputLabeledDs");
    for (size_t i = 0; i < ins.size(); ++i) {
      std::string p = cp + "/inputLabeledDs/" + std::to_string(i);
      op.inputConsts.emplace_back();
      if (ins[i].rfind("Constant-", 0) == 0) {
        op.inputConsts.back() = ins[i].substr(9);
        if (!s.constants.count(op.inputConsts.back()))
          r.fail(p, "constant " + inQuotes(op.inputConsts.back()) + " is not in constantInfo_");
        op.inputs.push_back(-1);
      } else if (ins[i].rfind("Result-op", 0) == 0) {
        const std::string num = ins[i].substr(9);
        if (num.empty() || num.size() > 2 || num.find_first_not_of("0123456789") != std::string::npos ||
            std::stoi(num) >= static_cast<int>(k))
          r.fail(p, inQuotes(ins[i]) + " does not name an earlier compute op");
        op.inputs.push_back(fusedResultRef(std::stoi(num)));
      } else {
        op.inputs.push_back(parseLdsRef(r, s, ins[i], p));
        if (std::find(s.inputs.begin(), s.inputs.end(), op.inputs.back()) == s.inputs.end())
          s.inputs.push_back(op.inputs.back());
      }
    }
    auto outs = r.strings(r.field(cops[k], cp, "outputLabeledDs"), cp + "/outputLabeledDs");
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string p = cp + "/outputLabeledDs/" + std::to_string(i);
      op.outputs.push_back(parseLdsRef(r, s, outs[i], p));
      if (std::find(s.outputs.begin(), s.outputs.end(), op.outputs.back()) != s.outputs.end() ||
          std::find(s.inputs.begin(), s.inputs.end(), op.outputs.back()) != s.inputs.end())
        r.fail(p, inQuotes(outs[i]) + " is written twice or also read");
      s.outputs.push_back(op.outputs.back());
    }
    s.fusedOps.push_back(std::move(op));
  }
  s.inputConsts.assign(s.inputs.size(), "");
  if (s.outputs.empty())
    r.fail(dp + "/computeOp_", "a fused DSC expects at least one output");
}

/// The single computeOp_ of the DSC `dsc` (at `dp`) keyed `op`.
void parseComputeOp(const Reader &r, const ojson &dsc, const std::string &dp, const std::string &op, SuperDsc &s) {
  const ojson &cops = r.field(dsc, dp, "computeOp_");
  if (op == kFusedOpFunc) {
    s.opFuncName = op;
    parseFusedOps(r, cops, dp, s);
    return;
  }
  if (!cops.is_array() || cops.size() != 1)
    r.fail(dp + "/computeOp_", "expected exactly one compute op");
  std::string cp = dp + "/computeOp_/0";
  r.object(cops[0], cp);
  r.warnUnknown(cops[0], cp, {"exUnit", "opFuncName", "inputLabeledDs", "outputLabeledDs"}, {"attributes_", "location"});
  s.exUnit = r.string(r.field(cops[0], cp, "exUnit"), cp + "/exUnit");
  if (s.exUnit != "sfp" && s.exUnit != "pt")
    r.fail(cp + "/exUnit", "expected 'sfp' or 'pt', got " + inQuotes(s.exUnit));
  s.opFuncName = r.string(r.field(cops[0], cp, "opFuncName"), cp + "/opFuncName");
  if (s.opFuncName != op)
    r.fail(cp + "/opFuncName", inQuotes(s.opFuncName) + " does not match the DSC key " + inQuotes(op));
  parseOperandRefs(r, cops[0], cp, "inputLabeledDs", s, s.inputs);
  s.inputConsts.resize(s.inputs.size());
  parseOperandRefs(r, cops[0], cp, "outputLabeledDs", s, s.outputs);
  if (s.outputs.empty())
    r.fail(cp + "/outputLabeledDs", "expected at least one output");
}

} // namespace

SuperDsc parseSuperDsc(const ojson &root, const std::string &file) {
  SuperDsc s;
  Reader r{file, &s.warnings};
  if (!root.is_object() || root.size() != 1)
    r.fail("/", "expected an object with exactly one kernel entry");
  s.name = root.begin().key();
  const ojson &top = root.begin().value();
  std::string tp = "/" + pointerToken(s.name);
  parseKernelCounts(r, top, tp, s);
  const ojson &dscs = r.field(top, tp, "dscs_");
  if (!dscs.is_array() || dscs.size() != 1)
    r.fail(tp + "/dscs_", "expected an array with exactly one DSC");
  if (!dscs[0].is_object() || dscs[0].size() != 1)
    r.fail(tp + "/dscs_/0", "expected an object {<opFuncName>: {...}}");
  std::string op = dscs[0].begin().key();
  const ojson &dsc = dscs[0].begin().value();
  std::string dp = tp + "/dscs_/0/" + pointerToken(op);
  r.object(dsc, dp);
  r.warnUnknown(dsc, dp, {"N_", "primaryDsInfo_", "labeledDs_", "scheduleTree_", "computeOp_", "constantInfo_"},
                {"numCoresUsed_", "numCoreletsUsed_", "coreIdsUsed_", "coordinateMasking_", "maskingConstId_",
                 "dataStageParam_"});

  parseDims(r, dsc, dp, s);
  parseWorkSlices(r, top, tp, s);
  parsePrimaryDsInfo(r, dsc, dp, op, s);
  parseLabeledDs(r, dsc, dp, s);
  parseScheduleTree(r, dsc, dp, s);
  parseConstants(r, dsc, dp, s);
  parseComputeOp(r, dsc, dp, op, s);
  return s;
}

SuperDsc parseSuperDscText(const std::string &text, const std::string &file) {
  if (text.size() > kMaxSuperDscBytes)
    throw Error(file + ": " + std::to_string(text.size()) + " bytes, more than the SuperDSC limit of " +
                std::to_string(kMaxSuperDscBytes) + " bytes (16 MiB)");
  return parseSuperDsc(detail::parseJson(text, file), file);
}

} // namespace spyre::isa
