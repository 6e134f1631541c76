// Tunables of simgpu's NCCL, read once from the environment on first use (like NCCL's NCCL_PARAM); thread-safe.
//
//   SIMGPU_NCCL_TIMEOUT_S      seconds a rank waits for its peers (to join a communicator, to reach a collective,
//                              to progress a send/receive) before it gives up with a clear error; default 120.
//   SIMGPU_NCCL_CHUNK_BYTES    size of each rank's staging buffer in the shared segment (collectives move data
//                              through it chunk by chunk) and of each send/receive ring; default 1 MiB, at
//                              least 256, rounded up to a multiple of 64. Fixed per communicator by the rank that
//                              creates its segment.
//   NCCL_DEBUG                 WARN, INFO or TRACE also print argument errors (as NCCL does); failures that
//                              leave a communicator unusable are always printed.
// A malformed value prints a message and the default is used.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_PARAMS_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_PARAMS_H_

#include <cstddef>

namespace simgpu::nccl {

double TimeoutSeconds();
size_t ChunkBytes();
bool DebugWarn();

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_PARAMS_H_
