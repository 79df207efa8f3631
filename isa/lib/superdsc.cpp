#include "spyre/isa/superdsc.h"
#include "spyre/isa/error.h"
#include <regex>

namespace spyre::isa {

int SuperDsc::dimIndex(const std::string &label) const {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == label)
      return static_cast<int>(i);
  return -1;
}

const SdscTensor &SuperDsc::tensor(int ldsIdx) const {
  for (const auto &t : labeledDs)
    if (t.ldsIdx == ldsIdx)
      return t;
  throw Error("SuperDSC " + name + ": no labeledDs_ with ldsIdx_ " + std::to_string(ldsIdx));
}

// ---------------------------------------------------------------------------------------------
// Writing (the shape of torch-spyre's generated JSON, notes §2.5)
// ---------------------------------------------------------------------------------------------
namespace {

ojson fold(const std::vector<std::pair<std::string, int64_t>> &attrs, const std::vector<ojson> &funcs) {
  ojson f;
  f["dim_prop_func"] = funcs;
  ojson a = ojson::array();
  for (const auto &[label, factor] : attrs)
    a.push_back({{"factor_", factor}, {"label_", label}});
  f["dim_prop_attr"] = a;
  return f;
}

ojson affine(int64_t alpha, int64_t beta = 0) { return {{"Affine", {{"alpha_", alpha}, {"beta_", beta}}}}; }

} // namespace

