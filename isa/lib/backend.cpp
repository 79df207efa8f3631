#include "spyre/isa/backend.h"
#include <algorithm>
#include <map>
#include <numeric>

namespace spyre::isa {
namespace {

struct DeviceDim {
  int iterDim;    ///< index into SuperDsc::dims
  int64_t size;   ///< device extent (tiles for the stick dim)
  int64_t stride; ///< bytes
};

/// Non-stick device dims of a tensor, outer -> inner (the elem dim is the 128-byte stick).
std::vector<DeviceDim> deviceDims(const SuperDsc &s, const SdscTensor &t) {
  const SdscLayout &l = s.primaryDsInfo.at(t.dsType);
  const std::string &stick = l.stickDimOrder[0];
  int64_t eps = l.stickSize[0];
  std::vector<DeviceDim> dims;
  for (auto it = l.layoutDimOrder.rbegin(); it != l.layoutDimOrder.rend(); ++it) {
    int d = s.dimIndex(*it);
    int64_t size = *it == stick ? (s.N[d] + eps - 1) / eps : s.N[d];
    dims.push_back({d, size, 0});
  }
  int64_t stride = kStickBytes;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    it->stride = stride;
    stride *= it->size;
  }
  return dims;
}

std::string where(const SuperDsc &s) { return "SuperDSC " + s.name + " (" + s.opFuncName + ")"; }

struct PointwiseOp {
  Opcode op;
  int arity;
};

const std::map<std::string, PointwiseOp> &pointwiseOps() {
  static const std::map<std::string, PointwiseOp> ops = {
      {"add", {Opcode::Add, 2}},     {"sub", {Opcode::Sub, 2}},   {"mul", {Opcode::Mul, 2}},
      {"relufwd", {Opcode::Relu, 1}}, {"neg", {Opcode::Neg, 1}},  {"abs", {Opcode::Abs, 1}},
      {"identity", {Opcode::Ld, 1}},
  };
  return ops;
}

Instr mk(Opcode op, Format f = Format::None) {
  Instr i;
  i.op = op;
  i.fmt = f;
  return i;
}

} // namespace

int64_t sdscTensorBytes(const SuperDsc &s, const SdscTensor &t) {
  auto dims = deviceDims(s, t);
  return dims.empty() ? kStickBytes : dims.front().size * dims.front().stride;
}

