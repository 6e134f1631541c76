// GEMM entry points: argument checks and scalars on the calling thread, arithmetic and faults on the handle's
// stream (gemm.h states the semantics). The call number is taken on the host, in call order, so it matches the
// order in which a tracer sees the calls.
#include <atomic>
#include <cstdint>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cublas/gemm.h"
#include "tools/simgpu/cublas/handle.h"

namespace simgpu::cublas {
namespace {

std::atomic<int64_t> gemm_calls{0};

size_t ElemBytes(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

void ApplyGemmFaults(const std::vector<Fault>& faults, const GemmDesc& d) {
  const size_t per_matrix = static_cast<size_t>(d.m * d.n);
  const size_t total = per_matrix * static_cast<size_t>(d.batch);
  const size_t bytes = ElemBytes(d.c_type);
  for (const Fault& f : faults) {
    char* ptr = static_cast<char*>(d.c);
    if (static_cast<uint64_t>(f.elem) < total) {
      int64_t b = f.elem / per_matrix, r = f.elem % per_matrix;
      int64_t j = r / d.m, i = r % d.m;
      ptr += (b * d.stride_c + j * d.ldc + i) * static_cast<long long>(bytes);
    }
    FlipBit(f, ptr, bytes, total);
  }
}

cublasStatus_t Gemm(cublasHandle_t handle, const GemmDesc& d, cublasComputeType_t compute, const void* alpha,
                    const void* beta) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasStatus_t status = CheckGemm(d, compute);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int saved_device = CurrentDevice();
  SetCurrentDevice(handle->device);
  Stream* stream = ResolveStream(handle->stream);
  SetCurrentDevice(saved_device);
  if (stream == nullptr) return CUBLAS_STATUS_EXECUTION_FAILED;

  const int64_t call = gemm_calls.fetch_add(1);
  std::vector<Fault> faults = MatchingFaults(FaultSite::kGemm, call);
  if (d.m == 0 || d.n == 0 || d.batch == 0) {
    if (!faults.empty()) ApplyGemmFaults(faults, d);  // reports the out-of-range element and exits
    return CUBLAS_STATUS_SUCCESS;
  }
  const bool device_scalars = handle->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  const float host_alpha = device_scalars ? 0.0f : *static_cast<const float*>(alpha);
  const float host_beta = device_scalars ? 0.0f : *static_cast<const float*>(beta);
  const auto* device_alpha = static_cast<const float*>(alpha);
  const auto* device_beta = static_cast<const float*>(beta);
  Enqueue(stream, [d, faults = std::move(faults), device_scalars, host_alpha, host_beta, device_alpha,
                   device_beta] {
    float a = device_scalars ? *device_alpha : host_alpha;
    float b = device_scalars ? *device_beta : host_beta;
    ComputeGemm(d, a, b);
    if (!faults.empty()) ApplyGemmFaults(faults, d);
  });
  return CUBLAS_STATUS_SUCCESS;
}

GemmDesc Desc(cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* A,
              cudaDataType Atype, int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, void* C,
              cudaDataType Ctype, int64_t ldc) {
  GemmDesc d;
  d.trans_a = transa;
  d.trans_b = transb;
  d.m = m;
  d.n = n;
  d.k = k;
  d.a = A;
  d.a_type = Atype;
  d.lda = lda;
  d.b = B;
  d.b_type = Btype;
  d.ldb = ldb;
  d.c = C;
  d.c_type = Ctype;
  d.ldc = ldc;
  return d;
}

// Sgemm: the legacy compute type of a single-precision routine follows the math mode (pedantic or not), which
// changes nothing in simgpu's arithmetic.
cublasStatus_t Sgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
                     int64_t k, const float* alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                     const float* beta, float* C, int64_t ldc) {
  GemmDesc d = Desc(transa, transb, m, n, k, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, C, CUDA_R_32F, ldc);
  return Gemm(handle, d, CUBLAS_COMPUTE_32F, alpha, beta);
}

cublasStatus_t StridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                              int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                              long long strideA, const void* B, cudaDataType Btype, int64_t ldb, long long strideB,
                              const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long strideC,
                              int64_t batchCount, cublasComputeType_t computeType) {
  GemmDesc d = Desc(transa, transb, m, n, k, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc);
  d.stride_a = strideA;
  d.stride_b = strideB;
  d.stride_c = strideC;
  d.batch = batchCount;
  return Gemm(handle, d, computeType, alpha, beta);
}

}  // namespace
}  // namespace simgpu::cublas

using simgpu::cublas::Desc;
using simgpu::cublas::Gemm;

extern "C" {

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return simgpu::cublas::Sgemm(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                 int64_t m, int64_t n, int64_t k, const float* alpha, const float* A, int64_t lda,
                                 const float* B, int64_t ldb, const float* beta, float* C, int64_t ldc) {
  return simgpu::cublas::Sgemm(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return Gemm(handle, Desc(transa, transb, m, n, k, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc), computeType, alpha,
              beta);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                               int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype,
                               int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, const void* beta, void* C,
                               cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType,
                               cublasGemmAlgo_t algo) {
  return Gemm(handle, Desc(transa, transb, m, n, k, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc), computeType, alpha,
              beta);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return simgpu::cublas::StridedBatched(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                                        strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                             const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                                             long long int strideA, const void* B, cudaDataType Btype, int64_t ldb,
                                             long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                             int64_t ldc, long long int strideC, int64_t batchCount,
                                             cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return simgpu::cublas::StridedBatched(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                                        strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType);
}

}  // extern "C"
