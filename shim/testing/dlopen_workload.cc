// shim_dlopen_workload OUTDIR [--old-dlsym]: cuBLAS the way JAX/XLA reaches it: dlopen("libcublas.so.13",
// RTLD_LOCAL) and every entry point through dlsym(handle, name) (with --old-dlsym through glibc's older version of
// dlsym, dlsym@GLIBC_2.2.5, as binaries built before glibc 2.34 call it). seq 0: Sgemm C1 = A·B; seq 1: GemmEx
// (FP32) C2 = A·B + 0.5·C0. Writes a.bin, b.bin, c0.bin, c1.bin, c2.bin (column-major, dense) into OUTDIR and
// prints "interposer_calls N" (the program's own RTLD_NEXT interposer, dlnext_interposer.cc).
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "shim/testing/cuda_upload.h"

extern "C" long dlnext_interposer_calls();

namespace {

[[noreturn]] void Die(const std::string& what) {
  fprintf(stderr, "shim_dlopen_workload: %s\n", what.c_str());
  exit(1);
}

using ttrace::shim::testing::Upload;
using DlsymFn = void* (*)(void*, const char*);
DlsymFn g_dlsym = &dlsym;
void* g_cublas = nullptr;

template <typename Fn>
Fn Find(const char* name) {
  void* p = g_dlsym(g_cublas, name);
  if (p == nullptr) Die(std::string("dlsym ") + name + ": " + dlerror());
  return reinterpret_cast<Fn>(p);
}

void Write(const std::string& path, const std::vector<float>& v) {
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr || fwrite(v.data(), 4, v.size(), f) != v.size() || fclose(f) != 0) Die("writing " + path);
}


}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: shim_dlopen_workload OUTDIR [--old-dlsym]");
  const std::string out = argv[1];
  if (argc > 2 && strcmp(argv[2], "--old-dlsym") == 0) {
    g_dlsym = reinterpret_cast<DlsymFn>(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5"));
    if (g_dlsym == nullptr) Die("no dlsym@GLIBC_2.2.5");
  }
  g_cublas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (g_cublas == nullptr) Die(std::string("dlopen: ") + dlerror());
  auto create = Find<decltype(&cublasCreate_v2)>("cublasCreate_v2");
  auto destroy = Find<decltype(&cublasDestroy_v2)>("cublasDestroy_v2");
  auto sgemm = Find<decltype(&cublasSgemm_v2)>("cublasSgemm_v2");
  auto gemm_ex = Find<cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                         int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                         cublasGemmAlgo_t)>("cublasGemmEx");
  constexpr int m = 8, n = 6, k = 5;
  std::vector<float> a(m * k), b(k * n), c0(m * n), c1(m * n), c2(m * n);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 7) % 13) / 4.0f - 1.5f;
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 5) % 11) / 8.0f - 0.5f;
  for (int i = 0; i < m * n; ++i) c0[i] = static_cast<float>(i % 9) / 2.0f;
  float *da = Upload(a), *db = Upload(b), *dc1 = Upload(c1), *dc2 = Upload(c0);
  cublasHandle_t h;
  if (create(&h) != CUBLAS_STATUS_SUCCESS) Die("cublasCreate");
  const float one = 1.0f, zero = 0.0f, half = 0.5f;
  if (sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &zero, dc1, m) != CUBLAS_STATUS_SUCCESS)
    Die("cublasSgemm");
  if (gemm_ex(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, CUDA_R_32F, m, db, CUDA_R_32F, k, &half, dc2,
              CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    Die("cublasGemmEx");
  if (cudaMemcpy(c1.data(), dc1, c1.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(c2.data(), dc2, c2.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
    Die("cudaMemcpy back");
  destroy(h);
  Write(out + "/a.bin", a);
  Write(out + "/b.bin", b);
  Write(out + "/c0.bin", c0);
  Write(out + "/c1.bin", c1);
  Write(out + "/c2.bin", c2);
  printf("interposer_calls %ld\n", dlnext_interposer_calls());
  return 0;
}
