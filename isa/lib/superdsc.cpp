#include "spyre/isa/superdsc.h"
#include "spyre/isa/error.h"
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <optional>

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
  // ss_ / el_: a core's slice of each dim (torch-spyre writes N / splits in both). An uneven
  // split (docs/superdsc.md §2, our extension) has ss_ = every slice but the last, in whole
  // sticks on a dim some layout sticks on, and el_ = the last, shorter one.
  ojson perCore, lastCore;
  perCore["name_"] = lastCore["name_"] = "core";
  for (size_t d = 0; d < s.dims.size(); ++d) {
    const int64_t splits = std::max<int64_t>(1, s.numWkSlicesPerDim[d]);
    int64_t eps = 1;
    for (const auto &[label, l] : s.primaryDsInfo)
      if (!l.stickDimOrder.empty() && l.stickDimOrder[0] == s.dims[d] && !l.stickSize.empty())
        eps = std::max<int64_t>(eps, l.stickSize[0]);
    const int64_t units = (s.N[d] + eps - 1) / eps, q = (units + splits - 1) / splits * eps;
    const bool uneven = units % splits != 0;
    perCore[s.dims[d] + "_"] = uneven ? q : s.N[d] / splits;
    lastCore[s.dims[d] + "_"] = uneven ? s.N[d] - (splits - 1) * q : s.N[d] / splits;
  }
  dsc["dataStageParam_"] = {{"0", {{"ss_", perCore}, {"el_", lastCore}}}};
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
  for (const auto &[cname, value] : s.constants) {
    // JSON has no infinities or NaN (nlohmann would write null): those values are the strings
    // "inf", "-inf" and "nan" (our extension, docs/superdsc.md §2).
    ojson v = value;
    if (std::isnan(value))
      v = "nan";
    else if (std::isinf(value))
      v = value > 0 ? "inf" : "-inf";
    ojson c = {{"name_", cname}, {"dataFormat_", "IEEE_FP32"}, {"value_", v}};
    if (auto a = s.constantArgs.find(cname); a != s.constantArgs.end())
      c["argIdx_"] = a->second;
    consts[std::to_string(ci++)] = std::move(c);
  }
  dsc["constantInfo_"] = consts;
  auto ldsRef = [&](int idx) { return s.tensor(idx).dsName + "-idx" + std::to_string(idx); };
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < s.inputs.size(); ++i)
    ins.push_back(s.inputs[i] >= 0 ? ldsRef(s.inputs[i]) : "Constant-" + s.inputConsts.at(i));
  for (int o : s.outputs)
    outs.push_back(ldsRef(o));
  auto computeOp = [&](const std::string &op, const std::vector<std::string> &in, const std::vector<std::string> &out) {
    // A fused matmul's entries (§6.11): the batchmatmul on the pt, its epilogue on the sfp.
    const std::string unit = s.isFused() ? (op == "batchmatmul" ? "pt" : "sfp") : s.exUnit;
    return ojson{{"exUnit", unit}, {"opFuncName", op},
                 {"attributes_", {{"dataFormat_", dataFormatName(s.labeledDs.at(0).dataFormat)}, {"fidelity_", "regular"}}},
                 {"location", "Inner"}, {"inputLabeledDs", in}, {"outputLabeledDs", out}};
  };
  if (s.isFused()) {
    // Our extension (docs/superdsc.md §6.9): one computeOp_ entry per fused op.
    ojson cops = ojson::array();
    for (const SdscComputeOp &op : s.fusedOps) {
      std::vector<std::string> fin, fout;
      for (size_t i = 0; i < op.inputs.size(); ++i)
        fin.push_back(op.inputs[i] >= 0    ? ldsRef(op.inputs[i])
                      : op.inputs[i] == -1 ? "Constant-" + op.inputConsts.at(i)
                                           : "Result-op" + std::to_string(fusedResultIndex(op.inputs[i])));
      for (int o : op.outputs)
        fout.push_back(ldsRef(o));
      cops.push_back(computeOp(op.opFuncName, fin, fout));
    }
    dsc["computeOp_"] = cops;
  } else {
    dsc["computeOp_"] = ojson::array({computeOp(s.opFuncName, ins, outs)});
  }

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

std::string writeBundleMlir(const std::vector<std::string> &files) {
  std::string s = "module {\n  func.func @sdsc_bundle() {\n";
  for (const auto &f : files)
    s += "    sdscbundle.sdsc_execute () {sdsc_filename=\"" + f + "\"}\n";
  s += "    return\n  }\n}\n";
  return s;
}

namespace {

/// A scanner for `sdscbundle.sdsc_execute () {sdsc_filename="<name>"}` (whitespace allowed between
/// tokens, as `\s*`). Linear in the text and without recursion: std::regex recursed per
/// character of a long name (a 1 MiB name overflowed the stack) and took seconds on large files.
class BundleScanner {
public:
  BundleScanner(const std::string &text, size_t pos) : t_(text), p_(pos) {}
  /// The name when an operation starts at pos, else nullopt (then scanning resumes after pos).
  std::optional<std::string> operation(const std::string &file) {
    p_ += std::strlen(kOp);
    if (!tok('(') || !tok(')') || !tok('{') || !word("sdsc_filename") || !tok('=') || !tok('"'))
      return std::nullopt;
    size_t end = t_.find('"', p_);
    if (end == std::string::npos || end == p_)
      return std::nullopt;
    if (end - p_ > kMaxSdscFilename)
      throw Error(file + ":" + std::to_string(lineOf(p_)) + ": sdsc_filename longer than " +
                  std::to_string(kMaxSdscFilename) + " characters");
    std::string name = t_.substr(p_, end - p_);
    p_ = end + 1;
    if (!tok('}'))
      return std::nullopt;
    return name;
  }
  static constexpr const char *kOp = "sdscbundle.sdsc_execute";
  static constexpr size_t kMaxSdscFilename = 4096;

private:
  void space() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_])))
      ++p_;
  }
  bool tok(char c) {
    space();
    if (p_ >= t_.size() || t_[p_] != c)
      return false;
    ++p_;
    return true;
  }
  bool word(const char *w) {
    space();
    size_t n = std::strlen(w);
    if (t_.compare(p_, n, w) != 0)
      return false;
    p_ += n;
    return true;
  }
  size_t lineOf(size_t pos) const { return 1 + static_cast<size_t>(std::count(t_.begin(), t_.begin() + pos, '\n')); }

  const std::string &t_;
  size_t p_;
};

} // namespace

std::vector<std::string> parseBundleMlir(const std::string &text, const std::string &file) {
  constexpr size_t kMaxBundleBytes = size_t{16} << 20; // real ones are under 1 KiB
  if (text.size() > kMaxBundleBytes)
    throw Error(file + ": " + std::to_string(text.size()) + " bytes, more than the bundle file limit of " +
                std::to_string(kMaxBundleBytes) + " bytes (16 MiB)");
  std::vector<std::string> out;
  for (size_t pos = text.find(BundleScanner::kOp); pos != std::string::npos;
       pos = text.find(BundleScanner::kOp, pos + 1))
    if (auto name = BundleScanner(text, pos).operation(file))
      out.push_back(std::move(*name));
  if (out.empty())
    throw Error(file + ": no sdscbundle.sdsc_execute operations found");
  return out;
}

} // namespace spyre::isa
