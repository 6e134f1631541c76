// A stand-in libcublas.so.13 whose GEMM is built on cuBLASLt, as NVIDIA's cuBLAS is on real systems: its
// cublasSgemm_v2 calls cublasLtMatmul through the ordinary (interposable) reference, which under libttrace.so binds
// to the shim's cublasLtMatmul export. Handles remember their stream; pointer mode host, default math. Only what
// nested_test needs; built by the tests into build/tests/nested, never used elsewhere.
#include <cublasLt.h>
#include <cublas_api.h>

namespace {
struct Handle {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
};
Handle* H(cublasHandle_t h) { return reinterpret_cast<Handle*>(h); }
}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  auto* h = new Handle;
  const cublasStatus_t s = cublasLtCreate(&h->lt);
  *handle = reinterpret_cast<cublasHandle_t>(h);
  return s;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  cublasLtDestroy(H(handle)->lt);
  delete H(handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  H(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  *stream = H(handle)->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t, cublasPointerMode_t* mode) {
  *mode = CUBLAS_POINTER_MODE_HOST;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t, cublasMath_t* mode) {
  *mode = CUBLAS_DEFAULT_MATH;
  return CUBLAS_STATUS_SUCCESS;
}

// C = alpha op(A) op(B) + beta C through cublasLtMatmul (D = C in place), column-major FP32.
cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                              int n, int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasStatus_t s = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, transa == CUBLAS_OP_N ? m : k, transa == CUBLAS_OP_N ? k : m, lda);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, transb == CUBLAS_OP_N ? k : n, transb == CUBLAS_OP_N ? n : k, ldb);
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, ldc);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmul(H(handle)->lt, desc, alpha, A, la, B, lb, beta, C, lc, C, lc, nullptr, nullptr, 0,
                       H(handle)->stream);
  if (lc != nullptr) cublasLtMatrixLayoutDestroy(lc);
  if (lb != nullptr) cublasLtMatrixLayoutDestroy(lb);
  if (la != nullptr) cublasLtMatrixLayoutDestroy(la);
  if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  return s;
}

}  // extern "C"
