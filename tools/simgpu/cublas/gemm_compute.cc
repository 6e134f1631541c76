// The GEMM arithmetic of gemm.h. Each batch's op(A) and op(B) become dense column-major panels in the
// accumulator's operand type (widening is exact; the TF32 / FP16 / BF16 input rounding of the fast compute types
// happens here, once per element), except FP32 or FP64 operands that need neither rounding nor transposition,
// which the accumulation module reads in place. AccumPlan::SumPanel then sums every element's products in the
// configured order, and the epilogue applies alpha and beta in the scale type. Compiled with -ffp-contract=off:
// every product and sum is the stated rounded operation, never a fused multiply-add the compiler chose.
#include <cstdint>
#include <cstring>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"
#include "tools/simgpu/common/accumulate.h"
#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cublas/gemm.h"

namespace simgpu::cublas {
namespace {

using simgpu::nv::Bf16ToFloat;
using simgpu::nv::BitsFloat;
using simgpu::nv::FloatBits;
using simgpu::nv::FloatToBf16;
using simgpu::nv::FloatToHalf;
using simgpu::nv::HalfToFloat;

float LoadF(const void* base, cudaDataType type, int64_t index) {
  switch (type) {
    case CUDA_R_16F: return HalfToFloat(static_cast<const uint16_t*>(base)[index]);
    case CUDA_R_16BF: return Bf16ToFloat(static_cast<const uint16_t*>(base)[index]);
    case CUDA_R_8I: return static_cast<float>(static_cast<const int8_t*>(base)[index]);
    default: return static_cast<const float*>(base)[index];
  }
}

void StoreF(void* base, cudaDataType type, int64_t index, float value) {
  switch (type) {
    case CUDA_R_16F: static_cast<uint16_t*>(base)[index] = FloatToHalf(value); break;
    case CUDA_R_16BF: static_cast<uint16_t*>(base)[index] = FloatToBf16(value); break;
    default: static_cast<float*>(base)[index] = value; break;
  }
}

float RoundHalf(float x) { return HalfToFloat(FloatToHalf(x)); }

// TF32: FP32 with 10 fraction bits. Round to nearest even on the 13 dropped bits; a carry may roll into the
// exponent (up to infinity). Infinity and NaN pass unchanged.
float RoundTf32(float x) {
  uint32_t u = FloatBits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  u += 0xfffu + ((u >> 13) & 1u);
  return BitsFloat(u & ~0x1fffu);
}

bool RoundsInputs(GemmMath math) {
  return math == GemmMath::kF32Tf32 || math == GemmMath::kF32Fast16F || math == GemmMath::kF32Fast16BF;
}

float RoundInput(GemmMath math, float x) {
  switch (math) {
    case GemmMath::kF32Tf32: return RoundTf32(x);
    case GemmMath::kF32Fast16F: return RoundHalf(x);
    case GemmMath::kF32Fast16BF: return Bf16ToFloat(FloatToBf16(x));
    default: return x;
  }
}

// Element (r, c) of op(X) for a matrix stored with leading dimension ld.
int64_t OpIndex(cublasOperation_t t, int64_t ld, int64_t r, int64_t c) {
  return t == CUBLAS_OP_N ? r + c * ld : c + r * ld;
}

// Per-thread scratch buffer `slot` of at least n elements, kept between calls (a stream worker runs one GEMM at a
// time): fresh panels of a large GEMM cost more in page faults and zeroing than the widening itself.
template <typename T, int slot>
T* Scratch(int64_t n) {
  static thread_local std::vector<T> buffer;
  if (buffer.size() < static_cast<size_t>(n)) buffer.resize(n);
  return buffer.data();
}

struct BatchPtrs {
  const void* a;
  const void* b;
  void* c;
};

BatchPtrs Batch(const GemmDesc& d, int64_t batch, bool read_ab) {
  BatchPtrs p{nullptr, nullptr, nullptr};
  if (d.c_array != nullptr) {
    if (read_ab) {
      p.a = d.a_array[batch];
      p.b = d.b_array[batch];
    }
    p.c = d.c_array[batch];
    return p;
  }
  auto offset = [batch](const void* base, cudaDataType type, long long stride) {
    return static_cast<const char*>(base) + batch * stride * static_cast<long long>(DataTypeBytes(type));
  };
  p.a = offset(d.a, d.a_type, d.stride_a);
  p.b = offset(d.b, d.b_type, d.stride_b);
  p.c = const_cast<char*>(offset(d.c, d.c_type, d.stride_c));
  return p;
}

void GemmFloat(const GemmDesc& d, GemmMath math, int64_t call, float alpha, float beta) {
  const int64_t m = d.m, n = d.n, k = d.k;
  const bool f16 = math == GemmMath::kF16;
  const AccumPlan plan(AccumFromEnv(), f16 ? AccumPrecision::kFp16 : AccumPrecision::kFp32, k, call);
  const bool use_ab = alpha != 0.0f && k > 0;
  const bool direct_a = d.a_type == CUDA_R_32F && d.trans_a == CUBLAS_OP_N && !RoundsInputs(math);
  const bool direct_b = d.b_type == CUDA_R_32F && d.trans_b == CUBLAS_OP_N && !RoundsInputs(math);
  float* a_panel = Scratch<float, 0>(use_ab && !direct_a ? m * k : 0);
  float* b_panel = Scratch<float, 1>(use_ab && !direct_b ? k * n : 0);
  float* acc = Scratch<float, 2>(use_ab ? m * n : 0);
  for (int64_t batch = 0; batch < d.batch; ++batch) {
    const BatchPtrs p = Batch(d, batch, use_ab);
    if (use_ab) {
      const float* ap = static_cast<const float*>(p.a);
      int64_t lda = d.lda;
      if (!direct_a) {
        for (int64_t q = 0; q < k; ++q) {
          for (int64_t i = 0; i < m; ++i) {
            a_panel[i + q * m] = RoundInput(math, LoadF(p.a, d.a_type, OpIndex(d.trans_a, d.lda, i, q)));
          }
        }
        ap = a_panel;
        lda = m;
      }
      const float* bp = static_cast<const float*>(p.b);
      int64_t ldb = d.ldb;
      if (!direct_b) {
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t q = 0; q < k; ++q) {
            b_panel[q + j * k] = RoundInput(math, LoadF(p.b, d.b_type, OpIndex(d.trans_b, d.ldb, q, j)));
          }
        }
        bp = b_panel;
        ldb = k;
      }
      plan.SumPanel(m, n, ap, lda, bp, ldb, acc, m);
    }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        const int64_t ci = i + j * d.ldc;
        float t = 0.0f;
        if (f16) {
          if (use_ab) t = RoundHalf(alpha * acc[i + j * m]);
          if (beta != 0.0f) t = RoundHalf(t + RoundHalf(beta * LoadF(p.c, d.c_type, ci)));
        } else {
          if (use_ab) t = alpha * acc[i + j * m];
          if (beta != 0.0f) t = t + beta * LoadF(p.c, d.c_type, ci);
        }
        StoreF(p.c, d.c_type, ci, t);
      }
    }
  }
}

