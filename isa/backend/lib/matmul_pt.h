// Internal to the backend: the PT steps the matmul lowerings share (backend_matmul.cpp: the
// plain lowering; backend_matmul_ksplit.cpp: K split over cores, partials summed on the ring).
#pragma once
#include "lowerings.h"
#include <array>

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

/// The epilogue of a fused matmul (docs/superdsc.md §6.11; backend_matmul_epilogue.cpp): the
/// chain computeOp_ 1.. runs on each output block in LX after pt.out, before the write-back.
struct MatmulEpilogue {
  struct Operand {
    int ldsIdx = -1;
    TensorGeom g;      ///< over the matmul's iteration dims
    bool full = false; ///< spans M (staged per row block), else a row vector (per N block)
  };
  /// Extra tensors: per stick of the block, operand j's stick is at LX r10 + j, the output's
  /// (D, read as Result-op0 and overwritten by the last op) at r10 + operands.size().
  std::vector<Operand> operands;
  std::vector<Instr> body;
  struct Const {
    float value = 0;
    Format fmt = Format::DL16;
    int reg = -1;
  };
  std::vector<Const> consts; ///< set before each block's loop
  std::string ops;           ///< "add,gelufwd" for the kernel comment
  bool active() const { return !body.empty(); }
  static constexpr int kFirstWalkReg = 10, kFirstDdrReg = 25, kToken = 3;
};
/// The matmul's x, y and output ldsIdx: its inputs / outputs, or computeOp_ 0's when fused.
std::array<int, 3> matmulOperands(const SuperDsc &s);
/// Plans the epilogue of a fused matmul; inactive for a plain one.
MatmulEpilogue planMatmulEpilogue(const SuperDsc &s);

} // namespace spyre::backend::detail
