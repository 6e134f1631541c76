// Internal to libcudnn.so.9 (simgpu): the handle behind cudnnHandle_t, the per-thread last-error message, and
// the status strings.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_HANDLE_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_HANDLE_H_

#include <cudnn.h>

#include "tools/simgpu/core/simgpu.h"

// cuDNN declares cudnnHandle_t as a pointer to this incomplete type; simgpu defines it. A handle is used by one
// host thread at a time, as cuDNN requires, so its fields need no lock.
struct cudnnContext {
  int device = 0;                 // current device at cudnnCreate
  cudaStream_t stream = nullptr;  // as set; resolved at each call (cudaStreamPerThread depends on the thread)
};

namespace simgpu::cudnn {

// True for a handle returned by cudnnCreate and not yet destroyed.
bool IsLiveHandle(cudnnHandle_t handle);

// The simgpu stream that work issued through `handle` runs on, resolved on the calling thread with the handle's
// device current; nullptr when the handle's stream is not a live stream.
Stream* HandleStream(cudnnHandle_t handle);

// Records the calling thread's last error message (what cudnnGetLastErrorString returns once) and returns
// `status`, so that a failing check reads  return Fail(CUDNN_STATUS_BAD_PARAM, "why");
cudnnStatus_t Fail(cudnnStatus_t status, const char* message);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_HANDLE_H_
