#include "backend_common.h"
#include <algorithm>
#include <functional>

namespace spyre::backend::detail {

std::string where(const SuperDsc &s) { return "SuperDSC " + s.name + " (" + s.opFuncName + ")"; }

Format formatOf(const SuperDsc &s, DataFormat f) {
  if (f == DataFormat::SEN169_FP16)
    return Format::DL16;
  if (f == DataFormat::IEEE_FP32)
    return Format::F32;
  if (f == DataFormat::IEEE_INT32)
    return Format::I32;
  throw Unsupported(std::string(dataFormatName(f)) + " tensors in " + s.name);
}

TensorGeom tensorGeom(const SuperDsc &s, const SdscTensor &t, const std::string &stickDim, bool allowView) {
  TensorGeom g;
  g.t = &t;
  g.fmt = formatOf(s, t.dataFormat);
  const SdscLayout &own = s.primaryDsInfo.at(t.dsType);
  if (own.stickDimOrder[0] != stickDim)
    throw Unsupported("operands sticked on different dims in " + s.name + " (" + t.dsName + " is sticked on " +
                      own.stickDimOrder[0] + ", the op on " + stickDim + "); restickify first");
  if (own.stickSize[0] != elemsPerStick(t.dataFormat))
    throw Error(where(s) + ": stickSize_ " + std::to_string(own.stickSize[0]) + " of layout " + t.dsType +
                " does not match " + std::string(dataFormatName(t.dataFormat)));
  if (t.isView() && !allowView)
    throw Unsupported("a view of a larger allocation (maxDimSizes_/offsets_ of " + t.dsName + ") as an operand of " +
                      s.opFuncName + " in " + s.name);
  int64_t eps = elemsPerStick(t.dataFormat);
  int sd = s.dimIndex(stickDim);
  g.stickPresent = t.scale[sd] == 1;
  std::vector<int64_t> alloc; // allocation extent per device dim (the view's extent if no view)
  for (auto it = own.layoutDimOrder.rbegin(); it != own.layoutDimOrder.rend(); ++it) {
    int d = s.dimIndex(*it);
    TensorDim td;
    td.iterDim = d;
    td.present = t.scale[d] == 1;
    bool isStick = *it == stickDim;
    td.extent = !td.present ? 1 : isStick ? (s.N[d] + eps - 1) / eps : s.N[d];
    int64_t a = td.extent;
    if (t.isView() && td.present && t.maxDimSizes[d] != -1)
      a = isStick ? (t.maxDimSizes[d] + eps - 1) / eps : t.maxDimSizes[d];
    alloc.push_back(a);
    g.dims.push_back(td);
  }
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (t.scale[d] == 1 && g.dimOf(static_cast<int>(d)) < 0)
      throw Error(where(s) + ": " + t.dsName + " has scale_ 1 on " + s.dims[d] + " but its layout " + t.dsType +
                  " does not list that dim");
  int64_t stride = kStickBytes;
  for (size_t k = g.dims.size(); k-- > 0;) {
    g.dims[k].strideBytes = stride;
    stride *= alloc[k];
  }
  g.bytes = stride;
  if (t.isView())
    for (const auto &td : g.dims) {
      int64_t off = td.present ? t.offsets[td.iterDim] : 0;
      bool isStick = td.iterDim == sd;
      g.viewOffsetBytes += (isStick ? off / eps : off) * td.strideBytes;
      if (isStick)
        g.laneOffset = off % eps;
    }
  // A strided view (steps_): consecutive view elements of a dim are `step` allocation
  // elements apart. On the stick dim that would gather lanes: not a view the walks can read.
  for (auto &td : g.dims) {
    const int64_t step = td.present ? t.stepOf(td.iterDim) : 1;
    if (step == 1)
      continue;
    if (td.iterDim == sd)
      throw Unsupported("a view stepping along the stick dim (steps_ " + std::to_string(step) + " on " + stickDim +
                        " of " + t.dsName + ") in " + s.name + "; transpose the stick dim away first");
    td.strideBytes *= step;
  }
  // An LX-resident tensor has no DDR segment; it keeps its ldsIdx_ as its (unused) argument.
  g.segment = t.inLx ? t.ldsIdx : static_cast<int>(t.startAddress[0] / kSegmentBytes);
  if (g.segment >= kMaxSegments)
    throw Error(where(s) + ": start address of " + t.dsName + " lies outside the " + std::to_string(kMaxSegments) +
                " kernel argument segments");
  return g;
}

Slice coreSlice(const SuperDsc &s, int core, int d, int64_t extent) {
  int64_t splits = s.numWkSlicesPerDim[d];
  if (extent % splits != 0)
    throw Error(where(s) + ": numWkSlicesPerDim_." + s.dims[d] + " = " + std::to_string(splits) +
                " does not divide the device extent " + std::to_string(extent) + " of N_." + s.dims[d] + " = " +
                std::to_string(s.N[d]) + " (only pointwise walks and reductions of unsplit dims accept uneven splits)");
  int64_t len = extent / splits;
  return {s.coreIdToWkSlice[core][d] * len, len};
}

Slice coreSliceUneven(const SuperDsc &s, int core, int d, int64_t extent) {
  const int64_t splits = s.numWkSlicesPerDim[d];
  const int64_t q = (extent + splits - 1) / splits, slice = s.coreIdToWkSlice[core][d];
  if ((splits - 1) * q >= extent)
    throw Error(where(s) + ": numWkSlicesPerDim_." + s.dims[d] + " = " + std::to_string(splits) +
                " leaves slice " + std::to_string(splits - 1) + " of the device extent " + std::to_string(extent) +
                " of N_." + s.dims[d] + " = " + std::to_string(s.N[d]) + " empty (an uneven split gives every slice but the last ceil(" +
                std::to_string(extent) + " / " + std::to_string(splits) + ") = " + std::to_string(q) + ")");
  return {slice * q, std::min(q, extent - slice * q)};
}

std::vector<std::pair<int, int>> equalSliceRuns(const std::vector<std::vector<Slice>> &slices) {
  std::vector<std::pair<int, int>> runs;
  auto sameLengths = [&](size_t a, size_t b) {
    for (size_t j = 0; j < slices[a].size(); ++j)
      if (slices[a][j].len != slices[b][j].len)
        return false;
    return true;
  };
  for (size_t c = 0; c < slices.size(); ++c) {
    if (!runs.empty() && sameLengths(static_cast<size_t>(runs.back().first), c))
      runs.back().second = static_cast<int>(c);
    else
      runs.push_back({static_cast<int>(c), static_cast<int>(c)});
  }
  return runs;
}

void checkStartAddresses(const SuperDsc &s, const TensorGeom &g, const std::vector<int64_t> &offsets) {
  for (int c = 0; c < s.numCoresUsed; ++c) {
    uint64_t expect = static_cast<uint64_t>(g.segment) * kSegmentBytes + offsets[c];
    if (g.t->startAddress[c] != expect)
      throw Error(where(s) + ": scheduleTree_ start address of " + g.t->dsName + " on core " + std::to_string(c) +
                  " is " + std::to_string(g.t->startAddress[c]) + ", but its work slice starts at " +
                  std::to_string(expect));
  }
}

int64_t lxResidentAddress(const SuperDsc &s, const TensorGeom &g, int64_t sliceBytes) {
  const uint64_t a = g.t->startAddress.at(0);
  for (int c = 1; c < s.numCoresUsed; ++c)
    if (g.t->startAddress[c] != a)
      throw Error(where(s) + ": LX-resident " + g.t->dsName + " starts at LX " + std::to_string(g.t->startAddress[c]) +
                  " on core " + std::to_string(c) + " but at " + std::to_string(a) + " on core 0 (memOrg_ lx needs one address)");
  if (a % kStickBytes != 0 || static_cast<int64_t>(a) + sliceBytes > s.lxReservedBytes)
    throw Error(where(s) + ": LX-resident " + g.t->dsName + " at LX [" + std::to_string(a) + ", " +
                std::to_string(a + sliceBytes) + ") is not a 128-byte aligned range inside lxReservedBytes_ " +
                std::to_string(s.lxReservedBytes));
  if (g.t->isView() || g.laneOffset != 0)
    throw Unsupported("LX-resident views in " + s.name);
  return static_cast<int64_t>(a);
}

Kernel newKernel(const SuperDsc &s, const std::vector<const TensorGeom *> &tensors) {
  Kernel k;
  k.name = s.name;
  for (char &ch : k.name)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_')
      ch = '_';
  k.numCores = s.numCoresUsed;
  int nseg = 0;
  for (const TensorGeom *g : tensors)
    nseg = std::max(nseg, g->segment + 1);
  for (int i = 0; i < nseg; ++i)
    k.args.push_back("seg" + std::to_string(i));
  for (const TensorGeom *g : tensors)
    k.args[g->segment] = g->t->dsName;
  return k;
}

namespace {

/// Folds register walks: within a run of consecutive addi, increments of one register
/// (`addi r, r, a` ... `addi r, r, b`) become one `addi r, r, a+b` (dropped if 0). The loop
/// builders restore a walker after a loop and the enclosing loop then advances it, which
/// otherwise shows up as back-to-back opposite addi pairs in every listing.
void foldAddi(std::vector<Instr> &body) {
  std::vector<Instr> out;
  std::vector<std::pair<int, int64_t>> pending; // (register, delta) in first-seen order
  auto flush = [&](int reg) {
    for (size_t i = 0; i < pending.size(); ++i)
      if (reg < 0 || pending[i].first == reg) {
        if (pending[i].second != 0)
          out.push_back(addi(pending[i].first, pending[i].first, pending[i].second));
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        --i;
      }
  };
  for (Instr &in : body) {
    if (in.op == Opcode::Addi && in.r[0] == in.r[1] && in.r[0] > 0) {
      auto it = std::find_if(pending.begin(), pending.end(), [&](auto &p) { return p.first == in.r[0]; });
      if (it == pending.end())
        pending.push_back({in.r[0], in.imm});
      else
        it->second += in.imm;
      continue;
    }
    if (in.op == Opcode::Addi) {
      flush(in.r[0]);
      flush(in.r[1]);
      out.push_back(std::move(in));
      continue;
    }
    flush(-1);
    if (in.op == Opcode::Loop)
      foldAddi(in.body);
    out.push_back(std::move(in));
  }
  flush(-1);
  body = std::move(out);
}

} // namespace

void ProgramBuilder::finishCores(Kernel &k, int first, int last) {
  CoreProgram p;
  p.firstCore = first;
  p.lastCore = last;
  p.body = std::move(top);
  foldAddi(p.body);
  while (!p.body.empty() && p.body.back().op == Opcode::Addi)
    p.body.pop_back();
  k.programs.push_back(std::move(p));
}

void emitLi(ProgramBuilder &pb, int r, int64_t v) {
  Instr i = mk(Opcode::Li);
  i.r = {r, -1};
  i.imm = v;
  pb.emit(i);
}

void emitTbl(ProgramBuilder &pb, int r, std::vector<int64_t> table) {
  Instr i = mk(Opcode::Tbl);
  i.r = {r, -1};
  i.table = std::move(table);
  pb.emit(i);
}

/// v15 = DL16 zero in every lane.
void emitZero(ProgramBuilder &pb) {
  pb.emit(vbcast(Format::DL16, 15));
}

/// v12 = 1.0 on lanes below `valid`, 0.0 above (the valid lanes of a partial last K stick).
void emitLaneMask(ProgramBuilder &pb, int64_t valid) {
  pb.emit(vop(Opcode::Iota, Format::F32, 12));
  pb.emit(vbcast(Format::F32, 13, static_cast<float>(valid)));
  pb.emit(vop(Opcode::Lt, Format::F32, 12, 12, 13));
}

/// Stores v15 into rows [valid, per) of each of `tiles` B tiles of `per` rows at lx: the K
/// padding rows, which DMA never writes.
void emitPtTr(ProgramBuilder &pb, int64_t dst, int64_t src, int64_t R, int64_t C, int rBase) {
  Instr tr = mk(Opcode::PtTr);
  tr.lx = {rBase, dst};
  tr.lx2 = {rBase, src};
  tr.imm = R;
  tr.imms = {C, 0, 0};
  pb.emit(tr);
}

void emitZeroPadRows(ProgramBuilder &pb, int64_t lx, int64_t tiles, int64_t per, int64_t valid) {
  emitLi(pb, 5, lx + valid * 128);
  pb.loop(tiles, {{5, per * 128}}, [&] {
    pb.loop(per - valid, {{5, 128}}, [&] {
      pb.emit(vst(Format::DL16, 15, 5));
    });
  });
}

int64_t largestFitting(int64_t hi, const std::function<bool(int64_t)> &fits) {
  if (hi < 1 || !fits(1))
    return 0;
  int64_t lo = 1; // fits(lo) holds
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int sharedLoadCohort(const std::vector<int64_t> &off, const BackendOptions &opts) {
  if (!opts.multicast)
    return 1;
  const int n = static_cast<int>(off.size());
  for (int k = kMaxCohort; k >= 2; k /= 2) {
    if (n % k != 0)
      continue;
    bool shared = true;
    for (int c = 0; c < n && shared; ++c)
      shared = off[c] == off[cohortLeader(c, k)];
    if (shared)
      return k;
  }
  return 1;
}

int64_t largestDivisorFitting(int64_t n, const std::function<bool(int64_t)> &fits) {
  std::vector<int64_t> ds = divisorsOf(n);
  for (auto it = ds.rbegin(); it != ds.rend(); ++it)
    if (fits(*it))
      return *it;
  return 0;
}

int64_t pipelineChunk(int64_t n, int64_t chunk, int64_t blocks, const std::function<bool(int64_t)> &bigEnough,
                      bool divisorsOnly) {
  if (blocks <= 1 || n / chunk >= blocks)
    return chunk;
  const int64_t want = std::min(chunk - 1, n / blocks); // the largest chunk giving `blocks`
  if (divisorsOnly) {
    std::vector<int64_t> ds = divisorsOf(n);
    for (auto it = ds.rbegin(); it != ds.rend(); ++it)
      if (*it <= want && bigEnough(*it))
        return *it;
    for (int64_t d : ds) // none: the most blocks that stay big enough
      if (d < chunk && bigEnough(d))
        return d;
    return chunk;
  }
  if (want >= 1 && bigEnough(want))
    return want;
  // bigEnough fails at and below `want`: the smallest c in (want, chunk) that passes.
  int64_t lo = std::max<int64_t>(want, 0) + 1, hi = chunk - 1;
  if (lo > hi || !bigEnough(hi))
    return chunk;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (bigEnough(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

Instr mk(Opcode op, Format f) {
  Instr i;
  i.op = op;
  i.fmt = f;
  return i;
}

Instr addi(int rd, int rs, int64_t imm) {
  Instr i = mk(Opcode::Addi);
  i.r = {rd, rs};
  i.imm = imm;
  return i;
}

std::vector<int64_t> sliceOffsets(const TensorGeom &g, const std::vector<TensorDim> &dims,
                                  const std::vector<std::vector<Slice>> &slices, int64_t base) {
  std::vector<int64_t> off(slices.size(), base);
  for (size_t c = 0; c < slices.size(); ++c)
    for (size_t j = 0; j < dims.size(); ++j) {
      int k = g.dimOf(dims[j].iterDim);
      if (k >= 0 && g.dims[k].extent > 1)
        off[c] += slices[c][j].lo * g.dims[k].strideBytes;
    }
  return off;
}

Instr vop(Opcode op, Format f, int vd, int va, int vb, int vc) {
  Instr i = mk(op, f);
  i.v = {vd, va, vb, vc};
  return i;
}

Instr vld(Format f, int vd, int rBase, int64_t off) {
  Instr i = vop(Opcode::Ld, f, vd);
  i.lx = {rBase, off};
  return i;
}

Instr vst(Format f, int vs, int rBase, int64_t off) {
  Instr i = vop(Opcode::St, f, vs);
  i.lx = {rBase, off};
  return i;
}

Instr vbcast(Format f, int vd, float value) {
  Instr i = vop(Opcode::Bcast, f, vd);
  i.fimm = value;
  return i;
}


namespace {

struct Run {
  int64_t n, ddr, lx;
};

/// The box's dims with count > 1, merged where contiguous on both sides, ending in the
/// stick-contiguous run (count, 128, 128).
std::vector<Run> dmaRuns(const std::vector<std::array<int64_t, 3>> &box) {
  std::vector<Run> runs;
  for (const auto &b : box)
    if (b[0] > 1)
      runs.push_back({b[0], b[1], b[2]});
  for (size_t j = runs.size(); j-- > 1;) {
    if (runs[j].n * runs[j].ddr == runs[j - 1].ddr && runs[j].n * runs[j].lx == runs[j - 1].lx) {
      runs[j - 1] = {runs[j - 1].n * runs[j].n, runs[j].ddr, runs[j].lx};
      runs.erase(runs.begin() + j);
    }
  }
  if (runs.empty() || runs.back().ddr != kStickBytes || runs.back().lx != kStickBytes)
    runs.push_back({1, kStickBytes, kStickBytes});
  return runs;
}

std::vector<std::array<int64_t, 3>> denseBox(const std::vector<std::pair<int64_t, int64_t>> &box) {
  std::vector<std::array<int64_t, 3>> full(box.size());
  int64_t lxStride = kStickBytes;
  for (size_t j = box.size(); j-- > 0;) {
    full[j] = {box[j].first, box[j].second, lxStride};
    lxStride *= box[j].first;
  }
  return full;
}

} // namespace

void ProgramBuilder::dmaBox(bool toLx, int arg, int rDdr, int64_t ddrOff, int rLx, int64_t lxOff,
                            std::vector<std::pair<int64_t, int64_t>> box, int token, int scratchDdr, int scratchLx) {
  dmaBoxStrided(toLx, arg, rDdr, ddrOff, rLx, lxOff, denseBox(box), token, scratchDdr, scratchLx);
}

bool ProgramBuilder::singleDma(const std::vector<std::pair<int64_t, int64_t>> &box) {
  return dmaRuns(denseBox(box)).size() <= 3;
}

int64_t ProgramBuilder::dmaCount(const std::vector<std::array<int64_t, 3>> &box) {
  const std::vector<Run> runs = dmaRuns(box);
  int64_t n = 1;
  for (size_t k = 0; k + 3 < runs.size(); ++k)
    n *= runs[k].n;
  return n;
}

void ProgramBuilder::dmaAsync(bool toLx, int arg, int rDdr, int64_t ddrOff, int rLx, int64_t lxOff,
                              const std::vector<std::pair<int64_t, int64_t>> &box, int token, int cohort) {
  if (!singleDma(box))
    throw Error("internal: dmaAsync of a box that needs more than one DMA");
  dmaBoxStrided(toLx, arg, rDdr, ddrOff, rLx, lxOff, denseBox(box), token, -1, -1, /*wait=*/false, cohort);
}

void ProgramBuilder::pipelinedSweep(int64_t n, const std::vector<std::pair<int, int64_t>> &adv, int rCur, int rOther,
                                    int rSwap, int64_t half, const std::function<void()> &prologue,
                                    const std::function<void(bool, bool)> &block,
                                    const std::function<void()> &epilogue) {
  if (n < 2)
    throw Error("internal: a double-buffered sweep needs at least 2 blocks");
  auto advance = [&] {
    for (auto [r, step] : adv)
      if (step)
        emit(addi(r, r, step));
    emit(addi(rSwap, rCur, 0));
    emit(addi(rCur, rOther, 0));
    emit(addi(rOther, rSwap, 0));
  };
  emitLi(*this, rCur, 0);
  emitLi(*this, rOther, half);
  prologue();
  block(true, false);
  advance();
  loop(n - 2, {}, [&] {
    block(false, false);
    advance();
  });
  block(false, true);
  epilogue();
  for (auto [r, step] : adv)
    if (step)
      emit(addi(r, r, -(n - 1) * step));
}

void ProgramBuilder::waitTokens(std::vector<int> tokens) {
  if (tokens.empty())
    return;
  Instr w = mk(Opcode::Wait);
  w.tokens = std::move(tokens);
  emit(w);
}

void ProgramBuilder::dmaBoxStrided(bool toLx, int arg, int rDdr, int64_t ddrOff, int rLx, int64_t lxOff,
                                   const std::vector<std::array<int64_t, 3>> &box, int token, int scratchDdr,
                                   int scratchLx, bool wait, int cohort) {
  std::vector<Run> runs = dmaRuns(box);
  // More than three runs: the outer ones become program loops around the DMA.
  std::vector<Run> outer;
  while (runs.size() > 3) {
    outer.push_back(runs.front());
    runs.erase(runs.begin());
  }
  while (runs.size() < 3)
    runs.insert(runs.begin(), Run{1, 0, 0});
  Instr d = mk(!toLx ? Opcode::DmaOut : cohort > 1 ? Opcode::DmaMc : Opcode::DmaIn);
  if (d.op == Opcode::DmaMc)
    d.imm = cohort;
  d.dma.n = {runs[0].n, runs[1].n, runs[2].n};
  d.dma.ddrStride = {runs[0].ddr, runs[1].ddr};
  d.dma.lxStride = {runs[0].lx, runs[1].lx};
  // Strides of count-1 dims are irrelevant: use the dense ones so listings stay short.
  auto dense = DmaShape::dense(d.dma.n);
  for (int i = 0; i < 2; ++i)
    if (d.dma.n[i] == 1)
      d.dma.ddrStride[i] = d.dma.lxStride[i] = dense[i];
  d.outToken = token;
  if (outer.empty()) {
    d.ddr = {arg, rDdr, ddrOff};
    d.lx = {rLx, lxOff};
    emit(d);
    if (wait)
      waitTokens({token});
    return;
  }
  emit(addi(scratchDdr, rDdr, ddrOff));
  if (rLx >= 0)
    emit(addi(scratchLx, rLx, lxOff));
  else {
    Instr li = mk(Opcode::Li);
    li.r = {scratchLx, -1};
    li.imm = lxOff;
    emit(li);
  }
  d.ddr = {arg, scratchDdr, 0};
  d.lx = {scratchLx, 0};
  std::function<void(size_t)> nest = [&](size_t k) {
    if (k == outer.size()) {
      emit(d);
      waitTokens({token});
      return;
    }
    loop(outer[k].n, {{scratchDdr, outer[k].ddr}, {scratchLx, outer[k].lx}}, [&] { nest(k + 1); });
  };
  nest(0);
}

} // namespace spyre::backend::detail
