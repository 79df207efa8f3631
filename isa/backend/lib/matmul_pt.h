// Internal to the backend: the PT steps the matmul lowerings share (backend_matmul.cpp: the
// plain lowering; backend_matmul_ksplit.cpp: K split over cores, partials summed on the ring).
#pragma once
#include "lowerings.h"

namespace spyre::backend::detail {

// Builder steps shared by the plain and the K-split lowerings (see also backend_common.h).
/// Zeroes the lanes outside mask v12 of `rows` consecutive sticks at lx[rBase + lx] (A's last
/// K tile; rBase -1 = absolute).
inline void emitMaskSticks(ProgramBuilder &pb, int64_t lx, int64_t rows, int rBase = -1) {
  if (rBase >= 0)
    pb.emit(addi(5, rBase, lx));
  else
    emitLi(pb, 5, lx);
  pb.loop(rows, {{5, 128}}, [&] {
    pb.emit(vld(Format::DL16, 0, 5));
    pb.emit(vop(Opcode::Sel, Format::DL16, 0, 12, 0, 15));
    pb.emit(vst(Format::DL16, 0, 5));
  });
}

inline void emitPtMm(ProgramBuilder &pb, int64_t lxC, int64_t lxA, int64_t lxB, int64_t M, int64_t N, int64_t K,
                     int rA = -1) {
  Instr mm = mk(Opcode::PtMm);
  mm.lx = {-1, lxC};
  mm.lx2 = {rA, lxA};
  mm.lx3 = {-1, lxB};
  mm.imm = M;
  mm.imms = {N, K, 0};
  pb.emit(mm);
}

inline void emitPtOut(ProgramBuilder &pb, int64_t lxD, int64_t lxC, int64_t M, int64_t N, int rD = -1) {
  Instr out = mk(Opcode::PtOut);
  out.lx = {rD, lxD};
  out.lx2 = {-1, lxC};
  out.imm = M;
  out.imms = {N, 0, 0};
  pb.emit(out);
}

/// K-split: cores c = g*ks + j (K fastest) compute partial C over their K tiles; the partial
/// sums travel clockwise along the chain j = 0 -> ks-1 on the reduce-sum ring, one hop per
/// phase, and the last core of each chain rounds and stores the tile.
Kernel compileMatmulKSplit(const SuperDsc &s, const TensorGeom &x, const TensorGeom &y, const TensorGeom &o,
                           const std::vector<int64_t> &xOff, const std::vector<int64_t> &yOff,
                           const std::vector<int64_t> &oOff, const BackendOptions &opts);

} // namespace spyre::backend::detail
