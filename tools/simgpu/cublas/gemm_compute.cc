// The GEMM arithmetic of gemm.h. op(A) and op(B) of each batch are first widened into dense FP32 panels
// (widening is exact, so this changes nothing in the result). For each output column, the accumulators of all
// m rows advance together, one p at a time: every element still sums its products in order p = 0, 1, ..., k-1,
// and the loop over rows is independent, so the compiler can vectorize it without reassociating anything.
// This file is compiled with -ffp-contract=off: the accumulation must be the stated sequence of rounded
// products and sums, never a fused multiply-add the compiler chose.
#include <cstdint>
#include <vector>

#include "kernels/dtype.h"
#include "tools/simgpu/cublas/gemm.h"

namespace simgpu::cublas {
namespace {

using ttrace::kernels::Bf16ToFloat;
using ttrace::kernels::FloatToBf16;
using ttrace::kernels::FloatToHalf;
using ttrace::kernels::HalfToFloat;

float Load(const void* base, cudaDataType type, int64_t index) {
  switch (type) {
    case CUDA_R_16F:
      return HalfToFloat(static_cast<const uint16_t*>(base)[index]);
    case CUDA_R_16BF:
      return Bf16ToFloat(static_cast<const uint16_t*>(base)[index]);
    default:
      return static_cast<const float*>(base)[index];
  }
}

void Store(void* base, cudaDataType type, int64_t index, float value) {
  switch (type) {
    case CUDA_R_16F:
      static_cast<uint16_t*>(base)[index] = FloatToHalf(value);
      break;
    case CUDA_R_16BF:
      static_cast<uint16_t*>(base)[index] = FloatToBf16(value);
      break;
    default:
      static_cast<float*>(base)[index] = value;
      break;
  }
}

size_t ElemBytes(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

const void* Offset(const void* base, cudaDataType type, long long elems) {
  return static_cast<const char*>(base) + elems * static_cast<long long>(ElemBytes(type));
}

}  // namespace

void ComputeGemm(const GemmDesc& d, float alpha, float beta) {
  const int64_t m = d.m, n = d.n, k = d.k;
  if (m == 0 || n == 0) return;
  const bool use_ab = alpha != 0.0f && k > 0;
  std::vector<float> a_cols(use_ab ? k * m : 0);  // a_cols[p * m + i] = op(A)(i, p)
  std::vector<float> b_cols(use_ab ? k * n : 0);  // b_cols[j * k + p] = op(B)(p, j)
  std::vector<float> acc(m);
  for (int64_t batch = 0; batch < d.batch; ++batch) {
    const void* a = Offset(d.a, d.a_type, batch * d.stride_a);
    const void* b = Offset(d.b, d.b_type, batch * d.stride_b);
    void* c = const_cast<void*>(Offset(d.c, d.c_type, batch * d.stride_c));
    if (use_ab) {
      for (int64_t p = 0; p < k; ++p) {
        for (int64_t i = 0; i < m; ++i) {
          int64_t index = d.trans_a == CUBLAS_OP_N ? i + p * d.lda : p + i * d.lda;
          a_cols[p * m + i] = Load(a, d.a_type, index);
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t p = 0; p < k; ++p) {
          int64_t index = d.trans_b == CUBLAS_OP_N ? p + j * d.ldb : j + p * d.ldb;
          b_cols[j * k + p] = Load(b, d.b_type, index);
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      float* __restrict accp = acc.data();
      for (int64_t i = 0; i < m; ++i) accp[i] = 0.0f;
      if (use_ab) {
        for (int64_t p = 0; p < k; ++p) {
          const float bp = b_cols[j * k + p];
          const float* __restrict ap = &a_cols[p * m];
          for (int64_t i = 0; i < m; ++i) accp[i] = accp[i] + ap[i] * bp;
        }
      }
      for (int64_t i = 0; i < m; ++i) {
        float t = use_ab ? alpha * accp[i] : 0.0f;
        int64_t ci = i + j * d.ldc;
        if (beta != 0.0f) t = t + beta * Load(c, d.c_type, ci);
        Store(c, d.c_type, ci, t);
      }
    }
  }
}

cublasStatus_t CheckGemm(const GemmDesc& d, cublasComputeType_t compute) {
  auto known_op = [](cublasOperation_t op) {
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
  };
  auto at_least = [](int64_t ld, int64_t rows) { return ld >= (rows > 1 ? rows : 1); };
  if (!known_op(d.trans_a) || !known_op(d.trans_b)) return CUBLAS_STATUS_INVALID_VALUE;
  if (d.m < 0 || d.n < 0 || d.k < 0 || d.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (!at_least(d.lda, d.trans_a == CUBLAS_OP_N ? d.m : d.k)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!at_least(d.ldb, d.trans_b == CUBLAS_OP_N ? d.k : d.n)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!at_least(d.ldc, d.m)) return CUBLAS_STATUS_INVALID_VALUE;
  const int legacy_r32f = CUDA_R_32F;
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC &&
      static_cast<int>(compute) != legacy_r32f) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (d.a_type != d.b_type) return CUBLAS_STATUS_NOT_SUPPORTED;
  switch (d.a_type) {
    case CUDA_R_32F:
      return d.c_type == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return d.c_type == d.a_type || d.c_type == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

}  // namespace simgpu::cublas
