// Device fingerprint: each thread sums the terms of a grid-strided set of words, a block reduces in shared memory,
// and blocks combine with a 64-bit atomicAdd (wrap-around addition is associative and commutative, so the result
// equals the CPU twin's exactly, whatever the launch shape).
#include <cuda_runtime.h>

#include "kernels/fingerprint.h"

namespace ttrace::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void FingerprintKernel(const unsigned char* data, size_t bytes, unsigned long long* out) {
  __shared__ unsigned long long partial[kThreads];
  const size_t words = (bytes + 7) / 8;
  unsigned long long sum = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t w = 0;
    const size_t at = i * 8;
    if (at + 8 <= bytes && (reinterpret_cast<uintptr_t>(data + at) & 7) == 0) {
      w = *reinterpret_cast<const uint64_t*>(data + at);
    } else {
      for (size_t b = 0; b < 8 && at + b < bytes; ++b) w |= static_cast<uint64_t>(data[at + b]) << (8 * b);
    }
    sum += FingerprintTerm(w, i);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

__global__ void XorLength(unsigned long long* out, size_t bytes) { *out ^= static_cast<unsigned long long>(bytes); }

}  // namespace

bool FingerprintDevice(const void* data, size_t bytes, uint64_t* out_device, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  auto* out = reinterpret_cast<unsigned long long*>(out_device);
  if (cudaMemsetAsync(out, 0, sizeof *out, s) != cudaSuccess) return false;
  const size_t words = (bytes + 7) / 8;
  int blocks = static_cast<int>((words + kThreads - 1) / kThreads);
  if (blocks > 1024) blocks = 1024;
  if (blocks < 1) blocks = 1;
  FingerprintKernel<<<blocks, kThreads, 0, s>>>(static_cast<const unsigned char*>(data), bytes, out);
  XorLength<<<1, 1, 0, s>>>(out, bytes);
  return cudaGetLastError() == cudaSuccess;
}

bool HaveDeviceKernels() { return true; }

}  // namespace ttrace::kernels
