// simgpu's cuBLAS GEMMs (libcublas.so.13). Entry points (each also as _64 with 64-bit sizes):
//   cublasSgemm_v2, cublasDgemm_v2, cublasHgemm, cublasSgemmEx, cublasGemmEx,
//   cublasSgemmBatched, cublasDgemmBatched, cublasHgemmBatched, cublasGemmBatchedEx      (arrays of pointers)
//   cublasSgemmStridedBatched, cublasDgemmStridedBatched, cublasHgemmStridedBatched,
//   cublasGemmStridedBatchedEx                                                           (strided)
//
// Semantics, as cuBLAS documents them: column-major C = alpha * op(A) * op(B) + beta * C with op(X) = X for
// CUBLAS_OP_N and the transpose for CUBLAS_OP_T and CUBLAS_OP_C (the same for real types); op(A) is m x k, op(B)
// k x n, C m x n; element (i, j) of a matrix X with leading dimension ldX is X[i + j * ldX]. Batch b of a strided
// call adds b * strideX elements to each base pointer; batch b of a pointer-array call uses Xarray[b] (the arrays
// live in device memory and are read when the GEMM runs on its stream).
//
// Compute types and type combinations (cuBLAS's cublasGemmEx table; anything else is NOT_SUPPORTED):
//   compute                          scale   A = B        C          simgpu arithmetic (GemmMath)
//   16F, 16F_PEDANTIC                half    16F          16F        kF16
//   32F, 32F_PEDANTIC                float   16BF         16BF, 32F  kF32
//                                            16F          16F, 32F
//                                            8I           32F
//                                            32F          32F
//   32F_FAST_16F / _16BF / _TF32     float   32F          32F        kF32Fast16F / kF32Fast16BF / kF32Tf32
//   64F, 64F_PEDANTIC                double  64F          64F        kF64
//   32I, 32I_PEDANTIC                int32   8I           32I        kI32
// Complex types (C_8I, C_32F, C_64F) and the emulated compute types (32F_EMULATED_16BFX9,
// 64F_EMULATED_FIXEDPOINT) are NOT_SUPPORTED in simgpu (a deviation from cuBLAS). A cudaDataType passed as
// computeType (CUDA_R_16F, CUDA_R_32F, CUDA_R_64F, CUDA_R_32I) maps as cublasMigrateComputeType in cublas_api.h
// does (to the _PEDANTIC type when the handle's math mode is CUBLAS_PEDANTIC_MATH).
// Routines: Sgemm = 32F (32F_PEDANTIC under CUBLAS_PEDANTIC_MATH); SgemmEx = GemmEx with 32F; Dgemm = 64F; Hgemm
// = 16F. Math modes on a 32F (not _PEDANTIC) compute with FP32 A and B: CUBLAS_TF32_TENSOR_OP_MATH makes it
// kF32Tf32, the deprecated CUBLAS_TENSOR_OP_MATH makes it kF32Fast16F (cublas_api.h: "same effect as using
// CUBLAS_COMPUTE_32F_FAST_16F"); other modes and flags do not change the arithmetic.
//
// Arithmetic (tools/simgpu/common/accumulate.h states the orders and accumulators):
//   Inputs are widened exactly (8I, 16F, 16BF to FP32); then kF32Tf32 rounds each A and B element to TF32 (10
//   fraction bits, round to nearest even; exponent range of FP32), kF32Fast16F to binary16 and kF32Fast16BF to
//   bfloat16 (round to nearest even; overflow to infinity).
//   Each output element's k products are summed by AccumPlan(AccumFromEnv(), precision, k, call) with precision
//   kFp32 (kF32*), kFp16 (kF16) or kFp64 (kF64); call is the GEMM's call number (below), so random order varies
//   per call; all batches of a call share its order. kI32 sums int8 * int8 products in int32, wrapping modulo 2^32
//   (exact, so no order applies).
//   Epilogue in the scale type: t = alpha * acc, then t = t + beta * c when beta != 0, each operation rounded to
//   the scale type (binary16 for kF16; int32 arithmetic wraps); t is stored in C's type, rounded to nearest even.
//   When beta == 0 C is not read (NaN or Inf in C does not propagate); when alpha == 0 or k == 0, A and B are not
//   read and t = +0 before the beta term. No fused multiply-adds anywhere.
//   alpha and beta have the scale type, read at the call (CUBLAS_POINTER_MODE_HOST) or, in
//   CUBLAS_POINTER_MODE_DEVICE, from device memory when the GEMM runs on its stream.
//
// Status codes: CUBLAS_STATUS_NOT_INITIALIZED for a null or destroyed handle; CUBLAS_STATUS_INVALID_VALUE for
// m, n, k or batchCount < 0, an unknown operation, lda < max(1, transa == N ? m : k), ldb < max(1, transb == N ?
// k : n), ldc < max(1, m), or a null alpha or beta; then CUBLAS_STATUS_NOT_SUPPORTED for a type combination
// outside the table; CUBLAS_STATUS_EXECUTION_FAILED when the handle's stream is not a live stream.
//
// Work runs on the handle's stream (simgpu::Enqueue): the call returns before C is written.
//
// Call counting and faults: every GEMM call that passes the checks, through any entry point above, takes the next
// number of simgpu::NextCallIndex(FaultSite::kGemm) (shared with cuBLASLt; a batched call is one call). After
// the call's output is written, the matching gemm faults are applied on the stream worker. A fault's elem is the
// index of an element among the call's m * n * batchCount logical outputs, column-major within a matrix and
// batch-major: elem = b * (m * n) + j * m + i names element (i, j) of batch b, C[b * strideC + j * ldc + i] or
// Carray[b][j * ldc + i]. An elem outside the output (m == 0 or n == 0 included) stops the process with status 2.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_H_
#define TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_H_

