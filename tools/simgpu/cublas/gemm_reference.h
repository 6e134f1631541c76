// Test-only: cuBLAS GEMM expectations written independently of the library: matrices of any GEMM dtype, the
// cublasGemmEx type table restated, the expected output bit for bit (input rounding, products, the accumulation
// order through accumulate_reference.h, epilogue in the scale type) and the FP64 reference with its error bound.
// Users compile with -ffp-contract=off. Conversions use _Float16 (libgcc) and frexp/nearbyint, not kernels/dtype.h.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_REFERENCE_H_
#define TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_REFERENCE_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tools/simgpu/common/accumulate.h"
#include "tools/simgpu/common/accumulate_reference.h"

namespace simgpu::gemm_ref {

inline size_t Bytes(cudaDataType t) {
  switch (t) {
    case CUDA_R_8I: return 1;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_64F: return 8;
    default: return 4;  // 32F, 32I
  }
}

// Rounds a finite normal value to `sig` significant bits, ties to even (nearbyint in the default rounding mode).
inline double RoundSignificant(double v, int sig) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e;
  std::frexp(v, &e);
  double q = std::ldexp(1.0, e - sig);
  return std::nearbyint(v / q) * q;
}
inline float ToHalf(double v) { return static_cast<float>(static_cast<_Float16>(static_cast<float>(v))); }
inline float ToBf16(double v) { return static_cast<float>(RoundSignificant(static_cast<float>(v), 8)); }
inline float ToTf32(double v) { return static_cast<float>(RoundSignificant(static_cast<float>(v), 11)); }

// A matrix (or several batches) of one dtype: exact values as doubles and the storage bytes.
struct Mat {
  cudaDataType type = CUDA_R_32F;
  std::vector<double> v;
  std::vector<uint8_t> bytes;

  Mat() = default;
  Mat(cudaDataType t, size_t n) : type(t), v(n, 0.0), bytes(n * Bytes(t), 0) {}
  size_t size() const { return v.size(); }
  // Stores x rounded to the type (integers: x must be an in-range integer).
  void Set(size_t i, double x) {
    uint8_t* p = &bytes[i * Bytes(type)];
    switch (type) {
      case CUDA_R_8I: { int8_t s = static_cast<int8_t>(x); memcpy(p, &s, 1); v[i] = s; break; }
      case CUDA_R_32I: { int32_t s = static_cast<int32_t>(x); memcpy(p, &s, 4); v[i] = s; break; }
      case CUDA_R_64F: memcpy(p, &x, 8); v[i] = x; break;
      case CUDA_R_16F: {
        _Float16 h = static_cast<_Float16>(static_cast<float>(x));
        memcpy(p, &h, 2);
        v[i] = static_cast<double>(h);
        break;
      }
      case CUDA_R_16BF: {
        float f = ToBf16(x);
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h = static_cast<uint16_t>(u >> 16);
        memcpy(p, &h, 2);
        v[i] = f;
        break;
      }
      default: { float f = static_cast<float>(x); memcpy(p, &f, 4); v[i] = f; break; }
    }
  }
  // Re-reads values from bytes (after a device copy).
  void Refresh() {
    for (size_t i = 0; i < v.size(); ++i) {
      const uint8_t* p = &bytes[i * Bytes(type)];
      switch (type) {
        case CUDA_R_8I: { int8_t s; memcpy(&s, p, 1); v[i] = s; break; }
        case CUDA_R_32I: { int32_t s; memcpy(&s, p, 4); v[i] = s; break; }
        case CUDA_R_64F: memcpy(&v[i], p, 8); break;
        case CUDA_R_16F: { _Float16 h; memcpy(&h, p, 2); v[i] = static_cast<double>(h); break; }
        case CUDA_R_16BF: {
          uint16_t h;
          memcpy(&h, p, 2);
          uint32_t u = static_cast<uint32_t>(h) << 16;
          float f;
          memcpy(&f, &u, 4);
          v[i] = f;
          break;
        }
        default: { float f; memcpy(&f, p, 4); v[i] = f; break; }
      }
    }
  }
};

inline Mat RandomMat(cudaDataType t, size_t n, std::mt19937* rng) {
  Mat m(t, n);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> i8(-128, 127);
  for (size_t i = 0; i < n; ++i) m.Set(i, t == CUDA_R_8I || t == CUDA_R_32I ? i8(*rng) : real(*rng));
  return m;
}

// How a compute type computes, restated from cuBLAS's cublasGemmEx table and cublas_api.h.
enum class Acc { kF32, kF16, kF64, kI32 };
enum class InRound { kNone, kTf32, kHalf, kBf16 };
struct Arith {
  bool supported = false;
  Acc acc = Acc::kF32;
  InRound in = InRound::kNone;
};

