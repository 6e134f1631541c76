// Internal to libcublas.so.13 (simgpu): the handle behind cublasHandle_t and its registry.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLAS_HANDLE_H_
#define TTRACE_TOOLS_SIMGPU_CUBLAS_HANDLE_H_

#include <cublas_api.h>

#include <cstddef>

// cuBLAS declares cublasHandle_t as a pointer to this incomplete type; simgpu defines it. A handle is used by one
// host thread at a time, as cuBLAS requires, so its fields need no lock.
struct cublasContext {
  int device = 0;                    // current device at cublasCreate
  cudaStream_t stream = nullptr;     // as set, resolved at each call (cudaStreamPerThread depends on the thread)
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;         // user workspace (unused by simgpu's arithmetic, kept for Get calls)
  size_t workspace_bytes = 0;
};

namespace simgpu::cublas {

// True for a handle returned by cublasCreate_v2 and not yet destroyed.
bool IsLiveHandle(cublasHandle_t handle);

}  // namespace simgpu::cublas

#endif  // TTRACE_TOOLS_SIMGPU_CUBLAS_HANDLE_H_
