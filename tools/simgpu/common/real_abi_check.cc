// A program built the ordinary way against NVIDIA's toolkit (real headers, linked with NVIDIA's libcudart.so and
// libcublas.so; see CMakeLists.txt) and run with LD_LIBRARY_PATH=<simgpu lib dir>. It checks that the dynamic
// loader bound its versioned references to simgpu's libraries in argv[1] and that a copy + GEMM on a stream
// gives the expected result. Exit 0 on success, 1 with a message otherwise.
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

bool FromDir(const char* symbol, const char* version, const std::string& dir) {
  void* address = dlvsym(RTLD_DEFAULT, symbol, version);
  Dl_info info;
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    fprintf(stderr, "%s@%s is not defined in the process\n", symbol, version);
    return false;
  }
  if (std::string(info.dli_fname).rfind(dir, 0) != 0) {
    fprintf(stderr, "%s@%s comes from %s, not from %s\n", symbol, version, info.dli_fname, dir.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SIMGPU_LIB_DIR\n", argv[0]);
    return 1;
  }
  const std::string dir = argv[1];
  if (!FromDir("cudaMalloc", "libcudart.so.13", dir) || !FromDir("cudaMemcpyAsync", "libcudart.so.13", dir) ||
      !FromDir("cublasSgemm_v2", "libcublas.so.13", dir) || !FromDir("cublasGemmEx", "libcublas.so.13", dir)) {
    return 1;
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || strstr(prop.name, "simgpu") == nullptr) {
    fprintf(stderr, "cudaGetDeviceProperties did not describe a simgpu device\n");
    return 1;
  }
  cudaStream_t stream;
  cublasHandle_t handle;
  float *a, *c;
  if (cudaStreamCreate(&stream) != cudaSuccess || cublasCreate_v2(&handle) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream_v2(handle, stream) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(reinterpret_cast<void**>(&a), 4 * sizeof(float)) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&c), 4 * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "set-up failed\n");
    return 1;
  }
  const float host_a[4] = {1, 2, 3, 4};  // column-major [[1, 3], [2, 4]]
  float host_c[4] = {};
  const float alpha = 1.0f, beta = 0.0f;
  cudaMemcpyAsync(a, host_a, sizeof host_a, cudaMemcpyHostToDevice, stream);
  if (cublasSgemm_v2(handle, CUBLAS_OP_N, CUBLAS_OP_T, 2, 2, 2, &alpha, a, 2, a, 2, &beta, c, 2) !=
      CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasSgemm_v2 failed\n");
    return 1;
  }
  cudaMemcpyAsync(host_c, c, sizeof host_c, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  const float expected[4] = {10, 14, 14, 20};  // A * A^T
  if (memcmp(host_c, expected, sizeof expected) != 0) {
    fprintf(stderr, "A * A^T = [%g %g %g %g], expected [10 14 14 20]\n", host_c[0], host_c[1], host_c[2],
            host_c[3]);
    return 1;
  }
  cublasDestroy_v2(handle);
  cudaFree(a);
  cudaFree(c);
  cudaStreamDestroy(stream);
  printf("OK: NVIDIA-linked program ran on simgpu from %s\n", dir.c_str());
  return 0;
}
