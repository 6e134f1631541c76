// Device-code registration and kernel launches. nvcc-compiled programs register their fat binaries and kernels
// with the runtime at load time (__cudaRegisterFatBinary & co., called from static constructors the compiler
// generates) and launch kernels through __cudaPushCallConfiguration / cudaLaunchKernel. simgpu runs library
// calls on the CPU but cannot run device code: registration is accepted (so such programs load and their library
// calls work), and a kernel launch fails with cudaErrorNoKernelImageForDevice, the error CUDA reports when a
// binary carries no code the device can run.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "tools/simgpu/cudart/cudart_internal.h"

namespace {

struct CallConfiguration {
  dim3 grid, block;
  size_t shared_mem = 0;
  void* stream = nullptr;
};
thread_local CallConfiguration t_config;
int g_module_token;  // the handle registration returns: any non-null, stable address

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void*) { return reinterpret_cast<void**>(&g_module_token); }
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*) {}
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterHostVar(void**, const char*, char*, size_t) {}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_mem, void* stream) {
  t_config = {grid, block, shared_mem, stream};
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_mem, void* stream) {
  *grid = t_config.grid;
  *block = t_config.block;
  *shared_mem = t_config.shared_mem;
  *static_cast<void**>(stream) = t_config.stream;
  return cudaSuccess;
}

// CUDA 13's launch path: the kernel handle is looked up once per kernel, then launched through it.
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(host_function));
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t) {
  return simgpu::cudart::Report(cudaErrorNoKernelImageForDevice);
}

cudaError_t cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  return simgpu::cudart::Report(cudaErrorNoKernelImageForDevice);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void*, void**) {
  return simgpu::cudart::Report(cudaErrorNoKernelImageForDevice);
}

}  // extern "C"
