#include "tools/simgpu/nccl/order.h"

#include <algorithm>

namespace simgpu::nccl {
namespace {

size_t DivUp(size_t a, size_t b) { return (a + b - 1) / b; }
size_t AlignUp(size_t a, size_t b) { return DivUp(a, b) * b; }

struct Loop {
  size_t start;  // first element of the loop
  size_t chunk;  // elements per chunk in this loop
};

Loop LoopOf(const RingShape& s, size_t i) {
  const size_t n = static_cast<size_t>(s.nranks);
  const size_t full = std::max<size_t>(1, s.chunk_bytes / s.elem_bytes);
  const size_t loop = n * full;
  const size_t start = i / loop * loop;
  const size_t rem = s.count - start;
  if (rem >= loop) return {start, full};
  return {start, AlignUp(DivUp(rem, n), std::max<size_t>(1, 16 / s.elem_bytes))};
}

}  // namespace

int RingChunkOf(const RingShape& shape, size_t i) {
  Loop l = LoopOf(shape, i);
  return static_cast<int>((i - l.start) / l.chunk);
}

void ForEachAllReduceRange(ReductionOrder order, const RingShape& shape, size_t lo, size_t hi,
                           const std::function<void(size_t, size_t, int)>& fn) {
  if (order == ReductionOrder::kRank || shape.nranks == 1) {
    if (lo < hi) fn(lo, hi, 0);
    return;
  }
  for (size_t i = lo; i < hi;) {
    Loop l = LoopOf(shape, i);
    size_t c = (i - l.start) / l.chunk;
    size_t end = std::min(hi, l.start + (c + 1) * l.chunk);
    fn(i, end, static_cast<int>((c + 1) % shape.nranks));
    i = end;
  }
}

int ReduceScatterFirst(ReductionOrder order, int block, int nranks) {
  return order == ReductionOrder::kRank ? 0 : (block + 1) % nranks;
}

int ReduceFirstRank(ReductionOrder order, int root, int nranks) {
  return order == ReductionOrder::kRank ? 0 : (root + 1) % nranks;
}

}  // namespace simgpu::nccl
