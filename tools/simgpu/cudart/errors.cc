// Error reporting. The last error is per host thread, as CUDA documents; simgpu raises no sticky errors (no
// kernel can fault), so cudaGetLastError always resets it.
#include "tools/simgpu/cudart/cudart_internal.h"

namespace simgpu::cudart {
namespace {

thread_local cudaError_t last_error = cudaSuccess;

}  // namespace

cudaError_t Report(cudaError_t status) {
  if (status != cudaSuccess) last_error = status;
  return status;
}

}  // namespace simgpu::cudart


extern "C" {

cudaError_t cudaGetLastError() {
  cudaError_t e = simgpu::cudart::last_error;
  simgpu::cudart::last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return simgpu::cudart::last_error; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define SIMGPU_CUDA_ERROR(name, text) \
  case name:                          \
    return #name;
#include "tools/simgpu/cudart/error_table.inc"
#undef SIMGPU_CUDA_ERROR
    default:
      return "unrecognized error code";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
#define SIMGPU_CUDA_ERROR(name, text) \
  case name:                          \
    return text;
#include "tools/simgpu/cudart/error_table.inc"
#undef SIMGPU_CUDA_ERROR
    default:
      return "unrecognized error code";
  }
}

}  // extern "C"
