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

void ringRecv(RingPort &p, int dir, uint8_t *dst, int64_t bytes, int mode) {
  RingState &st = *p.state;
  auto &box = st.box((st.phase + 1) % 2, p.core, dir);
  if (st.phase == 0 || box.read + static_cast<size_t>(bytes) > box.bytes.size()) {
    std::lock_guard<std::mutex> g(st.errorMu);
    if (st.error.empty())
      st.error = "core " + std::to_string(p.core) + " receives " + std::to_string(bytes) + " bytes from direction " +
                 std::to_string(dir) + " in phase " + std::to_string(st.phase) + " but only " +
                 std::to_string(st.phase == 0 ? 0 : box.bytes.size() - box.read) +
                 " were sent in the previous phase";
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

} // namespace spyre::sim

extern "C" void spyre_ring_send(spyre::sim::RingPort *p, int32_t dir, const uint8_t *src, int64_t bytes) {
  spyre::sim::ringSend(*p, dir, src, bytes);
}
extern "C" void spyre_ring_recv(spyre::sim::RingPort *p, int32_t dir, uint8_t *dst, int64_t bytes, int32_t mode) {
  spyre::sim::ringRecv(*p, dir, dst, bytes, mode);
}