ojson writeSuperDsc(const SuperDsc &s) {
  int nc = s.numCoresUsed;
  ojson dsc;
  dsc["numCoresUsed_"] = nc;
  dsc["numCoreletsUsed_"] = 1;
  std::vector<int> ids(nc);
  for (int i = 0; i < nc; ++i)
    ids[i] = i;
  dsc["coreIdsUsed_"] = ids;
  ojson n;
  n["name_"] = "n";
  for (size_t d = 0; d < s.dims.size(); ++d)
    n[s.dims[d] + "_"] = s.N[d];
  dsc["N_"] = n;
  dsc["coordinateMasking_"] = ojson::object();
  dsc["maskingConstId_"] = -1;
  ojson perCore;
  perCore["name_"] = "core";
  for (size_t d = 0; d < s.dims.size(); ++d)
    perCore[s.dims[d] + "_"] = s.N[d] / std::max<int64_t>(1, s.numWkSlicesPerDim[d]);
  dsc["dataStageParam_"] = {{"0", {{"ss_", perCore}, {"el_", perCore}}}};
  ojson pdi;
  for (const auto &[label, l] : s.primaryDsInfo)
    pdi[label] = {{"layoutDimOrder_", l.layoutDimOrder}, {"stickDimOrder_", l.stickDimOrder}, {"stickSize_", l.stickSize}};
  dsc["primaryDsInfo_"] = pdi;
  ojson tree = ojson::array();
  std::string prev;
  for (const auto &t : s.labeledDs) {
    ojson node;
    std::string nodeName = "allocate-" + t.dsName + (t.inLx ? "_lx" : "_hbm");
    node["nodeType_"] = "allocate";
    node["name_"] = nodeName;
    node["prev_"] = prev;
    node["ldsIdx_"] = t.ldsIdx;
    node["component_"] = t.inLx ? "lx" : "hbm";
    const auto &layout = s.primaryDsInfo.at(t.dsType);
    node["layoutDimOrder_"] = layout.layoutDimOrder;
    std::vector<int64_t> maxSizes(layout.layoutDimOrder.size(), -1), offs(layout.layoutDimOrder.size(), 0);
    if (t.isView())
      for (size_t k = 0; k < layout.layoutDimOrder.size(); ++k) {
        int d = s.dimIndex(layout.layoutDimOrder[k]);
        maxSizes[k] = t.maxDimSizes.at(d);
        offs[k] = t.offsets.at(d);
      }
    node["maxDimSizes_"] = maxSizes;
    if (t.isView())
      node["offsets_"] = offs;
    if (!t.steps.empty()) {
      std::vector<int64_t> steps(layout.layoutDimOrder.size(), 1);
      for (size_t k = 0; k < layout.layoutDimOrder.size(); ++k)
        steps[k] = t.stepOf(s.dimIndex(layout.layoutDimOrder[k]));
      node["steps_"] = steps;
    }
    node["indirectAllocType_"] = "no_indirection";
    ojson data = ojson::object();
    for (int c = 0; c < nc; ++c)
      data["[" + std::to_string(c) + ", 0, 0]"] = std::to_string(t.startAddress.at(c));
    ojson sa = fold({{"core", nc}, {"corelet", 1}, {"time", 1}},
                    {ojson{{"Map", ojson::object()}}, ojson{{"Const", ojson::object()}}, ojson{{"Const", ojson::object()}}});
    sa["data_"] = data;
    node["startAddressCoreCorelet_"] = sa;
    ojson coord = ojson::object();
    for (size_t d = 0; d < s.dims.size(); ++d) {
      const std::string &dim = s.dims[d];
      int64_t splits = s.numWkSlicesPerDim[d];
      int64_t per = s.N[d] / std::max<int64_t>(1, splits);
      bool isStick = !layout.stickDimOrder.empty() && layout.stickDimOrder[0] == dim;
      ojson c;
      c["spatial"] = 3;
      c["temporal"] = 0;
      c["elemArr"] = isStick ? 2 : 1;
      c["padding"] = "nopad";
      if (isStick) {
        int64_t eps = layout.stickSize.empty() ? 64 : layout.stickSize[0];
        c["folds"] = fold({{"core_fold", splits}, {"corelet_fold", 1}, {"row_fold", 1},
                           {"elem_arr_1", (per + eps - 1) / eps}, {"elem_arr_0", eps}},
                          {affine(per), affine(0), affine(0), affine(eps), affine(1)});
      } else {
        c["folds"] = fold({{"core_fold", splits}, {"corelet_fold", 1}, {"row_fold", 1}, {"elem_arr_0", per}},
                          {affine(per), affine(0), affine(0), affine(1)});
      }
      coord[dim] = c;
    }
    node["coordinates_"] = {{"coordInfo", coord}, {"coreIdToWkSlice_", ojson::object()}};
    tree.push_back(node);
    prev = nodeName;
  }
  dsc["scheduleTree_"] = tree;
  ojson lds = ojson::array();
  for (const auto &t : s.labeledDs) {
    ojson mem = t.inLx ? ojson{{"lx", {{"isPresent", 1}}}}
                       : ojson{{"hbm", {{"isPresent", 1}}}, {"lx", {{"isPresent", 1}}}};
    lds.push_back({{"ldsIdx_", t.ldsIdx}, {"dsName_", t.dsName}, {"dsType_", t.dsType}, {"scale_", t.scale},
                   {"wordLength", bytesPerElem(t.dataFormat)}, {"dataFormat_", dataFormatName(t.dataFormat)},
                   {"memOrg_", mem}});
  }
  dsc["labeledDs_"] = lds;
  ojson consts = ojson::object();
  int ci = 0;
  for (const auto &[cname, value] : s.constants)
    consts[std::to_string(ci++)] = {{"name_", cname}, {"dataFormat_", "IEEE_FP32"}, {"value_", value}};
  dsc["constantInfo_"] = consts;
  auto ldsRef = [&](int idx) { return s.tensor(idx).dsName + "-idx" + std::to_string(idx); };
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < s.inputs.size(); ++i)
    ins.push_back(s.inputs[i] >= 0 ? ldsRef(s.inputs[i]) : "Constant-" + s.inputConsts.at(i));
  for (int o : s.outputs)
    outs.push_back(ldsRef(o));
  dsc["computeOp_"] = ojson::array({{{"exUnit", s.exUnit}, {"opFuncName", s.opFuncName},
                                     {"attributes_", {{"dataFormat_", dataFormatName(s.labeledDs.at(0).dataFormat)}, {"fidelity_", "regular"}}},
                                     {"location", "Inner"}, {"inputLabeledDs", ins}, {"outputLabeledDs", outs}}});

  ojson top;
  top["sdscFoldProps_"] = ojson::array({{{"factor_", 1}, {"label_", "time"}}});
  top["sdscFolds_"] = fold({{"time", 1}}, {affine(1)});
  top["sdscFolds_"]["data_"] = {{"[0]", "0"}};
  top["coreFoldProp_"] = {{"factor_", nc}, {"label_", "core"}};
  top["coreletFoldProp_"] = {{"factor_", 1}, {"label_", "corelet"}};
  top["numCoresUsed_"] = nc;
  if (s.lxReservedBytes > 0)
    top["lxReservedBytes_"] = s.lxReservedBytes;
  ojson c2d = ojson::object(), slices = ojson::object(), c2s = ojson::object(), sched = ojson::object();
  for (int c = 0; c < nc; ++c) {
    c2d[std::to_string(c)] = 0;
    ojson sl = ojson::object();
    for (size_t d = 0; d < s.dims.size(); ++d)
      sl[s.dims[d]] = s.coreIdToWkSlice.at(c).at(d);
    c2s[std::to_string(c)] = sl;
    sched[std::to_string(c)] = ojson::array({ojson::array({-1, 0, 0, 0})});
  }
  for (size_t d = 0; d < s.dims.size(); ++d)
    slices[s.dims[d]] = s.numWkSlicesPerDim[d];
  top["coreIdToDsc_"] = c2d;
  top["numWkSlicesPerDim_"] = slices;
  top["coreIdToWkSlice_"] = c2s;
  top["coreIdToDscSchedule"] = sched;
  top["dscs_"] = ojson::array({{{s.opFuncName, dsc}}});
  ojson root;
  root[s.name] = top;
  return root;
}

