// The shared GEMM path (gemm.h): checks and scalars on the calling thread, arithmetic and faults on the handle's
// stream. The call number is taken on the host, in call order, so it matches the order in which a tracer sees the
// calls. Also the cublasGemm*Ex entry points; the typed routines are in gemm_routines.cc.
#include <cstdint>
#include <cstring>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cublas/gemm.h"
#include "tools/simgpu/cublas/handle.h"

namespace simgpu::cublas {
namespace {

void ApplyGemmFaults(const std::vector<Fault>& faults, const GemmDesc& d) {
  const uint64_t per_matrix = static_cast<uint64_t>(d.m) * static_cast<uint64_t>(d.n);
  const uint64_t total = per_matrix * static_cast<uint64_t>(d.batch);
  const long long bytes = static_cast<long long>(DataTypeBytes(d.c_type));
  for (const Fault& f : faults) {
    CheckFaultElement(f, total);
    const int64_t b = f.elem / per_matrix, r = f.elem % per_matrix;
    const int64_t j = r / d.m, i = r % d.m;
    char* base = d.c_array != nullptr ? static_cast<char*>(d.c_array[b])
                                      : static_cast<char*>(d.c) + b * d.stride_c * bytes;
    ApplyElementFault(f, base + (j * d.ldc + i) * bytes, d.c_type);
  }
}

}  // namespace

cublasStatus_t Gemm(cublasHandle_t handle, const GemmDesc& d, cublasComputeType_t compute, const void* alpha,
                    const void* beta) {
  if (!IsLiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  GemmMath math = GemmMath::kF32;
  cublasStatus_t status = CheckGemm(d, compute, handle->math_mode, &math);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int saved_device = CurrentDevice();
  SetCurrentDevice(handle->device);
  Stream* stream = ResolveStream(handle->stream);
  SetCurrentDevice(saved_device);
  if (stream == nullptr) return CUBLAS_STATUS_EXECUTION_FAILED;

  const int64_t call = NextCallIndex(FaultSite::kGemm);
  std::vector<Fault> faults = MatchingFaults(FaultSite::kGemm, call);
  if (d.m == 0 || d.n == 0 || d.batch == 0) {
    if (!faults.empty()) ApplyGemmFaults(faults, d);  // reports the out-of-range element and exits
    return CUBLAS_STATUS_SUCCESS;
  }
  // Scalars: copied now in host pointer mode, read on the stream in device pointer mode.
  const bool device_scalars = handle->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  const size_t scale_bytes = ScaleBytes(math);
  uint64_t host_alpha = 0, host_beta = 0;
  if (!device_scalars) {
    memcpy(&host_alpha, alpha, scale_bytes);
    memcpy(&host_beta, beta, scale_bytes);
  }
  Enqueue(stream, [d, math, call, faults = std::move(faults), device_scalars, host_alpha, host_beta, alpha, beta,
                   scale_bytes] {
    uint64_t a = host_alpha, b = host_beta;
    if (device_scalars) {
      memcpy(&a, alpha, scale_bytes);
      memcpy(&b, beta, scale_bytes);
    }
    ComputeGemm(d, math, call, &a, &b);
    if (!faults.empty()) ApplyGemmFaults(faults, d);
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace simgpu::cublas

namespace simgpu::cublas {

GemmDesc MakeDesc(cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* A,
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

}  // namespace simgpu::cublas

namespace {

using simgpu::cublas::GemmDesc;
using simgpu::cublas::MakeDesc;

cublasStatus_t StridedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                         int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                         long long strideA, const void* B, cudaDataType Btype, int64_t ldb, long long strideB,
                         const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long strideC,
                         int64_t batchCount, cublasComputeType_t computeType) {
  GemmDesc d = MakeDesc(transa, transb, m, n, k, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc);
  d.stride_a = strideA;
  d.stride_b = strideB;
  d.stride_c = strideC;
  d.batch = batchCount;
  return simgpu::cublas::Gemm(handle, d, computeType, alpha, beta);
}

cublasStatus_t BatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                         int64_t n, int64_t k, const void* alpha, const void* const Aarray[], cudaDataType Atype,
                         int64_t lda, const void* const Barray[], cudaDataType Btype, int64_t ldb, const void* beta,
                         void* const Carray[], cudaDataType Ctype, int64_t ldc, int64_t batchCount,
                         cublasComputeType_t computeType) {
  GemmDesc d = MakeDesc(transa, transb, m, n, k, nullptr, Atype, lda, nullptr, Btype, ldb, nullptr, Ctype, ldc);
  d.a_array = Aarray;
  d.b_array = Barray;
  d.c_array = Carray;
  d.batch = batchCount;
  return simgpu::cublas::Gemm(handle, d, computeType, alpha, beta);
}

}  // namespace

extern "C" {

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return simgpu::cublas::Gemm(handle, MakeDesc(transa, transb, m, n, k, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc),
                              computeType, alpha, beta);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                               int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype,
                               int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, const void* beta, void* C,
                               cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType,
                               cublasGemmAlgo_t algo) {
  return simgpu::cublas::Gemm(handle, MakeDesc(transa, transb, m, n, k, A, Atype, lda, B, Btype, ldb, C, Ctype, ldc),
                              computeType, alpha, beta);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return StridedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                   Ctype, ldc, strideC, batchCount, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                             const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                                             long long int strideA, const void* B, cudaDataType Btype, int64_t ldb,
                                             long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                             int64_t ldc, long long int strideC, int64_t batchCount,
                                             cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return StridedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                   Ctype, ldc, strideC, batchCount, computeType);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* const Aarray[], cudaDataType Atype,
                                   int lda, const void* const Barray[], cudaDataType Btype, int ldb, const void* beta,
                                   void* const Carray[], cudaDataType Ctype, int ldc, int batchCount,
                                   cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return BatchedEx(handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray,
                   Ctype, ldc, batchCount, computeType);
}

cublasStatus_t cublasGemmBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                      int64_t m, int64_t n, int64_t k, const void* alpha, const void* const Aarray[],
                                      cudaDataType Atype, int64_t lda, const void* const Barray[],
                                      cudaDataType Btype, int64_t ldb, const void* beta, void* const Carray[],
                                      cudaDataType Ctype, int64_t ldc, int64_t batchCount,
                                      cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return BatchedEx(handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta, Carray,
                   Ctype, ldc, batchCount, computeType);
}

}  // extern "C"
