// Run on simgpu by ctest: exits 0 when the runtime calls around the kernel work and the launch reports
// cudaErrorNoKernelImageForDevice (simgpu runs no device code).
#include <cuda_runtime.h>

#include <cstdio>

__global__ void Fill(float* p, float v) { p[threadIdx.x] = v; }

int main() {
  float* d = nullptr;
  if (cudaMalloc(&d, 64 * sizeof(float)) != cudaSuccess) return 10;
  if (cudaMemset(d, 0, 64 * sizeof(float)) != cudaSuccess) return 11;
  Fill<<<1, 64>>>(d, 3.0f);
  const cudaError_t launch = cudaGetLastError();
  float h[64] = {1.0f};
  if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 12;
  if (cudaFree(d) != cudaSuccess) return 13;
  printf("launch: %s, h[0] = %g\n", cudaGetErrorName(launch), h[0]);
  return launch == cudaErrorNoKernelImageForDevice && h[0] == 0.0f ? 0 : 1;
}
