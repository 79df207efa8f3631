// batchmatmul on the PT: per core a block of output rows (M) x column tiles (N) for each of its
// batch indices; B tiles are staged with K padded to a stick multiple (zero rows), the padded
// lanes of A's last K tile are zeroed, pt.mm accumulates in fp32 and pt.out rounds to DL16.
// B may also arrive sticked on K (the KERNEL tensor is then y^T as stored, [.., N, K]: a
// linear layer's weight, attention's K): its rows are staged as they are and turned into B
// tiles through the PE array (pt.tr), which saves the restickify kernel before the matmul.
//
// The plain lowering plans first (checkMatmul, planBlocks: operand geometry, block sizes,
// buffering and the LX layout, all plain data in a MatmulPlan), then emits (MatmulEmitter).
#include "matmul_pt.h"
#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

namespace spyre::backend::detail {


namespace {

/// The smallest staging of the plain lowering: one B tile (y sticked on K: and its rows as
/// staged), C, A and D of one row, single-buffered. A K split stages from LX 0.
int64_t minStagingBytes(const SuperDsc &s, bool transB) {
  const int dK = s.dimIndex("in");
  if (dK < 0 || s.numWkSlicesPerDim[dK] > 1)
    return INT64_MAX;
  const int64_t KT = (s.N[dK] + 63) / 64;
  return (transB ? 2 : 1) * KT * 64 * 128 + 2 * 128 + KT * 128 + 128;
}

/// Per-core extent of iteration dim d in device units (N and K in sticks).
int64_t perCoreLen(const SuperDsc &s, int d) {
  const bool tiled = s.dims[d] == "out" || s.dims[d] == "in";
  if (s.dims[d] == "mb") // M may split unevenly: core 0 has the longest slice
    return coreSliceUneven(s, 0, d, s.N[d]).len;
  return coreSlice(s, 0, d, tiled ? (s.N[d] + 63) / 64 : s.N[d]).len;
}

/// M split unevenly (superdsc.md §2): one program per run of cores with equal M slices.
bool unevenM(const SuperDsc &s) {
  const int dM = s.dimIndex("mb");
  return dM >= 0 && s.N[dM] % s.numWkSlicesPerDim[dM] != 0;
}

/// LX strides of an LX-resident operand per iteration dim: the core's slice dense in the
/// tensor's own dim order (as backend_pointwise.cpp and backend_reduce.cpp walk it); 0 for a
/// dim it does not span or of extent 1. Second: the slice's bytes.
std::pair<std::vector<int64_t>, int64_t> residentStrides(const SuperDsc &s, const TensorGeom &g) {
  std::vector<int64_t> st(s.dims.size(), 0);
  int64_t b = kStickBytes;
  for (size_t k = g.dims.size(); k-- > 0;) {
    if (g.dims[k].extent <= 1)
      continue;
    const int64_t len = perCoreLen(s, g.dims[k].iterDim);
    st[g.dims[k].iterDim] = len > 1 ? b : 0;
    b *= len;
  }
  return {st, b};
}

bool stickedOnK(const SuperDsc &s, const SdscTensor &t) { return s.primaryDsInfo.at(t.dsType).stickDimOrder[0] == "in"; }

} // namespace

int64_t matmulMinStagingBytes(const SuperDsc &s) {
  std::array<int, 3> ops{};
  try {
    ops = matmulOperands(s);
  } catch (const Error &) {
    return INT64_MAX;
  }
  // A fused matmul's epilogue operands: one stick each for a block of one row and one tile.
  const int64_t extras = isFusedMatmul(s) ? static_cast<int64_t>(s.inputs.size()) - 2 : 0;
  const int64_t b = minStagingBytes(s, stickedOnK(s, s.tensor(ops[1])));
  return b == INT64_MAX ? b : b + extras * kStickBytes;
}

bool matmulLxResidentOk(const SuperDsc &s, int ldsIdx) {
  if (s.inputs.size() != 2 || s.outputs.size() != 1 || isFusedMatmul(s))
    return false;
  // x: any per-core slice (copied into the A blocks when it is not already one). y: every core
  // of an M split reads the same B blocks, so no core-matching slice exists. The output: pt.out
  // writes a tile's rows as consecutive sticks, so its rows must be innermost in the slice.
  if (unevenM(s)) // the resident slices would differ from core to core
    return false;
  if (ldsIdx == s.inputs[0])
    return true;
  if (ldsIdx != s.outputs[0])
    return false;
  const SdscTensor &oT = s.tensor(ldsIdx);
  TensorGeom o = tensorGeom(s, oT, "out");
  const int dM = s.dimIndex("mb");
  return dM >= 0 && (perCoreLen(s, dM) == 1 || residentStrides(s, o).first[dM] == kStickBytes);
}

namespace {

/// A plain (not K-split) matmul, decided before anything is emitted.
struct MatmulPlan {
  // The operands (checkMatmul).
  int dM = -1, dN = -1, dK = -1;
  int64_t ks = 1; ///< K slices over cores
  const SdscTensor *xT = nullptr, *yT = nullptr, *oT = nullptr;
  bool transB = false; ///< y sticked on K
  TensorGeom x, y, o;
  int64_t M = 0, N = 0, K = 0, KT = 0, Kpad = 0, NT = 0;
  std::vector<int> batch; ///< iteration dims other than M, N, K
  int numCores = 0;
  /// Runs of cores with equal M slices (one run unless M is split unevenly); the plan is the
  /// one of run `run`, whose first core is its representative.
  std::vector<std::pair<int, int>> runs;
  size_t run = 0;
  // The blocking and LX layout (planBlocks).
  int64_t mCore = 0, nCore = 0;       ///< per-core rows and N tiles
  std::vector<int64_t> xCanon, oCanon; ///< LX-resident x / output: LX strides per iteration dim
  int64_t xLx = -1, oLx = -1;
  /// directA: x is LX-resident as [K tiles][rows] and the block is all the core's rows, so
  /// pt.mm reads A in place (else A is copied out of the resident slice block by block).
  bool directA = false;
  bool pipelined = false;
  int64_t nc = 0, mc = 0; ///< block: nc N tiles x mc rows
  int64_t validK = 0;     ///< valid lanes of A's last K tile (0: all)
  /// LX: [reserved | B | (y rows as staged) | C | A, D (| A, D of the other block when
  /// double-buffered)].
  int64_t lxB = 0, lxS = 0, lxC = 0, lxA = 0, lxD = 0, half = 0;
  int bCohort = 1, aCohort = 1; ///< multicast cohorts of the B and A loads
  /// A fused matmul's epilogue (matmul_pt.h) and the LX of its operands' blocks: a full one's
  /// nc x mc sticks (tile-major, as D), a row vector's nc sticks, from lxE on.
  MatmulEpilogue ep;
  std::vector<int64_t> lxE;
  int64_t epilogueBytes(int64_t nc, int64_t mc) const {
    int64_t b = 0;
    for (const MatmulEpilogue::Operand &o : ep.operands)
      b += (o.full ? nc * mc : nc) * 128;
    return b;
  }

