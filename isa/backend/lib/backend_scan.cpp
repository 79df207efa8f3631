// cumsum (our SuperDSC extension, docs/superdsc.md): inclusive prefix sums along the iteration
// dim constantInfo_ `scanDim`, in the tensor's format (DL16 / fp32: fp32 adds rounded to the
// format at every step; int32: wrapping). Input and output share one layout; the scan dim and
// the stick dim are never split over cores. Per core the whole slice is staged into LX and
// scanned in place:
// - along a row dim: per stick column, a running sum v1 (add) stored over each stick;
// - along the stick dim: per row, each stick's own prefix sum (`scan`) plus the carry v1, then
//   v1 = the stick's last lane (`splat`). Padded lanes of a row's last stick only feed lanes
//   past the row's end (a carry leaves a stick only when the row goes on).
#include "lowerings.h"
#include <cmath>

namespace spyre::backend::detail {

Kernel compileScan(const SuperDsc &s, const BackendOptions &opts) {
  if (s.exUnit != "sfp")
    throw Error(where(s) + ": computeOp_ exUnit must be 'sfp' for " + s.opFuncName);
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0)
    throw Error(where(s) + ": expected one input tensor and one output");
  auto it = s.constants.find("scanDim");
  if (it == s.constants.end() || it->second != std::floor(it->second) || it->second < 0 ||
      it->second >= static_cast<double>(s.dims.size()))
    throw Error(where(s) + ": constantInfo_ needs scanDim, an iteration dim index");
  const int sd = static_cast<int>(it->second);
  const SdscTensor &inT = s.tensor(s.inputs[0]), &outT = s.tensor(s.outputs[0]);
  if (inT.dataFormat != outT.dataFormat || inT.dsType != outT.dsType)
    throw Error(where(s) + ": " + s.opFuncName + " keeps the format and the layout");
  for (const SdscTensor *t : {&inT, &outT}) {
    for (int sc : t->scale)
      if (sc != 1)
        throw Unsupported("broadcast in " + s.name);
    if (t->inLx)
      throw Unsupported("LX-resident tensors (memOrg_ lx) in " + s.name);
  }
  const std::string stickDim = s.primaryDsInfo.at(outT.dsType).stickDimOrder[0];
  const int stickIdx = s.dimIndex(stickDim);
  for (int d : {sd, stickIdx})
    if (s.numWkSlicesPerDim[d] != 1)
      throw Unsupported("splitting the " + s.dims[d] + " dim of a " + s.opFuncName + " over cores in " + s.name);
  TensorGeom in = tensorGeom(s, inT, stickDim), out = tensorGeom(s, outT, stickDim);
  const Format f = out.fmt;
  const size_t J = out.dims.size();
  const int jScan = out.dimOf(sd);
  if (jScan < 0)
    throw Error(where(s) + ": the layout does not list the scan dim " + s.dims[sd]);
  const bool alongStick = sd == stickIdx;
  const int lanes = f == Format::DL16 ? 64 : 32;
  Kernel k = newKernel(s, {&in, &out});
  const int64_t lx0 = (s.lxReservedBytes + 127) / 128 * 128;
  for (int c = 0; c < k.numCores; ++c) {
    std::vector<std::vector<Slice>> slices(1, std::vector<Slice>(J));
    std::vector<int64_t> len(J), lxStride(J);
    for (size_t j = 0; j < J; ++j) {
      slices[0][j] = coreSlice(s, c, out.dims[j].iterDim, out.dims[j].extent);
      len[j] = slices[0][j].len;
    }
    int64_t bytes = kStickBytes;
    for (size_t j = J; j-- > 0;) {
      lxStride[j] = bytes;
      bytes *= len[j];
    }
    if (lx0 + bytes > opts.lxBytes)
      throw Unsupported("a " + s.opFuncName + " slice of " + std::to_string(bytes) + " bytes that does not fit in LX in " +
                        s.name);
    const int64_t inOff = sliceOffsets(in, out.dims, slices, 0)[0], outOff = sliceOffsets(out, out.dims, slices, 0)[0];
    if (c == 0) {
      std::vector<int64_t> inOffs(k.numCores), outOffs(k.numCores);
      for (int cc = 0; cc < k.numCores; ++cc) {
        std::vector<std::vector<Slice>> sl(1, std::vector<Slice>(J));
        for (size_t j = 0; j < J; ++j)
          sl[0][j] = coreSlice(s, cc, out.dims[j].iterDim, out.dims[j].extent);
        inOffs[cc] = sliceOffsets(in, out.dims, sl, 0)[0];
        outOffs[cc] = sliceOffsets(out, out.dims, sl, 0)[0];
      }
      checkStartAddresses(s, in, inOffs);
      checkStartAddresses(s, out, outOffs);
    }
    std::vector<std::pair<int64_t, int64_t>> inBox, outBox;
    for (size_t j = 0; j < J; ++j) {
      inBox.push_back({len[j], in.dims[j].strideBytes});
      outBox.push_back({len[j], out.dims[j].strideBytes});
    }
    ProgramBuilder pb;
    emitLi(pb, 1, inOff);
    emitLi(pb, 2, outOff);
    pb.dmaBox(true, in.segment, 1, 0, -1, lx0, inBox, 0, 20, 21);
    emitLi(pb, 10, lx0);
    // Every device dim but the scan dim is walked (r10 advancing), the scan dim innermost.
    std::function<void(size_t)> walk = [&](size_t j) {
      if (j == J) {
        pb.emit(vbcast(Format::F32, 1, 0.0f)); // the running sum: +0.0 / int32 0 in every lane
        pb.loop(len[jScan], {{10, lxStride[jScan]}}, [&] {
          pb.emit(vld(f, 0, 10));
          if (alongStick)
            pb.emit(vop(Opcode::Scan, f, 0, 0));
          pb.emit(vop(Opcode::Add, f, alongStick ? 0 : 1, 0, 1));
          pb.emit(vst(f, alongStick ? 0 : 1, 10));
          if (alongStick) {
            Instr last = vop(Opcode::Splat, f, 1, 0);
            last.imm = lanes - 1;
            pb.emit(last);
          }
        });
        return;
      }
      if (static_cast<int>(j) == jScan) {
        walk(j + 1);
        return;
      }
      pb.loop(len[j], {{10, lxStride[j]}}, [&] { walk(j + 1); });
    };
    walk(0);
    pb.dmaBox(false, out.segment, 2, 0, -1, lx0, outBox, 1, 20, 21);
    pb.finishCores(k, c, c);
  }
  k.comment = "op=" + s.opFuncName + " fmt=" + std::string(formatName(f)) + " along " + s.dims[sd] +
              (alongStick ? " (the stick dim)" : "") + " cores=" + std::to_string(k.numCores);
  return k;
}

} // namespace spyre::backend::detail
