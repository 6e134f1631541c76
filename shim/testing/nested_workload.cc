// shim_nested_workload: one cublasSgemm (the stand-in cuBLAS of nested_cublas.cc runs it through cublasLtMatmul),
// then the same GEMM through cublasLtMatmul directly. Prints "same N" when both results are bitwise equal.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "shim/testing/cuda_upload.h"
#include "shim/testing/workload_util.h"

namespace {
using ttrace::shim::testing::Die;
using ttrace::shim::testing::Upload;

}  // namespace

int main() {
  constexpr int m = 7, n = 5, k = 6;
  std::vector<float> a(m * k), b(k * n), c(m * n, 0.f);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 5) % 9) / 4.f - 1.f;
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 3) % 7) / 2.f - 1.5f;
  float *da = Upload(a), *db = Upload(b), *dc = Upload(c), *dd = Upload(c);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) Die("cublasCreate");
  const float one = 1.f, zero = 0.f;
  if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &zero, dc, m) != CUBLAS_STATUS_SUCCESS)
    Die("cublasSgemm");
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m) != CUBLAS_STATUS_SUCCESS)
    Die("cublasLt set-up");
  if (cublasLtMatmul(lt, desc, &one, da, la, db, lb, &zero, dd, lc, dd, lc, nullptr, nullptr, 0, nullptr) !=
      CUBLAS_STATUS_SUCCESS)
    Die("cublasLtMatmul");
  std::vector<float> got_c(m * n), got_d(m * n);
  if (cudaMemcpy(got_c.data(), dc, m * n * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(got_d.data(), dd, m * n * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
    Die("download");
  printf("same %d\n", memcmp(got_c.data(), got_d.data(), m * n * 4) == 0 ? 1 : 0);
  return 0;
}
