// Ring transfers between neighbouring cores (see RingState in machine.h).
#include "spyre/isa/dl16.h"
#include "spyre/isa/error.h"
#include "spyre/sim/machine.h"
#include <cstring>
#include <string>

namespace spyre::sim {

void ringSend(RingPort &p, int dir, const uint8_t *src, int64_t bytes) {
  RingState &st = *p.state;
  int n = st.numCores;
  int to = dir == 0 ? (p.core + 1) % n : (p.core + n - 1) % n;
  auto &box = st.box(st.phase % 2, to, dir);
  box.bytes.insert(box.bytes.end(), src, src + bytes);
}

void reportFault(RingPort &p, std::string what) {
  RingState &st = *p.state;
  std::lock_guard<std::mutex> g(st.errorMu);
  if (st.error.empty())
    st.error = std::move(what);
}

void ringRecv(RingPort &p, int dir, uint8_t *dst, int64_t bytes, int mode) {
  RingState &st = *p.state;
  auto &box = st.box((st.phase + 1) % 2, p.core, dir);
  if (st.phase == 0 || box.read + static_cast<size_t>(bytes) > box.bytes.size()) {
    reportFault(p, "ring: core " + std::to_string(p.core) + " receives " + std::to_string(bytes) +
                       " bytes from direction " + std::to_string(dir) + " in phase " + std::to_string(st.phase) +
                       " but only " + std::to_string(st.phase == 0 ? 0 : box.bytes.size() - box.read) +
                       " were sent in the previous phase");
    return;
  }
  const uint8_t *src = box.bytes.data() + box.read;
  box.read += bytes;
  if (mode == 0) {
    std::memcpy(dst, src, bytes);
  } else if (mode == 1) {
    for (int64_t i = 0; i < bytes / 4; ++i) {
      float a, b;
      std::memcpy(&a, dst + 4 * i, 4);
      std::memcpy(&b, src + 4 * i, 4);
      float r = a + b;
      if (r != r)
        r = dl16::bitsFloat(0x7FC00000u);
      std::memcpy(dst + 4 * i, &r, 4);
    }
  } else {
    for (int64_t i = 0; i < bytes / 2; ++i) {
      uint16_t a, b;
      std::memcpy(&a, dst + 2 * i, 2);
      std::memcpy(&b, src + 2 * i, 2);
      uint16_t r = dl16::fromFloat(dl16::toFloat(a) + dl16::toFloat(b));
      std::memcpy(dst + 2 * i, &r, 2);
    }
  }
}

void dmaGather(RingPort &p, uint8_t *lx, const uint8_t *idx, const uint8_t *table, const GatherShape &g) {
  for (int64_t i = 0; i < g.n; ++i) {
    int32_t j;
    std::memcpy(&j, idx + 4 * i, 4);
    uint8_t *dst = lx + i * g.lxStep;
    const bool ok = j >= 0 && j < g.rows;
    if (!ok)
      reportFault(p, "dma.gather on core " + std::to_string(p.core) + ": index " + std::to_string(j) + " (entry " + std::to_string(i) +
                         " of the index list) is outside the table's rows [0, " + std::to_string(g.rows) + ")");
    const uint8_t *src = table + (ok ? j : 0) * g.rowStride;
    for (int64_t i2 = 0; i2 < g.n2; ++i2)
      for (int64_t i1 = 0; i1 < g.n1; ++i1) {
        uint8_t *l = dst + i2 * g.lxS2 + i1 * g.lxS1;
        if (ok)
          std::memcpy(l, src + i2 * g.ddrS2 + i1 * g.ddrS1, static_cast<size_t>(g.run));
        else
          std::memset(l, 0, static_cast<size_t>(g.run));
      }
  }
}

void dmaScatter(RingPort &p, uint8_t *table, const uint8_t *lx, const uint8_t *idx, const GatherShape &g) {
  for (int64_t i = 0; i < g.n; ++i) {
    int32_t j;
    std::memcpy(&j, idx + 4 * i, 4);
    if (j < 0 || j >= g.rows) {
      reportFault(p, "dma.scatter on core " + std::to_string(p.core) + ": index " + std::to_string(j) + " (entry " +
                         std::to_string(i) + " of the index list) is outside the table's rows [0, " +
                         std::to_string(g.rows) + ")");
      continue;
    }
    const uint8_t *src = lx + i * g.lxStep;
    uint8_t *dst = table + j * g.rowStride;
    for (int64_t i2 = 0; i2 < g.n2; ++i2)
      for (int64_t i1 = 0; i1 < g.n1; ++i1)
        std::memcpy(dst + i2 * g.ddrS2 + i1 * g.ddrS1, src + i2 * g.lxS2 + i1 * g.lxS1, static_cast<size_t>(g.run));
  }
}

} // namespace spyre::sim

extern "C" void spyre_dma_scatter(spyre::sim::RingPort *p, uint8_t *table, const uint8_t *lx, const uint8_t *idx,
                                  const spyre::sim::GatherShape *g) {
  spyre::sim::dmaScatter(*p, table, lx, idx, *g);
}

extern "C" void spyre_dma_gather(spyre::sim::RingPort *p, uint8_t *lx, const uint8_t *idx, const uint8_t *table,
                                 const spyre::sim::GatherShape *g) {
  spyre::sim::dmaGather(*p, lx, idx, table, *g);
}

extern "C" void spyre_ring_send(spyre::sim::RingPort *p, int32_t dir, const uint8_t *src, int64_t bytes) {
  spyre::sim::ringSend(*p, dir, src, bytes);
}
extern "C" void spyre_ring_recv(spyre::sim::RingPort *p, int32_t dir, uint8_t *dst, int64_t bytes, int32_t mode) {
  spyre::sim::ringRecv(*p, dir, dst, bytes, mode);
}