  int64_t strideOf(const TensorGeom &g, int d) const {
    int k = g.dimOf(d);
    return k >= 0 && g.dims[k].extent > 1 ? g.dims[k].strideBytes : 0;
  }
  /// Per-core slices (device units: rows, N tiles, batch indices); M may split unevenly.
  Slice sliceOf(const SuperDsc &s, int c, int d) const {
    return d == dM ? coreSliceUneven(s, c, d, s.N[d]) : coreSlice(s, c, d, d == dN ? NT : s.N[d]);
  }
  int runOf(int c) const {
    for (size_t r = 0; r < runs.size(); ++r)
      if (c <= runs[r].second)
        return static_cast<int>(r);
    return -1;
  }
  /// The largest cohort <= k whose members all run the same program (multicast needs that).
  int cohortWithinRuns(int k) const {
    auto within = [&](int kk) {
      for (int c = 0; c < numCores; ++c)
        if (runOf(c) != runOf(cohortLeader(c, kk)))
          return false;
      return true;
    };
    while (k > 1 && !within(k))
      k /= 2;
    return k;
  }
  /// Each core's DDR offset of operand g (isY: g is y).
  std::vector<int64_t> offsets(const SuperDsc &s, const TensorGeom &g, bool isY) const {
    std::vector<int64_t> off(numCores, 0);
    for (int c = 0; c < numCores; ++c)
      for (size_t d = 0; d < s.dims.size(); ++d) {
        if (static_cast<int>(d) == dK) {
          // K is split on stick boundaries: core slices are whole K tiles; y holds K as rows.
          if (ks > 1)
            off[c] += s.coreIdToWkSlice[c][dK] * (KT / ks) * (isY ? 64 : 1) * strideOf(g, dK);
          continue;
        }
        // N is split in tiles; y sticked on K holds N as rows (64 per tile).
        const int64_t unit = transB && isY && static_cast<int>(d) == dN ? 64 : 1;
        off[c] += sliceOf(s, c, static_cast<int>(d)).lo * unit * strideOf(g, static_cast<int>(d));
      }
    return off;
  }
  std::vector<std::pair<int64_t, int64_t>> aBox(int64_t rows) const {
    return {{KT, strideOf(x, dK)}, {rows, strideOf(x, dM) ? strideOf(x, dM) : 128}};
  }
  std::vector<std::pair<int64_t, int64_t>> dBox(int64_t tiles, int64_t rows) const {
    return {{tiles, strideOf(o, dN)}, {rows, strideOf(o, dM) ? strideOf(o, dM) : 128}};
  }
  /// Register steps of x and the output along dim d: DDR strides, or resident LX strides.
  int64_t xStride(int d) const { return xT->inLx ? xCanon[d] : strideOf(x, d); }
  int64_t oStride(int d) const { return oT->inLx ? oCanon[d] : strideOf(o, d); }
};

/// Checks the descriptor and fills the operand part of the plan.
void checkMatmul(const SuperDsc &s, MatmulPlan &p) {
  if (s.exUnit != "pt")
    throw Error(where(s) + ": computeOp_ exUnit must be 'pt' for " + s.opFuncName + ", got '" + s.exUnit + "'");
  const auto [xIdx, yIdx, oIdx] = matmulOperands(s);
  const int dM = s.dimIndex("mb"), dN = s.dimIndex("out"), dK = s.dimIndex("in");
  if (dM < 0 || dN < 0 || dK < 0)
    throw Error(where(s) + ": a matmul needs dims mb (M), out (N) and in (K) in N_");
  p.dM = dM;
  p.dN = dN;
  p.dK = dK;
  p.ks = s.numWkSlicesPerDim[dK];
  const SdscTensor &xT = s.tensor(xIdx), &yT = s.tensor(yIdx), &oT = s.tensor(oIdx);
  auto stickOf = [&](const SdscTensor &t) { return s.primaryDsInfo.at(t.dsType).stickDimOrder[0]; };
  p.transB = stickOf(yT) == "in";
  if (stickOf(xT) != "in" || (stickOf(yT) != "out" && !p.transB) || stickOf(oT) != "out")
    throw Unsupported("matmul operands sticked other than x on K, y on N or K and output on N in " + s.name +
                      "; restickify first");
  p.xT = &xT;
  p.yT = &yT;
  p.oT = &oT;
  p.x = tensorGeom(s, xT, "in");
  p.y = tensorGeom(s, yT, p.transB ? "in" : "out");
  p.o = tensorGeom(s, oT, "out");
  for (const TensorGeom *g : {&p.x, &p.y, &p.o})
    if (g->fmt != Format::DL16)
      throw Unsupported(std::string(formatName(g->fmt)) + " matmul (DL16 operands only) in " + s.name);
  if (yT.inLx || ((xT.inLx || oT.inLx) && p.ks > 1))
    throw Unsupported("LX-resident " + std::string(yT.inLx ? "y" : "operands of a K-split matmul") +
                      " (memOrg_ lx) in " + s.name);
  p.M = s.N[dM];
  p.N = s.N[dN];
  p.K = s.N[dK];
  p.KT = (p.K + 63) / 64;
  p.Kpad = p.KT * 64;
  p.NT = (p.N + 63) / 64;
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (static_cast<int>(d) != dM && static_cast<int>(d) != dN && static_cast<int>(d) != dK)
      p.batch.push_back(static_cast<int>(d));
  p.numCores = s.numCoresUsed;
  if (!xT.inLx)
    checkStartAddresses(s, p.x, p.offsets(s, p.x, false));
  checkStartAddresses(s, p.y, p.offsets(s, p.y, true));
  if (!oT.inLx)
    checkStartAddresses(s, p.o, p.offsets(s, p.o, false));
  if (p.x.segment == p.y.segment || p.x.segment == p.o.segment || p.y.segment == p.o.segment)
    throw Unsupported("matmul operands sharing a segment in " + s.name);
  p.ep = planMatmulEpilogue(s);
  if (p.ep.active() && (xT.inLx || oT.inLx))
    throw Unsupported("LX-resident operands of a fused matmul in " + s.name);
  for (const MatmulEpilogue::Operand &o : p.ep.operands) {
    if (o.g.segment == p.x.segment || o.g.segment == p.y.segment || o.g.segment == p.o.segment)
      throw Unsupported("an epilogue operand sharing a segment with the matmul's in " + s.name);
    checkStartAddresses(s, o.g, p.offsets(s, o.g, false));
  }
  std::vector<std::vector<Slice>> mSlices;
  for (int c = 0; c < p.numCores; ++c)
    mSlices.push_back({p.sliceOf(s, c, dM)});
  p.runs = equalSliceRuns(mSlices);
  if (p.runs.size() > 1 && (p.ks > 1 || xT.inLx || oT.inLx))
    throw Unsupported(std::string(p.ks > 1 ? "a K split" : "an LX-resident operand") +
                      " of a matmul whose M is split unevenly in " + s.name);
  p.mCore = p.sliceOf(s, 0, dM).len;
  p.nCore = p.sliceOf(s, 0, dN).len;
}

/// The plan of run r of an uneven M split: its cores' row count.
void selectRun(const SuperDsc &s, MatmulPlan &p, size_t r) {
  p.run = r;
  p.mCore = p.sliceOf(s, p.runs[r].first, p.dM).len;
}

/// The K-split preconditions (a K split sums partials over the ring: compileMatmulKSplit).
void checkKSplit(const SuperDsc &s, const MatmulPlan &p) {
  if (p.KT % p.ks != 0)
    throw Error(where(s) + ": numWkSlicesPerDim_.in = " + std::to_string(p.ks) + " does not divide the " +
                std::to_string(p.KT) + " K sticks");
  for (int d : p.batch)
    if (p.sliceOf(s, 0, d).len != 1)
      throw Unsupported("K-split matmul with several batch indices per core in " + s.name);
  if (p.transB)
    throw Unsupported("K-split matmul with y sticked on K in " + s.name + "; restickify y first");
}

/// Block sizes, buffering and the LX layout of a plain matmul.
void planBlocks(const SuperDsc &s, const BackendOptions &opts, MatmulPlan &p) {
  // y sticked on K: an N block is nc*64 whole rows (a partial last tile would read past y).
  if (p.transB && p.N % 64 != 0)
    throw Unsupported("matmul with y sticked on K and N = " + std::to_string(p.N) + " not a multiple of 64 in " +
                      s.name + "; restickify y first");
  const SdscTensor &xT = *p.xT, &oT = *p.oT;
  const int dM = p.dM, dK = p.dK;
  const int64_t mCore = p.mCore, nCore = p.nCore, KT = p.KT, Kpad = p.Kpad;
  // LX-resident x / output (memOrg_ lx): the core's slice dense in the tensor's own dim order
  // (residentStrides); everything else is staged above the graph's LX-resident tensors.
  int64_t xSlice = 0, oSlice = 0;
  std::tie(p.xCanon, xSlice) = residentStrides(s, p.x);
  std::tie(p.oCanon, oSlice) = residentStrides(s, p.o);
  p.xLx = xT.inLx ? lxResidentAddress(s, p.x, xSlice) : -1;
  p.oLx = oT.inLx ? lxResidentAddress(s, p.o, oSlice) : -1;
  if (oT.inLx && mCore > 1 && p.oCanon[dM] != kStickBytes)
    throw Unsupported("an LX-resident matmul output whose rows are not innermost in its slice in " + s.name);
  const int64_t lxStage = s.lxReservedBytes, stageBytes = opts.lxBytes - lxStage;
  const bool resident = xT.inLx || oT.inLx;
  // Block sizes: nc tiles of B (Kpad rows each) resident (y sticked on K: plus its rows as
  // staged, as many bytes again), mc rows of A, C (fp32) and D. Double buffered, A and D get
  // two copies: A block i+1 is fetched and D block i-1 written back while block i is on the PT.
  auto bytes = [&](int64_t nc, int64_t mc, bool dbl) {
    return (p.transB ? 2 : 1) * nc * Kpad * 128 + 2 * nc * mc * 128 +
           (dbl ? 2 : 1) * ((p.directA ? 0 : KT * mc * 128) + nc * mc * 128) + p.epilogueBytes(nc, mc);
  };
  auto largestDivisor = [](int64_t n, const std::function<bool(int64_t)> &fits) { return largestDivisorFitting(n, fits); };
  p.validK = p.K % 64;
  p.pipelined = !resident; // an LX-resident operand has no DMA to overlap on its side
  int64_t nc = 0, mc = 0;
  if (xT.inLx && p.validK == 0 && (mCore == 1 || p.xCanon[dM] == kStickBytes) &&
      (KT == 1 || p.xCanon[dK] == mCore * 128)) {
    p.directA = true;
    nc = largestDivisor(nCore, [&](int64_t c) { return bytes(c, mCore, false) <= stageBytes; });
    mc = mCore;
    p.directA = nc > 0;
  }
  if (p.pipelined) {
    nc = largestDivisor(nCore, [&](int64_t c) { return bytes(c, 1, true) <= stageBytes; });
    mc = nc ? largestDivisor(mCore, [&](int64_t c) { return bytes(nc, c, true) <= stageBytes; }) : 0;
  }
  // Something to overlap: at least opts.pipelineBlocks row blocks (BackendOptions; the timing
  // model picks the count) while an A block keeps a few sticks.
  const int64_t kPipeBlocks = std::max(1, opts.pipelineBlocks);
  if (p.pipelined && mc > 0)
    mc = pipelineChunk(mCore, mc, kPipeBlocks, [&](int64_t c) { return KT * c >= 8; }, /*divisorsOnly=*/true);
  if (!p.directA && (!p.pipelined || nc == 0 || mCore / mc < 2 || !ProgramBuilder::singleDma(p.aBox(mc)) ||
                     !ProgramBuilder::singleDma(p.dBox(nc, mc)))) {
    p.pipelined = false;
    nc = largestDivisor(nCore, [&](int64_t c) { return bytes(c, 1, false) <= stageBytes; });
    if (nc == 0)
      throw Unsupported("K = " + std::to_string(p.K) + " too large for one B tile in LX (K-split needed) in " + s.name);
    mc = largestDivisor(mCore, [&](int64_t c) { return bytes(nc, c, false) <= stageBytes; });
  }
  p.nc = nc;
  p.mc = mc;
  p.lxB = lxStage;
  p.lxS = lxStage + nc * Kpad * 128;
  p.lxC = lxStage + (p.transB ? 2 : 1) * nc * Kpad * 128;
  p.lxA = p.lxC + 2 * nc * mc * 128;
  p.lxD = p.lxA + (p.directA ? 0 : KT * mc * 128);
  p.half = KT * mc * 128 + nc * mc * 128;
  int64_t e = p.lxA + (p.pipelined ? 2 : 1) * p.half;
  for (const MatmulEpilogue::Operand &o : p.ep.operands) {
    p.lxE.push_back(e);
    e += (o.full ? nc * mc : nc) * 128;
  }
  // Under an M split the cores of one N slice load the same B blocks, under an N split (M not
  // split) every core loads the same A rows: one multicast per cohort.
  p.bCohort = p.cohortWithinRuns(sharedLoadCohort(p.offsets(s, p.y, true), opts));
  p.aCohort = xT.inLx ? 1 : p.cohortWithinRuns(sharedLoadCohort(p.offsets(s, p.x, false), opts));
}

/// Emits a planned plain matmul. Registers: r1 x, r2 y, r3 out DDR offsets (LX addresses when
/// resident); r20/r21 DMA scratch; r5 row walker; r6/r7 the A copy's walkers, r8/r9 the
/// per-tile pt.out's; r22/r23 this block's / the other block's A and D (0 or `half`), r24 swap
/// scratch.
class MatmulEmitter {
public:
  MatmulEmitter(const SuperDsc &s, const MatmulPlan &p) : s_(s), p_(p) {}
  /// The kernel with the program of the plan's run.
  Kernel emit();
  /// The program of the plan's run added to k (a further run of an uneven M split).
  void emitCores(Kernel &k);

private:
  static constexpr int rCur = 22, rOther = 23, rSwap = 24, tokA = 1, tokD = 2;
  void aDma(int rBuf, int64_t ddrOff);
  void copyA();
  void ptOutResident();
  void block(bool first, bool last);
  void rowBlock();
  void stageB();
  void stageRowOperands();
  void epilogue(int rD);
  std::vector<std::pair<int, int64_t>> withOperands(std::vector<std::pair<int, int64_t>> adv,
                                                    const std::function<int64_t(const TensorGeom &)> &step) const;
  void batchLoops(size_t bi);