inline Arith Expected(cublasComputeType_t compute, cudaDataType ab, cudaDataType c, cublasMath_t mode) {
  Arith r;
  const unsigned base = mode & 0xfu;
  auto is = [&](cudaDataType x, cudaDataType y) { return ab == x && c == y; };
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      r.supported = is(CUDA_R_16F, CUDA_R_16F);
      r.acc = Acc::kF16;
      break;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      r.supported = is(CUDA_R_16BF, CUDA_R_16BF) || is(CUDA_R_16F, CUDA_R_16F) || is(CUDA_R_8I, CUDA_R_32F) ||
                    is(CUDA_R_16BF, CUDA_R_32F) || is(CUDA_R_16F, CUDA_R_32F) || is(CUDA_R_32F, CUDA_R_32F);
      if (compute == CUBLAS_COMPUTE_32F && ab == CUDA_R_32F && base == CUBLAS_TF32_TENSOR_OP_MATH) {
        r.in = InRound::kTf32;
      }
      if (compute == CUBLAS_COMPUTE_32F && ab == CUDA_R_32F && base == CUBLAS_TENSOR_OP_MATH) r.in = InRound::kHalf;
      break;
    case CUBLAS_COMPUTE_32F_FAST_16F:
      r.supported = is(CUDA_R_32F, CUDA_R_32F);
      r.in = InRound::kHalf;
      break;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      r.supported = is(CUDA_R_32F, CUDA_R_32F);
      r.in = InRound::kBf16;
      break;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      r.supported = is(CUDA_R_32F, CUDA_R_32F);
      r.in = InRound::kTf32;
      break;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      r.supported = is(CUDA_R_64F, CUDA_R_64F);
      r.acc = Acc::kF64;
      break;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
      r.supported = is(CUDA_R_8I, CUDA_R_32I);
      r.acc = Acc::kI32;
      break;
    default:
      break;
  }
  return r;
}

struct Case {
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t batch = 1;
  double alpha = 1.0, beta = 0.0;  // exactly representable in the scale type
};

inline double OpAt(const Mat& x, cublasOperation_t t, int64_t ld, long long off, int64_t r, int64_t c) {
  return x.v[off + (t == CUBLAS_OP_N ? r + c * ld : c + r * ld)];
}

inline double RoundIn(InRound in, double x) {
  switch (in) {
    case InRound::kTf32: return ToTf32(x);
    case InRound::kHalf: return ToHalf(x);
    case InRound::kBf16: return ToBf16(x);
    default: return x;
  }
}

// The output simgpu must produce, bit for bit: `config` is the SIMGPU_ACCUM order in effect and `call` the GEMM's
// call number (for random order). Batches b use offsets b * stride (the test lays pointer-array batches out the
// same way).
inline Mat ExpectedOutput(const Case& g, const Arith& ar, const Mat& a, const Mat& b, const Mat& c0,
                          const AccumConfig& config, int64_t call) {
  Mat out = c0;
  const bool use_ab = g.alpha != 0 && g.k > 0;
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t i = 0; i < g.m; ++i) {
        const size_t ci = batch * g.stride_c + i + j * g.ldc;
        const double cv = c0.v[ci];
        std::vector<double> x(g.k);
        for (int64_t p = 0; p < g.k; ++p) {
          double av = RoundIn(ar.in, OpAt(a, g.ta, g.lda, batch * g.stride_a, i, p));
          double bv = RoundIn(ar.in, OpAt(b, g.tb, g.ldb, batch * g.stride_b, p, j));
          x[p] = ar.acc == Acc::kF64 || ar.acc == Acc::kI32 ? av * bv
                                                            : static_cast<float>(av) * static_cast<float>(bv);
        }
        if (ar.acc == Acc::kI32) {
          uint32_t acc = 0;
          for (double p : x) acc += static_cast<uint32_t>(static_cast<int32_t>(p));
          uint32_t t = use_ab ? static_cast<uint32_t>(static_cast<int32_t>(g.alpha)) * acc : 0u;
          if (g.beta != 0) {
            t += static_cast<uint32_t>(static_cast<int32_t>(g.beta)) * static_cast<uint32_t>(static_cast<int32_t>(cv));
          }
          out.Set(ci, static_cast<int32_t>(t));
          continue;
        }
        testing_ref::RefSpec spec;
        spec.config = config;
        spec.call = call;
        spec.precision = ar.acc == Acc::kF64 ? AccumPrecision::kFp64
                         : ar.acc == Acc::kF16 ? AccumPrecision::kFp16 : AccumPrecision::kFp32;
        const double acc = use_ab ? testing_ref::RefSum(spec, x) : 0.0;
        if (ar.acc == Acc::kF64) {
          double t = use_ab ? g.alpha * acc : 0.0;
          if (g.beta != 0) t = t + g.beta * cv;
          out.Set(ci, t);
        } else if (ar.acc == Acc::kF16) {
          float t = use_ab ? ToHalf(static_cast<float>(g.alpha) * static_cast<float>(acc)) : 0.0f;
          if (g.beta != 0) t = ToHalf(t + ToHalf(static_cast<float>(g.beta) * static_cast<float>(cv)));
          out.Set(ci, t);
        } else {
          float t = use_ab ? static_cast<float>(g.alpha) * static_cast<float>(acc) : 0.0f;
          if (g.beta != 0) t = t + static_cast<float>(g.beta) * static_cast<float>(cv);
          out.Set(ci, t);
        }
      }
    }
  }
  return out;
}

