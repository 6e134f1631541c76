// Tunables of simgpu's NCCL, read once from the environment on first use (like NCCL's NCCL_PARAM); thread-safe.
//
//   SIMGPU_NCCL_TIMEOUT_S      seconds a rank waits for its peers (to join a communicator, to reach a collective,
//                              to progress a send/receive) before it gives up with a clear error; default 120.
//   SIMGPU_NCCL_CHUNK_BYTES    size of each rank's staging buffer in the shared segment (collectives move data
//                              through it chunk by chunk) and of each send/receive ring; default 1 MiB, at
//                              least 256, rounded up to a multiple of 64. Fixed per communicator by the rank that
//                              creates its segment. It never changes results (see order.h).
//   SIMGPU_NCCL_ORDER          ring (default) or rank: the order in which reductions combine the ranks'
//                              contributions (order.h).
//   SIMGPU_NCCL_RING_CHUNK_BYTES  the ring all-reduce's chunk per rank and loop (NCCL's chunkSize, order.h);
//                              default 2 MiB (NCCL's Simple protocol: 4 MiB buffer / 8 steps x 4 chunk steps);
//                              rounded up to a multiple of 16, at least 16.
//   SIMGPU_NCCL_ASYNC_DELAY_MS the least time each background job of a non-blocking communicator (init, split,
//                              group launch, finalize) takes before the communicator leaves ncclInProgress;
//                              default 0. Real NCCL's jobs take milliseconds; tests raise it so that a program
//                              that does not poll ncclCommGetAsyncError fails visibly.
//   NCCL_COMM_BLOCKING         0 or 1 overrides every communicator's config.blocking, as in NCCL.
//   NCCL_DEBUG                 WARN, INFO or TRACE also print argument errors (as NCCL does); failures that
//                              leave a communicator unusable are always printed.
// A malformed value prints a message and the default is used.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_PARAMS_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_PARAMS_H_

#include <cstddef>

namespace simgpu::nccl {

enum class ReductionOrder { kRing, kRank };

double TimeoutSeconds();
size_t ChunkBytes();
ReductionOrder Order();
size_t RingChunkBytes();
double AsyncDelaySeconds();
int CommBlockingOverride();  // 0 or 1 from NCCL_COMM_BLOCKING; -1 when unset
bool DebugWarn();

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_PARAMS_H_
