// Diagnostics of simgpu's NCCL. Every message becomes the process's last error (ncclGetLastError, which NCCL
// also keeps per process, whatever communicator is passed). Thread-safe.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_LOG_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_LOG_H_

#include <string>

namespace simgpu::nccl {

// An argument or usage error returned to the caller: printed only when NCCL_DEBUG asks for warnings.
void Warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// A failure that leaves a communicator unusable (timeout, dead peer, mismatched calls): always printed.
void Error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// The last message, as a pointer that stays valid until the next message from any thread.
const char* LastError();

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_LOG_H_