// ---------------------------------------------------------------------------------------------
// Parsing with JSON-path errors
// ---------------------------------------------------------------------------------------------
namespace {

struct Reader {
  const std::string &file;
  [[noreturn]] void fail(const std::string &path, const std::string &what) const {
    throw Error(file + ": " + path + ": " + what);
  }
  const ojson &field(const ojson &obj, const std::string &path, const std::string &key) const {
    if (!obj.is_object())
      fail(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end())
      fail(path, "missing field '" + key + "'");
    return *it;
  }
  int64_t integer(const ojson &v, const std::string &path) const {
    if (v.is_number_integer())
      return v.get<int64_t>();
    if (v.is_string()) {
      const auto &s = v.get_ref<const std::string &>();
      try {
        size_t pos = 0;
        long long x = std::stoll(s, &pos);
        if (pos == s.size())
          return x;
      } catch (...) {
      }
    }
    fail(path, "expected an integer, got " + v.dump());
  }
  std::string string(const ojson &v, const std::string &path) const {
    if (!v.is_string())
      fail(path, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  std::vector<std::string> strings(const ojson &v, const std::string &path) const {
    if (!v.is_array())
      fail(path, "expected an array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(string(v[i], path + "/" + std::to_string(i)));
    return out;
  }
  std::vector<int64_t> integers(const ojson &v, const std::string &path) const {
    if (!v.is_array())
      fail(path, "expected an array of integers");
    std::vector<int64_t> out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(integer(v[i], path + "/" + std::to_string(i)));
    return out;
  }
};

int parseLdsRef(const Reader &r, const std::string &ref, const std::string &path) {
  auto pos = ref.rfind("-idx");
  if (pos == std::string::npos)
    r.fail(path, "expected '<dsName>-idx<N>', got '" + ref + "'");
  try {
    return std::stoi(ref.substr(pos + 4));
  } catch (...) {
    r.fail(path, "expected '<dsName>-idx<N>', got '" + ref + "'");
  }
}

/// numCoresUsed_ and the optional lxReservedBytes_ of the kernel entry `top` (at `tp`).
void parseKernelCounts(const Reader &r, const ojson &top, const std::string &tp, SuperDsc &s) {
  s.numCoresUsed = static_cast<int>(r.integer(r.field(top, tp, "numCoresUsed_"), tp + "/numCoresUsed_"));
  if (s.numCoresUsed < 1 || s.numCoresUsed > 32)
    r.fail(tp + "/numCoresUsed_", "expected 1..32, got " + std::to_string(s.numCoresUsed));
  if (auto it = top.find("lxReservedBytes_"); it != top.end()) {
    s.lxReservedBytes = r.integer(*it, tp + "/lxReservedBytes_");
    if (s.lxReservedBytes < 0 || s.lxReservedBytes % 128 != 0 || s.lxReservedBytes > 1677721)
      r.fail(tp + "/lxReservedBytes_", "expected a multiple of 128 in [0, 1677721], got " +
                                          std::to_string(s.lxReservedBytes));
  }
}

/// The iteration space: N_ of the DSC `dsc` (at `dp`) gives dims and N.
void parseDims(const Reader &r, const ojson &dsc, const std::string &dp, SuperDsc &s) {
  const ojson &n = r.field(dsc, dp, "N_");
  if (!n.is_object())
    r.fail(dp + "/N_", "expected an object");
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (it.key() == "name_")
      continue;
    std::string label = it.key();
    if (label.empty() || label.back() != '_')
      r.fail(dp + "/N_/" + label, "expected a dimension key ending in '_'");
    label.pop_back();
    int64_t size = r.integer(it.value(), dp + "/N_/" + it.key());
    if (size < 1)
      r.fail(dp + "/N_/" + it.key(), "expected a positive size, got " + std::to_string(size));
    s.dims.push_back(label);
    s.N.push_back(size);
  }
  if (s.dims.empty())
    r.fail(dp + "/N_", "expected at least one dimension");
}

/// The work division of the kernel entry `top` (at `tp`): numWkSlicesPerDim_ and
/// coreIdToWkSlice_.
void parseWorkSlices(const Reader &r, const ojson &top, const std::string &tp, SuperDsc &s) {
  const ojson &slices = r.field(top, tp, "numWkSlicesPerDim_");
  s.numWkSlicesPerDim.assign(s.dims.size(), 1);
  int64_t product = 1;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    std::string sp = tp + "/numWkSlicesPerDim_/" + s.dims[d];
    auto it = slices.find(s.dims[d]);
    if (it == slices.end())
      r.fail(sp, "missing split count for dimension '" + s.dims[d] + "'");
    s.numWkSlicesPerDim[d] = r.integer(*it, sp);
    if (s.numWkSlicesPerDim[d] < 1)
      r.fail(sp, "expected a positive split count");
    product *= s.numWkSlicesPerDim[d];
  }
  for (auto it = slices.begin(); it != slices.end(); ++it)
    if (s.dimIndex(it.key()) < 0)
      r.fail(tp + "/numWkSlicesPerDim_/" + it.key(), "dimension is not in N_");
  if (product != s.numCoresUsed)
    r.fail(tp + "/numWkSlicesPerDim_", "product of splits " + std::to_string(product) +
                                           " does not equal numCoresUsed_ " + std::to_string(s.numCoresUsed));
  const ojson &c2s = r.field(top, tp, "coreIdToWkSlice_");
  for (int c = 0; c < s.numCoresUsed; ++c) {
    std::string cp = tp + "/coreIdToWkSlice_/" + std::to_string(c);
    const ojson &sl = r.field(c2s, tp + "/coreIdToWkSlice_", std::to_string(c));
    std::vector<int64_t> idx(s.dims.size());
    for (size_t d = 0; d < s.dims.size(); ++d) {
      idx[d] = r.integer(r.field(sl, cp, s.dims[d]), cp + "/" + s.dims[d]);
      if (idx[d] < 0 || idx[d] >= s.numWkSlicesPerDim[d])
        r.fail(cp + "/" + s.dims[d], "slice " + std::to_string(idx[d]) + " outside 0.." +
                                         std::to_string(s.numWkSlicesPerDim[d] - 1));
    }
    s.coreIdToWkSlice.push_back(idx);
  }
}

/// The layout classes: primaryDsInfo_ of the DSC `dsc` (at `dp`) of op `op`.
void parsePrimaryDsInfo(const Reader &r, const ojson &dsc, const std::string &dp, const std::string &op,
                        SuperDsc &s) {
  const ojson &pdi = r.field(dsc, dp, "primaryDsInfo_");
  if (!pdi.is_object() || pdi.empty())
    r.fail(dp + "/primaryDsInfo_", "expected a non-empty object");
  for (auto it = pdi.begin(); it != pdi.end(); ++it) {
    std::string lp = dp + "/primaryDsInfo_/" + it.key();
    SdscLayout l;
    l.layoutDimOrder = r.strings(r.field(it.value(), lp, "layoutDimOrder_"), lp + "/layoutDimOrder_");
    l.stickDimOrder = r.strings(r.field(it.value(), lp, "stickDimOrder_"), lp + "/stickDimOrder_");
    l.stickSize = r.integers(r.field(it.value(), lp, "stickSize_"), lp + "/stickSize_");
    for (const auto &d : l.layoutDimOrder)
      if (s.dimIndex(d) < 0)
        r.fail(lp + "/layoutDimOrder_", "dimension '" + d + "' is not in N_");
    // A stick spans one dim, except in a lane-moving reshape: there a tensor's row (its
    // stick) may be two dims of the common refinement N_ (backend_reshape.cpp).
    if (l.stickSize.size() != 1 || l.stickDimOrder.empty() || (l.stickDimOrder.size() != 1 && op != "reshape"))
      r.fail(lp, "expected exactly one stick dimension and stick size");
    for (const auto &d : l.stickDimOrder)
      if (s.dimIndex(d) < 0)
        r.fail(lp + "/stickDimOrder_", "dimension '" + d + "' is not in N_");
    s.primaryDsInfo[it.key()] = l;
  }
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
    SdscTensor t;
    t.ldsIdx = static_cast<int>(r.integer(r.field(lds[i], lp, "ldsIdx_"), lp + "/ldsIdx_"));
    t.dsName = r.string(r.field(lds[i], lp, "dsName_"), lp + "/dsName_");
    t.dsType = r.string(r.field(lds[i], lp, "dsType_"), lp + "/dsType_");
    if (!s.primaryDsInfo.count(t.dsType))
      r.fail(lp + "/dsType_", "layout class '" + t.dsType + "' is not in primaryDsInfo_");
    for (int64_t v : r.integers(r.field(lds[i], lp, "scale_"), lp + "/scale_")) {
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
      r.fail(lp + "/dataFormat_", "unknown data format '" + fmt + "'");
    t.dataFormat = *f;
    const ojson &mem = r.field(lds[i], lp, "memOrg_");
    t.inLx = mem.is_object() && mem.contains("lx") && !mem.contains("hbm");
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
  std::vector<int64_t> sizes = r.integers(*ms, np + "/maxDimSizes_");
  std::vector<int64_t> offs(sizes.size(), 0), steps(sizes.size(), 1);
  if (auto os = node.find("offsets_"); os != node.end())
    offs = r.integers(*os, np + "/offsets_");
  bool stepped = false;
  if (auto ss = node.find("steps_"); ss != node.end()) {
    steps = r.integers(*ss, np + "/steps_");
    if (steps.size() != sizes.size())
      r.fail(np + "/steps_", "expected " + std::to_string(sizes.size()) + " entries (one per layoutDimOrder_ dim)");
    for (size_t k = 0; k < steps.size(); ++k) {
      if (steps[k] < 1)
        r.fail(np + "/steps_", "step " + std::to_string(steps[k]) + " is not >= 1");
      stepped |= steps[k] != 1;
    }
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
    // The view's last element: offset + (N - 1) * step (overflow-safe: N and step are
    // bounded by the int64 JSON integers, the product may not be).
    __int128 last = static_cast<__int128>(offs[k]) + static_cast<__int128>(s.N[d] - 1) * steps[k];
    if (offs[k] < 0 || last + 1 > size)
      r.fail(np + "/offsets_", "the view from " + std::to_string(offs[k]) + " (" + std::to_string(s.N[d]) +
                                   " elements, step " + std::to_string(steps[k]) + ") of dim " + order[k] +
                                   " does not fit its allocation of " + std::to_string(size));
    t.maxDimSizes[d] = sizes[k];
    t.offsets[d] = offs[k];
    if (stepped)
      t.steps[d] = steps[k];
  }
}

/// Start addresses (and views) from the allocate nodes of scheduleTree_ in the DSC `dsc` (at
/// `dp`); every tensor needs one.
void parseScheduleTree(const Reader &r, const ojson &dsc, const std::string &dp, SuperDsc &s) {
  const ojson &tree = r.field(dsc, dp, "scheduleTree_");
  if (!tree.is_array())
    r.fail(dp + "/scheduleTree_", "expected an array");
  for (size_t i = 0; i < tree.size(); ++i) {
    std::string np = dp + "/scheduleTree_/" + std::to_string(i);
    if (r.string(r.field(tree[i], np, "nodeType_"), np + "/nodeType_") != "allocate")
      continue;
    int idx = static_cast<int>(r.integer(r.field(tree[i], np, "ldsIdx_"), np + "/ldsIdx_"));
    SdscTensor *t = nullptr;
    for (auto &x : s.labeledDs)
      if (x.ldsIdx == idx)
        t = &x;
    if (!t)
      r.fail(np + "/ldsIdx_", "no labeledDs_ entry with ldsIdx_ " + std::to_string(idx));
    parseAllocateView(r, tree[i], np, s, *t);
    const ojson &sa = r.field(tree[i], np, "startAddressCoreCorelet_");
    const ojson &data = r.field(sa, np + "/startAddressCoreCorelet_", "data_");
    t->startAddress.assign(s.numCoresUsed, 0);
    for (int c = 0; c < s.numCoresUsed; ++c) {
      std::string key = "[" + std::to_string(c) + ", 0, 0]";
      t->startAddress[c] = static_cast<uint64_t>(
          r.integer(r.field(data, np + "/startAddressCoreCorelet_/data_", key), np + "/startAddressCoreCorelet_/data_/" + key));
    }
  }
  for (const auto &t : s.labeledDs)
    if (t.startAddress.empty())
      r.fail(dp + "/scheduleTree_", "no allocate node for " + t.dsName + " (ldsIdx_ " + std::to_string(t.ldsIdx) + ")");
}

/// The optional constantInfo_ of the DSC `dsc` (at `dp`).
void parseConstants(const Reader &r, const ojson &dsc, const std::string &dp, SuperDsc &s) {
  if (auto it = dsc.find("constantInfo_"); it != dsc.end() && it->is_object()) {
    for (auto c = it->begin(); c != it->end(); ++c) {
      std::string kp = dp + "/constantInfo_/" + c.key();
      std::string cname = r.string(r.field(c.value(), kp, "name_"), kp + "/name_");
      const ojson &v = r.field(c.value(), kp, "value_");
      if (!v.is_number())
        r.fail(kp + "/value_", "expected a number");
      s.constants[cname] = v.get<double>();
    }
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
        r.fail(p, "constant '" + cname + "' is not in constantInfo_");
      out.push_back(-1);
      s.inputConsts.resize(out.size());
      s.inputConsts.back() = cname;
      continue;
    }
    int idx = parseLdsRef(r, list[i], p);
    bool found = false;
    for (const auto &t : s.labeledDs)
      found |= t.ldsIdx == idx;
    if (!found)
      r.fail(p, "no labeledDs_ entry with ldsIdx_ " + std::to_string(idx));
    out.push_back(idx);
  }
}

/// The single computeOp_ of the DSC `dsc` (at `dp`) keyed `op`.
void parseComputeOp(const Reader &r, const ojson &dsc, const std::string &dp, const std::string &op, SuperDsc &s) {
  const ojson &cops = r.field(dsc, dp, "computeOp_");
  if (!cops.is_array() || cops.size() != 1)
    r.fail(dp + "/computeOp_", "expected exactly one compute op");
  std::string cp = dp + "/computeOp_/0";
  s.exUnit = r.string(r.field(cops[0], cp, "exUnit"), cp + "/exUnit");
  if (s.exUnit != "sfp" && s.exUnit != "pt")
    r.fail(cp + "/exUnit", "expected 'sfp' or 'pt', got '" + s.exUnit + "'");
  s.opFuncName = r.string(r.field(cops[0], cp, "opFuncName"), cp + "/opFuncName");
  if (s.opFuncName != op)
    r.fail(cp + "/opFuncName", "'" + s.opFuncName + "' does not match the DSC key '" + op + "'");
  parseOperandRefs(r, cops[0], cp, "inputLabeledDs", s, s.inputs);
  s.inputConsts.resize(s.inputs.size());
  parseOperandRefs(r, cops[0], cp, "outputLabeledDs", s, s.outputs);
  if (s.outputs.empty())
    r.fail(cp + "/outputLabeledDs", "expected at least one output");
}

} // namespace

SuperDsc parseSuperDsc(const ojson &root, const std::string &file) {
  Reader r{file};
  if (!root.is_object() || root.size() != 1)
    r.fail("/", "expected an object with exactly one kernel entry");
  SuperDsc s;
  s.name = root.begin().key();
  const ojson &top = root.begin().value();
  std::string tp = "/" + s.name;
  parseKernelCounts(r, top, tp, s);
  const ojson &dscs = r.field(top, tp, "dscs_");
  if (!dscs.is_array() || dscs.size() != 1)
    r.fail(tp + "/dscs_", "expected an array with exactly one DSC");
  if (!dscs[0].is_object() || dscs[0].size() != 1)
    r.fail(tp + "/dscs_/0", "expected an object {<opFuncName>: {...}}");
  std::string op = dscs[0].begin().key();
  const ojson &dsc = dscs[0].begin().value();
  std::string dp = tp + "/dscs_/0/" + op;

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
  ojson j;
  try {
    j = ojson::parse(text);
  } catch (const nlohmann::json::parse_error &e) {
    throw Error(file + ": malformed JSON: " + e.what());
  }
  return parseSuperDsc(j, file);
}

std::string writeBundleMlir(const std::vector<std::string> &files) {
  std::string s = "module {\n  func.func @sdsc_bundle() {\n";
  for (const auto &f : files)
    s += "    sdscbundle.sdsc_execute () {sdsc_filename=\"" + f + "\"}\n";
  s += "    return\n  }\n}\n";
  return s;
}

std::vector<std::string> parseBundleMlir(const std::string &text, const std::string &file) {
  std::vector<std::string> out;
  static const std::regex re("sdscbundle\\.sdsc_execute\\s*\\(\\s*\\)\\s*\\{\\s*sdsc_filename\\s*=\\s*\"([^\"]+)\"\\s*\\}");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  if (out.empty())
    throw Error(file + ": no sdscbundle.sdsc_execute operations found");
  return out;
}

} // namespace spyre::isa