void GemmDouble(const GemmDesc& d, int64_t call, double alpha, double beta) {
  const int64_t m = d.m, n = d.n, k = d.k;
  const AccumPlan plan(AccumFromEnv(), AccumPrecision::kFp64, k, call);
  const bool use_ab = alpha != 0.0 && k > 0;
  const bool direct_a = d.trans_a == CUBLAS_OP_N, direct_b = d.trans_b == CUBLAS_OP_N;
  double* a_panel = Scratch<double, 0>(use_ab && !direct_a ? m * k : 0);
  double* b_panel = Scratch<double, 1>(use_ab && !direct_b ? k * n : 0);
  double* acc = Scratch<double, 2>(use_ab ? m * n : 0);
  for (int64_t batch = 0; batch < d.batch; ++batch) {
    const BatchPtrs p = Batch(d, batch, use_ab);
    const auto* a = static_cast<const double*>(p.a);
    const auto* b = static_cast<const double*>(p.b);
    auto* c = static_cast<double*>(p.c);
    if (use_ab) {
      const double* ap = a;
      int64_t lda = d.lda;
      if (!direct_a) {
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t q = 0; q < k; ++q) a_panel[i + q * m] = a[q + i * d.lda];
        }
        ap = a_panel;
        lda = m;
      }
      const double* bp = b;
      int64_t ldb = d.ldb;
      if (!direct_b) {
        for (int64_t q = 0; q < k; ++q) {
          for (int64_t j = 0; j < n; ++j) b_panel[q + j * k] = b[j + q * d.ldb];
        }
        bp = b_panel;
        ldb = k;
      }
      plan.SumPanel(m, n, ap, lda, bp, ldb, acc, m);
    }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        double t = use_ab ? alpha * acc[i + j * m] : 0.0;
        if (beta != 0.0) t = t + beta * c[i + j * d.ldc];
        c[i + j * d.ldc] = t;
      }
    }
  }
}

// int8 x int8 -> int32: exact products, sums and scaling modulo 2^32 (unsigned arithmetic avoids signed overflow).
void GemmInt(const GemmDesc& d, int32_t alpha, int32_t beta) {
  const bool use_ab = alpha != 0 && d.k > 0;
  for (int64_t batch = 0; batch < d.batch; ++batch) {
    const BatchPtrs p = Batch(d, batch, use_ab);
    const auto* a = static_cast<const int8_t*>(p.a);
    const auto* b = static_cast<const int8_t*>(p.b);
    auto* c = static_cast<int32_t*>(p.c);
    for (int64_t j = 0; j < d.n; ++j) {
      for (int64_t i = 0; i < d.m; ++i) {
        uint32_t acc = 0;
        if (use_ab) {
          for (int64_t q = 0; q < d.k; ++q) {
            acc += static_cast<uint32_t>(static_cast<int32_t>(a[OpIndex(d.trans_a, d.lda, i, q)]) *
                                         static_cast<int32_t>(b[OpIndex(d.trans_b, d.ldb, q, j)]));
          }
        }
        uint32_t t = use_ab ? static_cast<uint32_t>(alpha) * acc : 0u;
        if (beta != 0) t += static_cast<uint32_t>(beta) * static_cast<uint32_t>(c[i + j * d.ldc]);
        c[i + j * d.ldc] = static_cast<int32_t>(t);
      }
    }
  }
}

template <typename T>
T ReadScalar(const void* p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

void ComputeGemm(const GemmDesc& d, GemmMath math, int64_t call, const void* alpha, const void* beta) {
  if (d.m == 0 || d.n == 0) return;
  switch (math) {
    case GemmMath::kF64:
      GemmDouble(d, call, ReadScalar<double>(alpha), ReadScalar<double>(beta));
      break;
    case GemmMath::kI32:
      GemmInt(d, ReadScalar<int32_t>(alpha), ReadScalar<int32_t>(beta));
      break;
    case GemmMath::kF16:
      GemmFloat(d, math, call, HalfToFloat(ReadScalar<uint16_t>(alpha)), HalfToFloat(ReadScalar<uint16_t>(beta)));
      break;
    default:
      GemmFloat(d, math, call, ReadScalar<float>(alpha), ReadScalar<float>(beta));
      break;
  }
}

}  // namespace simgpu::cublas