  const SuperDsc &s_;
  const MatmulPlan &p_;
  ProgramBuilder pb_;
};

void MatmulEmitter::aDma(int rBuf, int64_t ddrOff) {
  std::vector<std::pair<int64_t, int64_t>> box = p_.aBox(p_.mc);
  pb_.dmaAsync(true, p_.x.segment, 1, ddrOff, rBuf, p_.lxA, box, tokA, p_.aCohort);
}

/// The A block out of the resident x slice: KT tiles x mc rows, (kt, i) order, by the SFP.
void MatmulEmitter::copyA() {
  pb_.emit(addi(6, 1, 0));
  emitLi(pb_, 7, p_.lxA);
  pb_.loop(p_.KT, {{6, p_.xCanon[p_.dK]}, {7, p_.mc * 128}}, [&] {
    pb_.loop(p_.mc, {{6, p_.xCanon[p_.dM]}, {7, 128}}, [&] {
      pb_.emit(vld(Format::DL16, 0, 6));
      pb_.emit(vst(Format::DL16, 0, 7));
    });
  });
}

/// D of the block (fp32 C rounded) straight into the resident output: per N tile its mc rows
/// are consecutive sticks there (one pt.out when the tiles are consecutive too).
void MatmulEmitter::ptOutResident() {
  const int64_t nc = p_.nc, mc = p_.mc;
  if (nc == 1 || p_.oCanon[p_.dN] == mc * 128) {
    emitPtOut(pb_, 0, p_.lxC, mc, nc * 64, 3);
    return;
  }
  pb_.emit(addi(8, 3, 0));
  emitLi(pb_, 9, p_.lxC);
  pb_.loop(nc, {{8, p_.oCanon[p_.dN]}, {9, 2 * mc * 128}}, [&] {
    Instr out = mk(Opcode::PtOut);
    out.lx = {8, 0};
    out.lx2 = {9, 0};
    out.imm = mc;
    out.imms = {64, 0, 0};
    pb_.emit(out);
  });
}

/// One row block of the double-buffered sweep: A (already fetched into rCur's half) through PT
/// into D, D written back.
void MatmulEmitter::block(bool first, bool last) {
  const int64_t nc = p_.nc, mc = p_.mc;
  pb_.waitTokens({tokA});
  if (!last)
    aDma(rOther, mc * p_.xStride(p_.dM));
  if (p_.validK)
    emitMaskSticks(pb_, p_.lxA + (p_.KT - 1) * mc * 128, mc, rCur);
  emitPtMm(pb_, p_.lxC, p_.lxA, p_.lxB, mc, nc * 64, p_.Kpad, rCur);
  emitPtOut(pb_, p_.lxD, p_.lxC, mc, nc * 64, rCur);
  epilogue(rCur);
  if (!first)
    pb_.waitTokens({tokD});
  pb_.dmaAsync(false, p_.o.segment, 3, 0, rCur, p_.lxD, p_.dBox(nc, mc), tokD);
}

/// One row block, single-buffered: A block (KT tiles x mc rows, (kt, i) order) through PT, D
/// written back (or straight into the resident output).
void MatmulEmitter::rowBlock() {
  const int64_t nc = p_.nc, mc = p_.mc;
  const TensorGeom &x = p_.x, &o = p_.o;
  if (p_.directA) {
    emitPtMm(pb_, p_.lxC, 0, p_.lxB, mc, nc * 64, p_.Kpad, 1);
  } else {
    if (p_.xT->inLx)
      copyA();
    else
      pb_.dmaBoxStrided(true, x.segment, 1, 0, -1, p_.lxA,
                        {{p_.KT, p_.strideOf(x, p_.dK), mc * 128},
                         {mc, p_.strideOf(x, p_.dM) ? p_.strideOf(x, p_.dM) : 128, 128}},
                        tokA, 20, 21, /*wait=*/true, p_.aCohort);
    if (p_.validK)
      emitMaskSticks(pb_, p_.lxA + (p_.KT - 1) * mc * 128, mc);
    emitPtMm(pb_, p_.lxC, p_.lxA, p_.lxB, mc, nc * 64, p_.Kpad);
  }
  if (p_.oT->inLx) {
    ptOutResident();
    return;
  }
  emitPtOut(pb_, p_.lxD, p_.lxC, mc, nc * 64);
  epilogue(-1);
  pb_.dmaBoxStrided(false, o.segment, 3, 0, -1, p_.lxD,
                    {{nc, p_.strideOf(o, p_.dN), mc * 128}, {mc, p_.strideOf(o, p_.dM) ? p_.strideOf(o, p_.dM) : 128, 128}},
                    tokD, 20, 21);
}

/// The B block of the current N block into its tiles.
void MatmulEmitter::stageB() {
  const TensorGeom &y = p_.y;
  const int64_t nc = p_.nc, K = p_.K, Kpad = p_.Kpad;
  const int64_t yN = p_.strideOf(y, p_.dN), yK = p_.strideOf(y, p_.dK);
  if (p_.transB) {
    // B block from y sticked on K: nc*64 rows x KT sticks (row-major per K tile, as pt.tr reads
    // its source), transposed into the tiles; the transpose also writes the K padding rows (y's
    // padded lanes), so they are zeroed again.
    pb_.dmaBoxStrided(true, y.segment, 2, 0, -1, p_.lxS, {{p_.KT, yK, nc * 64 * 128}, {nc * 64, yN ? yN : 128, 128}}, 0,
                      20, 21, /*wait=*/true, p_.bCohort);
    emitPtTr(pb_, p_.lxB, p_.lxS, nc * 64, Kpad);
    if (Kpad > K)
      emitZeroPadRows(pb_, p_.lxB, nc, Kpad, K);
  } else {
    // B block: nc tiles x K rows into tiles of Kpad rows.
    pb_.dmaBoxStrided(true, y.segment, 2, 0, -1, p_.lxB, {{nc, yN, Kpad * 128}, {K, yK ? yK : 128, 128}}, 0, 20, 21,
                      /*wait=*/true, p_.bCohort);
  }
}

/// The row-vector epilogue operands of the current N block (nc sticks each), once per N block.
void MatmulEmitter::stageRowOperands() {
  for (size_t j = 0; j < p_.ep.operands.size(); ++j) {
    const MatmulEpilogue::Operand &o = p_.ep.operands[j];
    if (!o.full)
      pb_.dmaBoxStrided(true, o.g.segment, MatmulEpilogue::kFirstDdrReg + static_cast<int>(j), 0, -1, p_.lxE[j],
                        {{p_.nc, p_.strideOf(o.g, p_.dN), 128}}, MatmulEpilogue::kToken, 20, 21);
  }
}

/// The epilogue on the block's D (lx[rD + lxD], nc tiles x mc rows, tile-major; rD -1 =
/// absolute): the full operands' blocks staged alike, then the body per stick, in place.
void MatmulEmitter::epilogue(int rD) {
  if (!p_.ep.active())
    return;
  const int64_t nc = p_.nc, mc = p_.mc;
  const int n = static_cast<int>(p_.ep.operands.size()), base = MatmulEpilogue::kFirstWalkReg;
  std::vector<std::pair<int, int64_t>> inner, outer;
  for (int j = 0; j < n; ++j) {
    const MatmulEpilogue::Operand &o = p_.ep.operands[j];
    if (o.full) {
      const int64_t sM = p_.strideOf(o.g, p_.dM);
      pb_.dmaBoxStrided(true, o.g.segment, MatmulEpilogue::kFirstDdrReg + j, 0, -1, p_.lxE[j],
                        {{nc, p_.strideOf(o.g, p_.dN), mc * 128}, {mc, sM ? sM : 128, 128}}, MatmulEpilogue::kToken,
                        20, 21);
    }
    emitLi(pb_, base + j, p_.lxE[j]);
    inner.push_back({base + j, o.full ? 128 : 0});
    outer.push_back({base + j, o.full ? mc * 128 : 128});
  }
  // The constants, per block: the masking of A's last K tile uses v0.
  for (const MatmulEpilogue::Const &c : p_.ep.consts)
    pb_.emit(vbcast(c.fmt, c.reg, c.value));
  if (rD >= 0)
    pb_.emit(addi(base + n, rD, p_.lxD));
  else
    emitLi(pb_, base + n, p_.lxD);
  inner.push_back({base + n, 128});
  outer.push_back({base + n, mc * 128});
  pb_.loop(nc, outer, [&] {
    pb_.loop(mc, inner, [&] {
      for (const Instr &in : p_.ep.body)
        pb_.emit(in);
    });
  });
}

/// adv with the epilogue operands' DDR registers, each advanced by step(its geometry).
std::vector<std::pair<int, int64_t>>
MatmulEmitter::withOperands(std::vector<std::pair<int, int64_t>> adv,
                            const std::function<int64_t(const TensorGeom &)> &step) const {
  for (size_t j = 0; j < p_.ep.operands.size(); ++j)
    adv.push_back({MatmulEpilogue::kFirstDdrReg + static_cast<int>(j), step(p_.ep.operands[j].g)});
  return adv;
}

void MatmulEmitter::batchLoops(size_t bi) {
  if (bi < p_.batch.size()) {
    int d = p_.batch[bi];
    pb_.loop(p_.sliceOf(s_, 0, d).len,
             withOperands({{1, p_.xStride(d)}, {2, p_.strideOf(p_.y, d)}, {3, p_.oStride(d)}},
                          [&](const TensorGeom &g) { return p_.strideOf(g, d); }),
             [&] { batchLoops(bi + 1); });
    return;
  }
  const int64_t aStep = p_.mc * p_.xStride(p_.dM), oStep = p_.mc * p_.oStride(p_.dM), numBlocks = p_.mCore / p_.mc;
  const auto rowAdv = withOperands({{1, aStep}, {3, oStep}},
                                   [&](const TensorGeom &g) { return p_.mc * p_.strideOf(g, p_.dM); });
  pb_.loop(p_.nCore / p_.nc,
           withOperands({{2, p_.nc * (p_.transB ? 64 : 1) * p_.strideOf(p_.y, p_.dN)}, {3, p_.nc * p_.oStride(p_.dN)}},
                        [&](const TensorGeom &g) { return p_.nc * p_.strideOf(g, p_.dN); }),
           [&] {
             stageB();
             stageRowOperands();
             if (p_.pipelined) {
               pb_.pipelinedSweep(
                   numBlocks, rowAdv, rCur, rOther, rSwap, p_.half, [&] { aDma(rCur, 0); },
                   [&](bool first, bool last) { block(first, last); }, [&] { pb_.waitTokens({tokD}); });
               return;
             }
             pb_.loop(numBlocks, rowAdv, [&] { rowBlock(); });
           });
}

Kernel MatmulEmitter::emit() {
  std::vector<const TensorGeom *> geoms = {&p_.x, &p_.y, &p_.o};
  for (const MatmulEpilogue::Operand &o : p_.ep.operands)
    geoms.push_back(&o.g);
  Kernel k = newKernel(s_, geoms);
  emitCores(k);
  k.comment = "op=" + s_.opFuncName + " M=" + std::to_string(p_.M) + " N=" + std::to_string(p_.N) + " K=" +
              std::to_string(p_.K) + " cores=" + std::to_string(k.numCores) + " block " + std::to_string(p_.mc) + "x" +
              std::to_string(p_.nc * 64) + (p_.pipelined ? ", double-buffered" : "") +
              (p_.transB ? ", y sticked on K" : "") +
              (p_.bCohort > 1 ? ", B multicast to " + std::to_string(p_.bCohort) + " cores" : "") +
              (p_.aCohort > 1 ? ", A multicast to " + std::to_string(p_.aCohort) + " cores" : "") +
              (p_.xT->inLx ? (p_.directA ? ", x read in LX" : ", x copied from LX") : "") +
              (p_.oT->inLx ? ", output to LX" : "") + (p_.ep.active() ? ", epilogue " + p_.ep.ops : "");
  return k;
}

void MatmulEmitter::emitCores(Kernel &k) {
  p_.xT->inLx ? emitLi(pb_, 1, p_.xLx) : emitTbl(pb_, 1, p_.offsets(s_, p_.x, false));
  emitTbl(pb_, 2, p_.offsets(s_, p_.y, true));
  p_.oT->inLx ? emitLi(pb_, 3, p_.oLx) : emitTbl(pb_, 3, p_.offsets(s_, p_.o, false));
  for (size_t j = 0; j < p_.ep.operands.size(); ++j)
    emitTbl(pb_, MatmulEpilogue::kFirstDdrReg + static_cast<int>(j), p_.offsets(s_, p_.ep.operands[j].g, false));
  emitZero(pb_);
  // Zero the K padding rows of every B tile once: DMA never writes them.
  if (p_.Kpad > p_.K && !p_.transB)
    emitZeroPadRows(pb_, p_.lxB, p_.nc, p_.Kpad, p_.K);
  if (p_.validK)
    emitLaneMask(pb_, p_.validK);
  batchLoops(0);
  pb_.finishCores(k, p_.runs[p_.run].first, p_.runs[p_.run].second);
}

} // namespace

Kernel compileMatmul(const SuperDsc &s, const BackendOptions &opts) {
  MatmulPlan p;
  checkMatmul(s, p);
  if (p.ks > 1) {
    if (p.ep.active())
      throw Unsupported("a K-split matmul with an epilogue (fused) in " + s.name);
    checkKSplit(s, p);
    return compileMatmulKSplit(s, p.x, p.y, p.o, p.offsets(s, p.x, false), p.offsets(s, p.y, true),
                               p.offsets(s, p.o, false), opts);
  }
  planBlocks(s, opts, p);
  Kernel k = MatmulEmitter(s, p).emit();
  // An uneven M split: every further run of cores with equal slices gets its own plan and program.
  for (size_t r = 1; r < p.runs.size(); ++r) {
    MatmulPlan q;
    checkMatmul(s, q);
    selectRun(s, q, r);
    planBlocks(s, opts, q);
    MatmulEmitter(s, q).emitCores(k);
  }
  if (p.runs.size() > 1)
    k.comment += ", uneven M split: " + std::to_string(p.runs.size()) + " programs";
  return k;
}

} // namespace spyre::backend::detail