// Deterministic bound against the exact FP64 result (DESIGN.md section 6): per element,
//   |out - ref| <= (gamma_{k+4}(u_acc) + 2 u_in + u_in^2) * S + u_out * (|ref| + S) + eta,
//   S = |alpha| sum_p |a||b| + |beta||c|,
// with u_acc the accumulator's unit roundoff (k products and sums plus product rounding and the epilogue's three
// operations), u_in the input rounding's (TF32 and binary16 2^-11, bfloat16 2^-8), u_out the output type's and eta
// half the output type's smallest subnormal (FP64: the smallest subnormal). Integer GEMMs must match exactly
// (modulo 2^32). Also counts changed elements outside the logical output (ld padding, gaps between batches).
struct BoundResult {
  int violations = 0;
  int padding_changed = 0;
  double worst_ratio = 0;
};

inline double UnitRoundoff(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: return std::ldexp(1.0, -11);
    case CUDA_R_16BF: return std::ldexp(1.0, -8);
    case CUDA_R_64F: return std::ldexp(1.0, -53);
    case CUDA_R_32I: return 0;
    default: return std::ldexp(1.0, -24);
  }
}

inline BoundResult CheckBound(const Case& g, const Arith& ar, const Mat& a, const Mat& b, const Mat& c0,
                              const Mat& out) {
  BoundResult r;
  const double u_acc = ar.acc == Acc::kF64 ? std::ldexp(1.0, -53)
                       : ar.acc == Acc::kF16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -24);
  const double u_in = ar.in == InRound::kBf16 ? std::ldexp(1.0, -8)
                      : ar.in == InRound::kNone ? 0.0 : std::ldexp(1.0, -11);
  const double kk = static_cast<double>(g.k + 4);
  const double coeff = kk * u_acc / (1 - kk * u_acc) + 2 * u_in + u_in * u_in;
  const double u_out = UnitRoundoff(out.type);
  const double eta = out.type == CUDA_R_16F ? std::ldexp(1.0, -25) : out.type == CUDA_R_64F ? 0x1p-1074 : 0x1p-150;
  std::vector<bool> logical(out.size(), false);
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t i = 0; i < g.m; ++i) {
        const size_t ci = batch * g.stride_c + i + j * g.ldc;
        logical[ci] = true;
        double dot = 0, mag = 0;
        int64_t idot = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          double x = OpAt(a, g.ta, g.lda, batch * g.stride_a, i, p) * OpAt(b, g.tb, g.ldb, batch * g.stride_b, p, j);
          dot += x;
          mag += std::fabs(x);
          idot += static_cast<int64_t>(x);
        }
        if (ar.acc == Acc::kI32) {
          int64_t want = static_cast<int64_t>(g.alpha) * idot +
                         static_cast<int64_t>(g.beta) * static_cast<int64_t>(c0.v[ci]);
          if (static_cast<int32_t>(static_cast<uint32_t>(want)) != static_cast<int32_t>(out.v[ci])) ++r.violations;
          continue;
        }
        const double ref = g.alpha * dot + g.beta * c0.v[ci];
        const double s = std::fabs(g.alpha) * mag + std::fabs(g.beta * c0.v[ci]);
        const double bound = coeff * s + u_out * (std::fabs(ref) + s) + eta;
        const double err = std::fabs(out.v[ci] - ref);
        if (!(err <= bound)) ++r.violations;
        if (bound > 0) r.worst_ratio = std::max(r.worst_ratio, err / bound);
      }
    }
  }
  const size_t w = Bytes(out.type);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!logical[i] && memcmp(&out.bytes[i * w], &c0.bytes[i * w], w) != 0) ++r.padding_changed;
  }
  return r;
}

}  // namespace simgpu::gemm_ref

#endif  // TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_REFERENCE_H_
