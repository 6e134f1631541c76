// Internal to libcudart.so.13 (simgpu): the per-thread last-error record every entry point reports through.
#ifndef TTRACE_TOOLS_SIMGPU_CUDART_CUDART_INTERNAL_H_
#define TTRACE_TOOLS_SIMGPU_CUDART_CUDART_INTERNAL_H_

#include <cuda_runtime_api.h>

namespace simgpu::cudart {

// Returns `status`; a status other than cudaSuccess also becomes the calling thread's last error
// (cudaGetLastError / cudaPeekAtLastError), as every CUDA runtime call does.
cudaError_t Report(cudaError_t status);

// The current device ordinal when it is valid, else -1.
int ValidCurrentDevice();

// cudaFree of memory that cudaMallocAsync allocated: drops it from its pool's accounting (memory_pool.cc).
void ForgetAsyncAllocation(void* ptr);

}  // namespace simgpu::cudart

#endif  // TTRACE_TOOLS_SIMGPU_CUDART_CUDART_INTERNAL_H_
