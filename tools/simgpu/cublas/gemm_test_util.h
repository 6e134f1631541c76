// Test helpers for simgpu's cuBLAS GEMMs: operands in any supported dtype, a column-major FP64 reference, the
// FP32-accumulation error bound, and an independent FP32 implementation of gemm.h's stated summation order.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_TEST_UTIL_H_
#define TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_TEST_UTIL_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu::testing {

inline size_t DtypeBytes(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

// Unit roundoff of a storage type.
inline double UnitRoundoff(cudaDataType t) {
  return t == CUDA_R_32F ? std::ldexp(1.0, -24) : t == CUDA_R_16F ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
}

// Values held as floats that are exactly representable in `type`, plus the raw storage bytes.
struct Operand {
  cudaDataType type = CUDA_R_32F;
  std::vector<float> values;
  std::vector<uint8_t> bytes;

  Operand() = default;
  Operand(cudaDataType t, size_t n) : type(t), values(n, 0.0f), bytes(n * DtypeBytes(t), 0) {}
  size_t size() const { return values.size(); }
  void Set(size_t i, float v) {
    if (type == CUDA_R_32F) {
      values[i] = v;
      memcpy(&bytes[i * 4], &v, 4);
      return;
    }
    uint16_t h = type == CUDA_R_16F ? simgpu::nv::FloatToHalf(v) : simgpu::nv::FloatToBf16(v);
    memcpy(&bytes[i * 2], &h, 2);
    values[i] = Get(i);
  }
  float Get(size_t i) const {
    if (type == CUDA_R_32F) {
      float v;
      memcpy(&v, &bytes[i * 4], 4);
      return v;
    }
    uint16_t h;
    memcpy(&h, &bytes[i * 2], 2);
    return type == CUDA_R_16F ? simgpu::nv::HalfToFloat(h) : simgpu::nv::Bf16ToFloat(h);
  }
  void Refresh() {
    for (size_t i = 0; i < values.size(); ++i) values[i] = Get(i);
  }
};

inline Operand RandomOperand(cudaDataType type, size_t n, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Operand op(type, n);
  for (size_t i = 0; i < n; ++i) op.Set(i, dist(*rng));
  return op;
}

// Device copy of an operand's bytes; freed by the destructor.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes); }
  explicit DeviceBuffer(const Operand& op) : DeviceBuffer(op.bytes.size()) {
    cudaMemcpy(ptr_, op.bytes.data(), op.bytes.size(), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  void CopyTo(Operand* op) const {
    cudaMemcpy(op->bytes.data(), ptr_, op->bytes.size(), cudaMemcpyDeviceToHost);
    op->Refresh();
  }

 private:
  void* ptr_ = nullptr;
};

struct GemmCase {
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t batch = 1;
  float alpha = 1.0f, beta = 0.0f;
};

inline float OpElem(const Operand& x, cublasOperation_t t, int64_t ld, long long offset, int64_t r, int64_t c) {
  return x.values[offset + (t == CUBLAS_OP_N ? r + c * ld : c + r * ld)];
}

// Expected output per gemm.h, computed independently: sequential FP32 accumulation of rounded products, then
// alpha * acc (+ beta * c), rounded to C's type. (This file's users compile with -ffp-contract=off.)
inline Operand SequentialFp32(const GemmCase& g, const Operand& a, const Operand& b, const Operand& c0) {
  Operand out = c0;
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t i = 0; i < g.m; ++i) {
        float acc = 0.0f;
        for (int64_t p = 0; p < g.k; ++p) {
          float prod = OpElem(a, g.ta, g.lda, batch * g.stride_a, i, p) * OpElem(b, g.tb, g.ldb, batch * g.stride_b, p, j);
          acc = acc + prod;
        }
        size_t ci = batch * g.stride_c + i + j * g.ldc;
        float t = g.alpha * acc;
        if (g.beta != 0.0f) {
          float bc = g.beta * c0.values[ci];
          t = t + bc;
        }
        out.Set(ci, t);
      }
    }
  }
  return out;
}

// Checks `out` against an FP64 reference within the deterministic FP32-accumulation bound (DESIGN.md §6):
//   |out - ref| <= g * S + u_out * (|ref| + g * S) + eta,   S = |alpha| sum_p |a||b| + |beta| |c0|,
// with g = gamma_{k+2}(2^-24) (k rounded products and sums, then the alpha and beta terms and their sum) and
// u_out the output type's unit roundoff; eta = half of the smallest subnormal of the output type covers
// gradual underflow. Elements outside the logical output (ld padding, between batches) must be unchanged.
// Returns the number of violations and the largest error as a fraction of the bound.
struct BoundCheck {
  int violations = 0;
  int padding_changed = 0;
  double worst_ratio = 0.0;
};

inline BoundCheck CheckAgainstFp64(const GemmCase& g, const Operand& a, const Operand& b, const Operand& c0,
                                   const Operand& out) {
  BoundCheck result;
  const double u = std::ldexp(1.0, -24);
  const double kk = static_cast<double>(g.k + 2);
  const double gamma = kk * u / (1.0 - kk * u);
  const double u_out = UnitRoundoff(out.type);
  const double eta = out.type == CUDA_R_16F ? std::ldexp(1.0, -25) : std::ldexp(1.0, -150);
  std::vector<bool> logical(out.size(), false);
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t i = 0; i < g.m; ++i) {
        double dot = 0.0, mag = 0.0;
        for (int64_t p = 0; p < g.k; ++p) {
          double x = OpElem(a, g.ta, g.lda, batch * g.stride_a, i, p);
          double y = OpElem(b, g.tb, g.ldb, batch * g.stride_b, p, j);
          dot += x * y;
          mag += std::fabs(x * y);
        }
        size_t ci = batch * g.stride_c + i + j * g.ldc;
        logical[ci] = true;
        double ref = static_cast<double>(g.alpha) * dot;
        double s = std::fabs(static_cast<double>(g.alpha)) * mag;
        if (g.beta != 0.0f) {
          ref += static_cast<double>(g.beta) * c0.values[ci];
          s += std::fabs(static_cast<double>(g.beta) * c0.values[ci]);
        }
        double bound = gamma * s + u_out * (std::fabs(ref) + gamma * s) + eta;
        double err = std::fabs(static_cast<double>(out.values[ci]) - ref);
        if (!(err <= bound)) ++result.violations;
        if (bound > 0) result.worst_ratio = std::max(result.worst_ratio, err / bound);
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!logical[i] && memcmp(&out.bytes[i * DtypeBytes(out.type)], &c0.bytes[i * DtypeBytes(out.type)],
                              DtypeBytes(out.type)) != 0) {
      ++result.padding_changed;
    }
  }
  return result;
}

}  // namespace simgpu::testing

#endif  // TTRACE_TOOLS_SIMGPU_CUBLAS_GEMM_TEST_UTIL_H_