Kernel compileSuperDsc(const SuperDsc &s, const BackendOptions &opts) {
  auto opIt = pointwiseOps().find(s.opFuncName);
  if (opIt == pointwiseOps().end())
    throw Unsupported("SuperDSC op '" + s.opFuncName + "' in " + s.name + " (backend compiles pointwise " +
                      "add sub mul relufwd neg abs identity so far)");
  const PointwiseOp pw = opIt->second;
  if (s.exUnit != "sfp")
    throw Error(where(s) + ": computeOp_ exUnit must be 'sfp' for a pointwise op, got '" + s.exUnit + "'");
  if (static_cast<int>(s.inputs.size()) != pw.arity || s.outputs.size() != 1)
    throw Error(where(s) + ": expected " + std::to_string(pw.arity) + " input(s) and 1 output, got " +
                std::to_string(s.inputs.size()) + " and " + std::to_string(s.outputs.size()));

  // Operands in (inputs..., output) order; all must share one layout class and format.
  std::vector<const SdscTensor *> ops;
  for (int i : s.inputs)
    ops.push_back(&s.tensor(i));
  ops.push_back(&s.tensor(s.outputs[0]));
  const SdscTensor &out = *ops.back();
  Format fmt;
  if (out.dataFormat == DataFormat::SEN169_FP16)
    fmt = Format::DL16;
  else if (out.dataFormat == DataFormat::IEEE_FP32)
    fmt = Format::F32;
  else
    throw Unsupported(std::string(dataFormatName(out.dataFormat)) + " pointwise ops in " + s.name);
  for (const SdscTensor *t : ops) {
    if (t->dataFormat != out.dataFormat)
      throw Unsupported("mixed data formats in pointwise op " + s.name + " (" + t->dsName + " is " +
                        std::string(dataFormatName(t->dataFormat)) + ")");
    if (t->dsType != out.dsType)
      throw Unsupported("pointwise operands with different layouts in " + s.name + " (" + t->dsName +
                        " is " + t->dsType + ", output is " + out.dsType + "); restickify first");
    for (int sc : t->scale)
      if (sc != 1)
        throw Unsupported("broadcast/reduced dims (scale_ " + std::to_string(sc) + ") in pointwise op " + s.name);
    if (t->inLx)
      throw Unsupported("LX-resident tensors (memOrg_ lx) in " + s.name);
  }
  const SdscLayout &layout = s.primaryDsInfo.at(out.dsType);
  if (layout.stickSize[0] != elemsPerStick(out.dataFormat))
    throw Error(where(s) + ": stickSize_ " + std::to_string(layout.stickSize[0]) + " does not match " +
                std::string(dataFormatName(out.dataFormat)) + " (" + std::to_string(elemsPerStick(out.dataFormat)) +
                " elements per stick)");
  if (layout.layoutDimOrder.size() != s.dims.size())
    throw Unsupported("layouts that do not cover every iteration dim in " + s.name);

  auto dims = deviceDims(s, out);
  const std::string &stick = layout.stickDimOrder[0];
  int64_t eps = layout.stickSize[0];
  // Per-core box: for each device dim, the slice length (splits are even; stick dims split on
  // stick boundaries).
  std::vector<int64_t> len(dims.size());
  for (size_t j = 0; j < dims.size(); ++j) {
    int d = dims[j].iterDim;
    int64_t splits = s.numWkSlicesPerDim[d];
    int64_t units = dims[j].size;
    if (units % splits != 0)
      throw Error(where(s) + ": numWkSlicesPerDim_." + s.dims[d] + " = " + std::to_string(splits) +
                  " does not divide " + (s.dims[d] == stick ? "the " + std::to_string(units) + " sticks of " : "") +
                  "N_." + s.dims[d] + " = " + std::to_string(s.N[d]) + " (uneven splits are not allowed)");
    len[j] = units / splits;
  }
  // Per-core DDR offset of the box, checked against the descriptor's start addresses.
  std::vector<int64_t> coreOffset(s.numCoresUsed);
  std::map<int, int> argOf; // ldsIdx -> segment
  for (int c = 0; c < s.numCoresUsed; ++c) {
    int64_t off = 0;
    for (size_t j = 0; j < dims.size(); ++j)
      off += s.coreIdToWkSlice[c][dims[j].iterDim] * len[j] * dims[j].stride;
    coreOffset[c] = off;
  }
  for (const SdscTensor *t : ops) {
    uint64_t seg = t->startAddress[0] / kSegmentBytes;
    if (seg >= static_cast<uint64_t>(kMaxSegments))
      throw Error(where(s) + ": start address of " + t->dsName + " lies outside the " + std::to_string(kMaxSegments) +
                  " kernel argument segments");
    for (int c = 0; c < s.numCoresUsed; ++c) {
      uint64_t expect = seg * kSegmentBytes + coreOffset[c];
      if (t->startAddress[c] != expect)
        throw Error(where(s) + ": scheduleTree_ start address of " + t->dsName + " on core " + std::to_string(c) +
                    " is " + std::to_string(t->startAddress[c]) + ", but its work slice starts at " +
                    std::to_string(expect));
    }
    for (const auto &[idx, sg] : argOf)
      if (sg == static_cast<int>(seg) && idx != t->ldsIdx)
        throw Unsupported("two tensors in one segment in " + s.name);
    argOf[t->ldsIdx] = static_cast<int>(seg);
  }

  // Collapse the box into a DMA shape (n2, n1, n0): merge an inner dim into its outer neighbour
  // when the inner one is taken whole (contiguous).
  struct Run { int64_t n, stride; };
  std::vector<Run> runs;
  for (size_t j = 0; j < dims.size(); ++j)
    runs.push_back({len[j], dims[j].stride});
  for (size_t j = runs.size(); j-- > 1;) {
    if (runs[j].n * runs[j].stride == runs[j - 1].stride && len[j] == dims[j].size) {
      runs[j - 1].stride = runs[j].stride;
      runs[j - 1].n *= runs[j].n;
      runs.erase(runs.begin() + j);
    }
  }
  runs.erase(std::remove_if(runs.begin(), runs.end(), [](const Run &r) { return r.n == 1; }), runs.end());
  if (runs.empty() || runs.back().stride != kStickBytes)
    runs.push_back(Run{1, kStickBytes});
  // Runs beyond the three a DMA can express become program loops around the chunk body.
  std::vector<Run> outerRuns;
  while (runs.size() > 3) {
    outerRuns.push_back(runs.front());
    runs.erase(runs.begin());
  }
  while (runs.size() < 3)
    runs.insert(runs.begin(), Run{1, 0});
  // Tile over the outermost non-trivial DMA dim so that all operands fit in LX.
  int64_t totalSticks = runs[0].n * runs[1].n * runs[2].n;
  int64_t nbuf = static_cast<int64_t>(ops.size());
  int64_t maxSticks = opts.lxBytes / (kStickBytes * nbuf);
  int tileDim = runs[0].n > 1 ? 0 : runs[1].n > 1 ? 1 : 2;
  int64_t inner = 1;
  for (int j = tileDim + 1; j < 3; ++j)
    inner *= runs[j].n;
  int64_t chunk = runs[tileDim].n;
  while (chunk * inner > maxSticks) {
    int64_t c = chunk - 1;
    while (c > 1 && runs[tileDim].n % c != 0)
      --c;
    chunk = c;
    if (chunk == 1)
      break;
  }
  if (chunk * inner > maxSticks)
    throw Unsupported("per-core tile of " + std::to_string(inner) + " sticks x " + std::to_string(nbuf) +
                      " operands does not fit in LX in " + s.name);
  int64_t nChunks = runs[tileDim].n / chunk;
  DmaShape shape;
  for (int j = 0; j < 3; ++j)
    shape.n[j] = runs[j].n;
  shape.n[tileDim] = chunk;
  shape.ddrStride = {runs[0].stride, runs[1].stride};
  shape.lxStride = DmaShape::dense(shape.n);
  if (tileDim == 2) // contiguous chunks along the stick run
    shape.ddrStride = DmaShape::dense(shape.n);
  int64_t chunkSticks = shape.sticks();
  int64_t chunkDdrStep = tileDim == 2 ? chunk * kStickBytes : chunk * runs[tileDim].stride;
  int64_t bufBytes = chunkSticks * kStickBytes;
  (void)totalSticks;

  Kernel k;
  k.name = s.name;
  for (char &ch : k.name)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_')
      ch = '_';
  k.numCores = s.numCoresUsed;
  int nseg = 0;
  for (const auto &[idx, sg] : argOf)
    nseg = std::max(nseg, sg + 1);
  k.args.assign(nseg, "");
  for (int sg = 0; sg < nseg; ++sg)
    k.args[sg] = "seg" + std::to_string(sg);
  for (const SdscTensor *t : ops)
    k.args[argOf[t->ldsIdx]] = t->dsName;
  k.comment = "op=" + s.opFuncName + " fmt=" + std::string(formatName(fmt)) + " cores=" +
              std::to_string(s.numCoresUsed) + " tile=" + std::to_string(chunkSticks) + " sticks x " +
              std::to_string(nChunks);

  CoreProgram p;
  p.firstCore = 0;
  p.lastCore = k.numCores - 1;
  Instr tbl = mk(Opcode::Tbl);
  tbl.r = {1, -1};
  tbl.table = coreOffset;
  p.body.push_back(tbl);
  std::vector<Instr> chunkBody;
  // DMA in every input, compute stick by stick, DMA out.
  std::vector<int> toks;
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    Instr d = mk(Opcode::DmaIn);
    d.lx = {-1, static_cast<int64_t>(i) * bufBytes};
    d.ddr = {argOf[ops[i]->ldsIdx], 1, 0};
    d.dma = shape;
    d.outToken = static_cast<int>(i);
    toks.push_back(static_cast<int>(i));
    chunkBody.push_back(d);
  }
  Instr w = mk(Opcode::Wait);
  w.tokens = toks;
  chunkBody.push_back(w);
  Instr li = mk(Opcode::Li);
  li.r = {2, -1};
  li.imm = 0;
  chunkBody.push_back(li);
  Instr loop = mk(Opcode::Loop);
  loop.imm = chunkSticks;
  int64_t outOff = static_cast<int64_t>(ops.size() - 1) * bufBytes;
  for (int i = 0; i < pw.arity; ++i) {
    Instr ld = mk(Opcode::Ld, fmt);
    ld.v = {i, -1, -1};
    ld.lx = {2, static_cast<int64_t>(i) * bufBytes};
    loop.body.push_back(ld);
  }
  int result = 0;
  if (pw.op != Opcode::Ld) {
    Instr op = mk(pw.op, fmt);
    op.v = {2, 0, pw.arity == 2 ? 1 : -1};
    loop.body.push_back(op);
    result = 2;
  }
  Instr st = mk(Opcode::St, fmt);
  st.v = {result, -1, -1};
  st.lx = {2, outOff};
  loop.body.push_back(st);
  Instr inc = mk(Opcode::Addi);
  inc.r = {2, 2};
  inc.imm = kStickBytes;
  loop.body.push_back(inc);
  chunkBody.push_back(loop);
  Instr dout = mk(Opcode::DmaOut);
  dout.ddr = {argOf[out.ldsIdx], 1, 0};
  dout.lx = {-1, outOff};
  dout.dma = shape;
  dout.outToken = static_cast<int>(ops.size() - 1);
  chunkBody.push_back(dout);
  Instr w2 = mk(Opcode::Wait);
  w2.tokens = {dout.outToken};
  chunkBody.push_back(w2);
  // Wrap a body in `loop n { body; r1 += step }` and restore r1 afterwards.
  auto wrap = [&](std::vector<Instr> body, int64_t n, int64_t step) {
    if (n == 1)
      return body;
    Instr adv = mk(Opcode::Addi);
    adv.r = {1, 1};
    adv.imm = step;
    body.push_back(adv);
    Instr loop = mk(Opcode::Loop);
    loop.imm = n;
    loop.body = std::move(body);
    Instr back = mk(Opcode::Addi);
    back.r = {1, 1};
    back.imm = -n * step;
    return std::vector<Instr>{loop, back};
  };
  std::vector<Instr> body = wrap(chunkBody, nChunks, chunkDdrStep);
  for (auto it = outerRuns.rbegin(); it != outerRuns.rend(); ++it)
    body = wrap(body, it->n, it->stride);
  // The final r1 restore is dead code; drop it to keep listings short.
  if (body.size() == 2 && body.back().op == Opcode::Addi)
    body.pop_back();
  for (auto &i : body)
    p.body.push_back(i);
  k.programs.push_back(p);
  (void)eps;
  return k;
}

} // namespace spyre::isa
