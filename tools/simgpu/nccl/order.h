// The order in which simgpu's NCCL combines the ranks' contributions to a reduction. Every rank evaluates the same
// order on the same staged inputs, so all ranks get bitwise-identical results, whatever the timing.
//
// SIMGPU_NCCL_ORDER=ring (default) follows NCCL 2.28's ring algorithm (src/device/all_reduce.h, reduce.h,
// reduce_scatter.h, runRing) on one channel whose ring visits ranks 0, 1, ..., n-1, 0:
//
//   ncclAllReduce      the buffer is cut into loops of n*C elements, loop l covering [l*n*C, (l+1)*n*C); a last,
//                      shorter loop of R elements uses C' = alignUp(divUp(R, n), 16/sizeof(T)) instead of C.
//                      Within a loop, chunk c (elements [c*C, (c+1)*C) of the loop) is first sent by rank c+1
//                      (step 0: rank r sends chunk r-1), then each next rank adds its own contribution to the
//                      partial sum it received and passes it on, and rank c adds the last one (step n-1: rank r
//                      finishes chunk r). So an element of chunk c is
//                          x[c+1] (op) x[c+2] (op) ... (op) x[c+n]        (indices mod n)
//                      evaluated left to right, i.e. acc = pre(x[c+1]); acc = pre(x[c+k]) (op) acc for k = 2..n;
//                      then post(acc). C is RingChunkBytes()/sizeof(T) (NCCL's chunkSize).
//   ncclReduceScatter  rank b's block is reduced starting at rank b+1: x[b+1], x[b+2], ..., x[b].
//   ncclReduce         the chain starts after the root: x[root+1], ..., x[root].
//
// Real NCCL splits large buffers over several channels (each running this schedule on its own contiguous part,
// possibly with another ring order), and may choose tree or NVLS algorithms; simgpu models the one-channel ring.
// SIMGPU_NCCL_ORDER=rank combines x[0], x[1], ..., x[n-1] for every element (simgpu's earlier behaviour).
//
// Pure functions; thread-safe.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_ORDER_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_ORDER_H_

#include <cstddef>
#include <functional>

#include "tools/simgpu/nccl/params.h"

namespace simgpu::nccl {

struct RingShape {
  size_t count;       // elements of the all-reduce
  int nranks;
  size_t elem_bytes;
  size_t chunk_bytes;  // RingChunkBytes()
};

// The ring chunk (0..nranks-1) of element i of an all-reduce; the element's reduction starts at rank chunk+1.
int RingChunkOf(const RingShape& shape, size_t i);

// Calls fn(begin, end, first) for consecutive maximal ranges [begin, end) covering [lo, hi) whose elements'
// all-reduce starts at rank `first` under `order`.
void ForEachAllReduceRange(ReductionOrder order, const RingShape& shape, size_t lo, size_t hi,
                           const std::function<void(size_t, size_t, int)>& fn);

// First rank of the chain of ncclReduceScatter's block `block` and of ncclReduce to `root`.
int ReduceScatterFirst(ReductionOrder order, int block, int nranks);
int ReduceFirstRank(ReductionOrder order, int root, int nranks);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_ORDER_H_
