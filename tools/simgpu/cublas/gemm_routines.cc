// The typed GEMM routines (S/D/H gemm, their batched and strided batched forms, SgemmEx): each builds a GemmDesc
// with its fixed types and the routine's compute type (gemm.h) and takes the shared path.
#include <cuda_fp16.h>

#include "tools/simgpu/cublas/gemm.h"
#include "tools/simgpu/cublas/handle.h"

namespace {

using simgpu::cublas::GemmDesc;

cublasStatus_t Typed(cublasHandle_t handle, cudaDataType type, cublasOperation_t transa, cublasOperation_t transb,
                     int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, int64_t lda, const void* B,
                     int64_t ldb, const void* beta, void* C, int64_t ldc) {
  if (!simgpu::cublas::IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  return simgpu::cublas::Gemm(handle,
                              simgpu::cublas::MakeDesc(transa, transb, m, n, k, A, type, lda, B, type, ldb, C, type,
                                                       ldc),
                              simgpu::cublas::RoutineCompute(handle, type), alpha, beta);
}

cublasStatus_t TypedStrided(cublasHandle_t handle, cudaDataType type, cublasOperation_t transa,
                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha,
                            const void* A, int64_t lda, long long strideA, const void* B, int64_t ldb,
                            long long strideB, const void* beta, void* C, int64_t ldc, long long strideC,
                            int64_t batchCount) {
  if (!simgpu::cublas::IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  GemmDesc d = simgpu::cublas::MakeDesc(transa, transb, m, n, k, A, type, lda, B, type, ldb, C, type, ldc);
  d.stride_a = strideA;
  d.stride_b = strideB;
  d.stride_c = strideC;
  d.batch = batchCount;
  return simgpu::cublas::Gemm(handle, d, simgpu::cublas::RoutineCompute(handle, type), alpha, beta);
}

cublasStatus_t TypedBatched(cublasHandle_t handle, cudaDataType type, cublasOperation_t transa,
                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* alpha,
                            const void* const* Aarray, int64_t lda, const void* const* Barray, int64_t ldb,
                            const void* beta, void* const* Carray, int64_t ldc, int64_t batchCount) {
  if (!simgpu::cublas::IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  GemmDesc d = simgpu::cublas::MakeDesc(transa, transb, m, n, k, nullptr, type, lda, nullptr, type, ldb, nullptr,
                                        type, ldc);
  d.a_array = Aarray;
  d.b_array = Barray;
  d.c_array = Carray;
  d.batch = batchCount;
  return simgpu::cublas::Gemm(handle, d, simgpu::cublas::RoutineCompute(handle, type), alpha, beta);
}

// Pointer arrays of a typed routine as the type-erased arrays GemmDesc holds (same representation).
const void* const* Erase(const void* const* p) { return p; }
template <typename T>
const void* const* Erase(const T* const* p) { return reinterpret_cast<const void* const*>(p); }
template <typename T>
void* const* EraseOut(T* const* p) { return reinterpret_cast<void* const*>(p); }

cublasStatus_t SgemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                       int64_t n, int64_t k, const float* alpha, const void* A, cudaDataType Atype, int64_t lda,
                       const void* B, cudaDataType Btype, int64_t ldb, const float* beta, void* C,
                       cudaDataType Ctype, int64_t ldc) {
  if (!simgpu::cublas::IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  return simgpu::cublas::Gemm(
      handle, simgpu::cublas::MakeDesc(transa, transb, m, n, k, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc),
      simgpu::cublas::RoutineCompute(handle, CUDA_R_32F), alpha, beta);
}

}  // namespace

extern "C" {

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return Typed(handle, CUDA_R_32F, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                 int64_t m, int64_t n, int64_t k, const float* alpha, const float* A, int64_t lda,
                                 const float* B, int64_t ldb, const float* beta, float* C, int64_t ldc) {
  return Typed(handle, CUDA_R_32F, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double* alpha, const double* A, int lda, const double* B, int ldb,
                              const double* beta, double* C, int ldc) {
  return Typed(handle, CUDA_R_64F, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasDgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                 int64_t m, int64_t n, int64_t k, const double* alpha, const double* A, int64_t lda,
                                 const double* B, int64_t ldb, const double* beta, double* C, int64_t ldc) {
  return Typed(handle, CUDA_R_64F, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const __half* alpha, const __half* A, int lda, const __half* B, int ldb,
                           const __half* beta, __half* C, int ldc) {
  return Typed(handle, CUDA_R_16F, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasHgemm_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                              int64_t n, int64_t k, const __half* alpha, const __half* A, int64_t lda,
                              const __half* B, int64_t ldb, const __half* beta, __half* C, int64_t ldc) {
  return Typed(handle, CUDA_R_16F, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                             int k, const float* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                             cudaDataType Btype, int ldb, const float* beta, void* C, cudaDataType Ctype, int ldc) {
  return SgemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc);
}

cublasStatus_t cublasSgemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                                int64_t n, int64_t k, const float* alpha, const void* A, cudaDataType Atype,
                                int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, const float* beta,
                                void* C, cudaDataType Ctype, int64_t ldc) {
  return SgemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb, long long int strideB,
                                         const float* beta, float* C, int ldc, long long int strideC,
                                         int batchCount) {
  return TypedStrided(handle, CUDA_R_32F, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                      ldc, strideC, batchCount);
}

cublasStatus_t cublasSgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                            const float* alpha, const float* A, int64_t lda, long long int strideA,
                                            const float* B, int64_t ldb, long long int strideB, const float* beta,
                                            float* C, int64_t ldc, long long int strideC, int64_t batchCount) {
  return TypedStrided(handle, CUDA_R_32F, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                      ldc, strideC, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double* alpha, const double* A, int lda,
                                         long long int strideA, const double* B, int ldb, long long int strideB,
                                         const double* beta, double* C, int ldc, long long int strideC,
                                         int batchCount) {
  return TypedStrided(handle, CUDA_R_64F, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                      ldc, strideC, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                            const double* alpha, const double* A, int64_t lda, long long int strideA,
                                            const double* B, int64_t ldb, long long int strideB, const double* beta,
                                            double* C, int64_t ldc, long long int strideC, int64_t batchCount) {
  return TypedStrided(handle, CUDA_R_64F, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                      ldc, strideC, batchCount);
}

cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const __half* alpha, const __half* A, int lda,
                                         long long int strideA, const __half* B, int ldb, long long int strideB,
                                         const __half* beta, __half* C, int ldc, long long int strideC,
                                         int batchCount) {
  return TypedStrided(handle, CUDA_R_16F, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                      ldc, strideC, batchCount);
}

cublasStatus_t cublasHgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                            const __half* alpha, const __half* A, int64_t lda, long long int strideA,
                                            const __half* B, int64_t ldb, long long int strideB, const __half* beta,
                                            __half* C, int64_t ldc, long long int strideC, int64_t batchCount) {
  return TypedStrided(handle, CUDA_R_16F, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C,
                      ldc, strideC, batchCount);
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float* alpha, const float* const Aarray[], int lda,
                                  const float* const Barray[], int ldb, const float* beta, float* const Carray[],
                                  int ldc, int batchCount) {
  return TypedBatched(handle, CUDA_R_32F, transa, transb, m, n, k, alpha, Erase(Aarray), lda, Erase(Barray), ldb,
                      beta, EraseOut(Carray), ldc, batchCount);
}

cublasStatus_t cublasSgemmBatched_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                     int64_t m, int64_t n, int64_t k, const float* alpha,
                                     const float* const Aarray[], int64_t lda, const float* const Barray[],
                                     int64_t ldb, const float* beta, float* const Carray[], int64_t ldc,
                                     int64_t batchCount) {
  return TypedBatched(handle, CUDA_R_32F, transa, transb, m, n, k, alpha, Erase(Aarray), lda, Erase(Barray), ldb,
                      beta, EraseOut(Carray), ldc, batchCount);
}

cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const double* alpha, const double* const Aarray[], int lda,
                                  const double* const Barray[], int ldb, const double* beta, double* const Carray[],
                                  int ldc, int batchCount) {
  return TypedBatched(handle, CUDA_R_64F, transa, transb, m, n, k, alpha, Erase(Aarray), lda, Erase(Barray), ldb,
                      beta, EraseOut(Carray), ldc, batchCount);
}

cublasStatus_t cublasDgemmBatched_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                     int64_t m, int64_t n, int64_t k, const double* alpha,
                                     const double* const Aarray[], int64_t lda, const double* const Barray[],
                                     int64_t ldb, const double* beta, double* const Carray[], int64_t ldc,
                                     int64_t batchCount) {
  return TypedBatched(handle, CUDA_R_64F, transa, transb, m, n, k, alpha, Erase(Aarray), lda, Erase(Barray), ldb,
                      beta, EraseOut(Carray), ldc, batchCount);
}

cublasStatus_t cublasHgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const __half* alpha, const __half* const Aarray[], int lda,
                                  const __half* const Barray[], int ldb, const __half* beta, __half* const Carray[],
                                  int ldc, int batchCount) {
  return TypedBatched(handle, CUDA_R_16F, transa, transb, m, n, k, alpha, Erase(Aarray), lda, Erase(Barray), ldb,
                      beta, EraseOut(Carray), ldc, batchCount);
}

cublasStatus_t cublasHgemmBatched_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                     int64_t m, int64_t n, int64_t k, const __half* alpha,
                                     const __half* const Aarray[], int64_t lda, const __half* const Barray[],
                                     int64_t ldb, const __half* beta, __half* const Carray[], int64_t ldc,
                                     int64_t batchCount) {
  return TypedBatched(handle, CUDA_R_16F, transa, transb, m, n, k, alpha, Erase(Aarray), lda, Erase(Barray), ldb,
                      beta, EraseOut(Carray), ldc, batchCount);
}

}  // extern "C"