#include <cublas_api.h>

#include <cstdint>

namespace simgpu::cublas {

enum class GemmMath { kF32, kF32Tf32, kF32Fast16F, kF32Fast16BF, kF16, kF64, kI32 };

// One GEMM call (strided or pointer-array batched), as the entry points pass it to the arithmetic.
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
  // Pointer-array batched calls: device arrays of batch pointers, used instead of a, b, c and the strides.
  const void* const* a_array = nullptr;
  const void* const* b_array = nullptr;
  void* const* c_array = nullptr;
};

// A single (unbatched) GEMM's descriptor.
GemmDesc MakeDesc(cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n, int64_t k, const void* A,
                  cudaDataType Atype, int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, void* C,
                  cudaDataType Ctype, int64_t ldc);

// The argument checks above, in cuBLAS's order (dimensions and leading dimensions, then types). On success sets
// *math to the arithmetic the compute type, the types and the handle's math mode select.
cublasStatus_t CheckGemm(const GemmDesc& desc, cublasComputeType_t compute, cublasMath_t math_mode,
                         GemmMath* math);

// Bytes of one alpha/beta scalar for `math` (the scale type of the table above).
size_t ScaleBytes(GemmMath math);

// The shared path of every entry point: handle, argument and type checks, call number, scalars, and the work
// (ComputeGemm, then faults) enqueued on the handle's stream. compute may be a cudaDataType value (legacy).
cublasStatus_t Gemm(cublasHandle_t handle, const GemmDesc& desc, cublasComputeType_t compute, const void* alpha,
                    const void* beta);

// The compute type of a typed routine (Sgemm: CUDA_R_32F, Dgemm: CUDA_R_64F, Hgemm: CUDA_R_16F): the _PEDANTIC
// variant when the handle's math mode is CUBLAS_PEDANTIC_MATH. Requires a live handle.
cublasComputeType_t RoutineCompute(cublasHandle_t handle, cudaDataType type);

// Runs the arithmetic above for call number `call` on the calling thread; alpha and beta point to scalars of the
// scale type. Requires CheckGemm(desc, ...) == CUBLAS_STATUS_SUCCESS with the same math.
void ComputeGemm(const GemmDesc& desc, GemmMath math, int64_t call, const void* alpha, const void* beta);

}  // namespace simgpu::cublas

#endif  // TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_H_
