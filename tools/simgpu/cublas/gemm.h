// simgpu's cuBLAS GEMMs (libcublas.so.13): cublasSgemm_v2(_64), cublasGemmEx(_64), cublasGemmStridedBatchedEx(_64).
//
// Semantics, as cuBLAS documents them: column-major C = alpha * op(A) * op(B) + beta * C with op(X) = X for
// CUBLAS_OP_N and the transpose for CUBLAS_OP_T and CUBLAS_OP_C (the same for real types); op(A) is m x k, op(B)
// k x n, C m x n; element (i, j) of a matrix X with leading dimension ldX is X[i + j * ldX]; batch b of a strided
// batched call adds b * strideX elements to each base pointer.
//
// Supported types (cuBLAS's cublasGemmEx table for CUBLAS_COMPUTE_32F, scale type float):
//   A = B = CUDA_R_32F, C = CUDA_R_32F;  A = B = CUDA_R_16F, C = CUDA_R_16F or CUDA_R_32F;
//   A = B = CUDA_R_16BF, C = CUDA_R_16BF or CUDA_R_32F.
// computeType CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, or the legacy value CUDA_R_32F (0); anything else
// returns CUBLAS_STATUS_NOT_SUPPORTED (simgpu does not emulate TF32, FP16 or FP64 compute). The TF32 math modes are
// stored but do not change the arithmetic: simgpu's FP32 results are more accurate than a TF32 GPU's.
//
// Arithmetic (one fixed order, deterministic): every operand element is widened to FP32 exactly; for each output
// element acc = sum over p = 0, 1, ..., k-1 of a(i,p) * b(p,j), each product rounded to FP32 and added to the FP32
// accumulator in that order (no fused multiply-add); then t = alpha * acc, and when beta != 0, t = t + beta * c
// (each operation rounded to FP32); t is stored in C's type rounded to nearest, ties to even (kernels/dtype.h).
// When beta == 0, C is not read (NaN or Inf in C does not propagate); when alpha == 0 or k == 0, A and B are not
// read. alpha and beta are floats read from the host at the call (CUBLAS_POINTER_MODE_HOST) or, in
// CUBLAS_POINTER_MODE_DEVICE, from "device" memory when the GEMM runs on its stream.
//
// Status codes: CUBLAS_STATUS_NOT_INITIALIZED for a null or destroyed handle; CUBLAS_STATUS_INVALID_VALUE for
// m, n, k or batchCount < 0, an unknown operation, lda < max(1, transa == N ? m : k), ldb < max(1, transb == N ?
// k : n), ldc < max(1, m), or a null alpha or beta; CUBLAS_STATUS_NOT_SUPPORTED for other type or compute-type
// combinations; CUBLAS_STATUS_EXECUTION_FAILED when the handle's stream is not a live stream.
//
// Work runs on the handle's stream (simgpu::Enqueue): the call returns before C is written.
//
// Call counting and faults: every GEMM call that returns CUBLAS_STATUS_SUCCESS, through any entry point above,
// takes the next per-process call number (0-based, in host call order; a batched call is one call). After the
// call's output is written, simgpu::MatchingFaults(kGemm, call) are applied on the stream worker. A fault's elem
// is the linear index of an element among the call's m * n * batchCount logical outputs, column-major within a
// matrix and batch-major: elem = b * (m * n) + j * m + i names C[b * strideC + j * ldc + i]. When ldc == m and
// strideC == m * n (or batchCount == 1) this is the index into the output buffer. An elem outside the output
// (m == 0 or n == 0 included) stops the process with status 2.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_H_
#define TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_H_

#include <cublas_api.h>

#include <cstdint>

namespace simgpu::cublas {

// One (strided batched) GEMM, as the entry points pass it to the arithmetic.
struct GemmDesc {
  cublasOperation_t trans_a = CUBLAS_OP_N;
  cublasOperation_t trans_b = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  cudaDataType a_type = CUDA_R_32F;
  int64_t lda = 1;
  long long stride_a = 0;
  const void* b = nullptr;
  cudaDataType b_type = CUDA_R_32F;
  int64_t ldb = 1;
  long long stride_b = 0;
  void* c = nullptr;
  cudaDataType c_type = CUDA_R_32F;
  int64_t ldc = 1;
  long long stride_c = 0;
  int64_t batch = 1;
};

// The argument checks above, in cuBLAS's order (dimensions and leading dimensions, then types).
cublasStatus_t CheckGemm(const GemmDesc& desc, cublasComputeType_t compute);

// Runs the arithmetic above on the calling thread. Requires CheckGemm(desc, ...) == CUBLAS_STATUS_SUCCESS.
void ComputeGemm(const GemmDesc& desc, float alpha, float beta);

}  // namespace simgpu::cublas

#endif  // TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_H_
