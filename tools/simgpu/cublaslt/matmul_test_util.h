// Test helpers for simgpu's cublasLtMatmul: matrices in device memory with any layout and type, one call with every
// epilogue input set up, and an independent FP64 reference with a deterministic error bound (derivation below).
//
// Bound (deterministic, never a false alarm): for an element with k products, t = s_ab * acc + s_c * C + bias goes
// through at most k + 5 roundings of unit u_acc (the products and additions of the sum, at most three more for the
// scalings and two additions; u_acc = 2^-24 for FP32, 2^-B for the reduced FP8 accumulator that truncates to B
// fraction bits), so |t_hat - t| <= gamma_{k+5}(u_acc) * (|s_ab| sum|a||b| + |s_c C| + |bias|), whatever the order
// of summation (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 3.1 and 4.2). ReLU is
// 1-Lipschitz; the tanh GELU and t * gelu'(x) have Lipschitz constant max|gelu'| < 1.2 in t, plus one FP32
// rounding of their result. scale_D adds one rounding. Storing in a type of unit roundoff u_out rounds to nearest:
// |stored - x| <= u_out |x| (normal range) or half the smallest subnormal spacing (subnormal range), so
// |D_hat - D| <= err + u_out (|D| + err) + tiny_out. Sums for bias gradients add gamma_n(2^-24) * sum|terms|.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLASLT_MATMUL_TEST_UTIL_H_
#define TTRACE_TOOLS_SIMGPU_CUBLASLT_MATMUL_TEST_UTIL_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/nv_dtype.h"

namespace simgpu::lt_testing {

inline bool IsFp8(cudaDataType t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }
inline size_t TypeBytes(cudaDataType t) { return IsFp8(t) ? 1 : t == CUDA_R_32F ? 4 : 2; }

inline double UnitRoundoff(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: return std::ldexp(1.0, -11);
    case CUDA_R_16BF: return std::ldexp(1.0, -8);
    case CUDA_R_8F_E4M3: return std::ldexp(1.0, -4);
    case CUDA_R_8F_E5M2: return std::ldexp(1.0, -3);
    default: return std::ldexp(1.0, -24);
  }
}

// Half the spacing of the subnormals: the largest absolute rounding error below the normal range.
inline double TinyError(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: return std::ldexp(1.0, -25);
    case CUDA_R_16BF: return std::ldexp(1.0, -134);
    case CUDA_R_8F_E4M3: return std::ldexp(1.0, -10);
    case CUDA_R_8F_E5M2: return std::ldexp(1.0, -17);
    default: return std::ldexp(1.0, -150);
  }
}

inline double MaxFinite(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: return 65504.0;
    case CUDA_R_8F_E4M3: return 448.0;
    case CUDA_R_8F_E5M2: return 57344.0;
    default: return 3.0e38;
  }
}

inline double Gamma(double n, double u) { return n * u / (1.0 - n * u); }

inline double Decode(cudaDataType t, const uint8_t* p) {
  using namespace simgpu::nv;
  uint16_t h;
  float f;
  switch (t) {
    case CUDA_R_16F: memcpy(&h, p, 2); return HalfToFloat(h);
    case CUDA_R_16BF: memcpy(&h, p, 2); return Bf16ToFloat(h);
    case CUDA_R_8F_E4M3: return E4M3ToFloat(*p);
    case CUDA_R_8F_E5M2: return E5M2ToFloat(*p);
    default: memcpy(&f, p, 4); return f;
  }
}

// Stores a float value (callers pass values that are floats) in type t, rounded to nearest even.
inline void Encode(cudaDataType t, float v, uint8_t* p) {
  using namespace simgpu::nv;
  uint16_t h;
  switch (t) {
    case CUDA_R_16F: h = FloatToHalf(v); memcpy(p, &h, 2); break;
    case CUDA_R_16BF: h = FloatToBf16(v); memcpy(p, &h, 2); break;
    case CUDA_R_8F_E4M3: *p = FloatToE4M3(v); break;
    case CUDA_R_8F_E5M2: *p = FloatToE5M2(v); break;
    default: memcpy(p, &v, 4); break;
  }
}

// A matrix (or a vector: cols == 1) of `batch` instances in device memory, with its host image.
class Matrix {
 public:
  Matrix(cudaDataType type, int32_t order, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride)
      : type_(type), order_(order), rows_(rows), cols_(cols), ld_(ld), batch_(batch), stride_(stride) {
    const int64_t span = order == CUBLASLT_ORDER_ROW ? rows * ld : cols * ld;
    elems_ = std::max<int64_t>(1, (batch - 1) * stride + span);
    host_.assign(elems_ * TypeBytes(type), 0);
    cudaMalloc(&dev_, host_.size());
  }
  ~Matrix() { cudaFree(dev_); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;

  int64_t Index(int64_t b, int64_t r, int64_t c) const {
    return b * stride_ + (order_ == CUBLASLT_ORDER_ROW ? r * ld_ + c : r + c * ld_);
  }
  double At(int64_t b, int64_t r, int64_t c) const { return Decode(type_, &host_[Index(b, r, c) * TypeBytes(type_)]); }
  double Raw(int64_t e) const { return Decode(type_, &host_[e * TypeBytes(type_)]); }
  void Set(int64_t b, int64_t r, int64_t c, float v) { Encode(type_, v, &host_[Index(b, r, c) * TypeBytes(type_)]); }
  // Every element (padding included) uniform in [lo, hi], rounded to the type.
  void Fill(std::mt19937* rng, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    for (int64_t e = 0; e < elems_; ++e) Encode(type_, dist(*rng), &host_[e * TypeBytes(type_)]);
  }
  void FillBytes(uint8_t byte) { std::fill(host_.begin(), host_.end(), byte); }
  void Upload() { cudaMemcpy(dev_, host_.data(), host_.size(), cudaMemcpyHostToDevice); }
  void Download() { cudaMemcpy(host_.data(), dev_, host_.size(), cudaMemcpyDeviceToHost); }
  // Whether element e lies inside some instance's rows x cols (not padding).
  bool Covered(int64_t e) const {
    for (int64_t b = 0; b < batch_; ++b) {
      int64_t off = e - b * stride_;
      if (off < 0) continue;
      int64_t major = off / ld_, minor = off % ld_;
      int64_t r = order_ == CUBLASLT_ORDER_ROW ? major : minor, c = order_ == CUBLASLT_ORDER_ROW ? minor : major;
      if (r < rows_ && c < cols_) return true;
    }
    return false;
  }
  cublasLtMatrixLayout_t Layout() const {
    cublasLtMatrixLayout_t l = nullptr;
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&l, type_, rows_, cols_, ld_), CUBLAS_STATUS_SUCCESS);
    int32_t batch = static_cast<int32_t>(batch_);
    EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order_, sizeof order_), 0);
    EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch), 0);
    EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_,
                                               sizeof stride_),
              0);
    return l;
  }

  void* dev() const { return dev_; }
  cudaDataType type() const { return type_; }
  int64_t elems() const { return elems_; }
  std::vector<uint8_t>& host() { return host_; }

 private:
  cudaDataType type_;
  int32_t order_;
  int64_t rows_, cols_, ld_, batch_, stride_, elems_;
  std::vector<uint8_t> host_;
  void* dev_ = nullptr;
};

// One cublasLtMatmul configuration.
struct Case {
  cudaDataType a_type = CUDA_R_32F, b_type = CUDA_R_32F, c_type = CUDA_R_32F, d_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  int32_t order = CUBLASLT_ORDER_COL;
  int64_t m = 13, n = 11, k = 37, batch = 1;
  int64_t ld_pad = 0, stride_pad = 0;
  bool in_place = false;       // D is C
  bool device_scalars = false;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  float alpha = 0.75f, beta = 0.5f;
  bool scales = false;         // FP8: set every scale pointer and the amax outputs
  bool outer_vec_scales = false;  // FP8 with scales: A and B scales as OUTER_VEC_32F vectors (m and n floats)
  int8_t fast_accum = 0;
  int32_t bias_type = -1;      // BIAS_DATA_TYPE (-1: default)
  int fp8_acc_bits = 0;        // the process's SIMGPU_FP8_ACC_BITS, for the bound
  uint32_t seed = 1;
  uint32_t check_epilogue = 0;  // tests of the checker: run `epilogue`, check as this one (0: the same)

  std::string Name() const;
};

inline const char* TypeName(cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return "32F";
    case CUDA_R_16F: return "16F";
    case CUDA_R_16BF: return "16BF";
    case CUDA_R_8F_E4M3: return "E4M3";
    case CUDA_R_8F_E5M2: return "E5M2";
    default: return "?";
  }
}

inline std::string Case::Name() const {
  return std::string("A ") + TypeName(a_type) + " B " + TypeName(b_type) + " C " + TypeName(c_type) + " D " +
         TypeName(d_type) + " compute " + std::to_string(compute) + " trans " + std::to_string(trans_a) +
         std::to_string(trans_b) + " order " + std::to_string(order) + " m n k batch " + std::to_string(m) + " " +
         std::to_string(n) + " " + std::to_string(k) + " " + std::to_string(batch) + " ld+" + std::to_string(ld_pad) +
         " stride+" + std::to_string(stride_pad) + (in_place ? " in-place" : "") +
         (device_scalars ? " device-scalars" : "") + " epilogue " + std::to_string(epilogue) + " beta " +
         std::to_string(beta) + (fast_accum ? " fast-accum" : "");
}

// Runs one case through cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul on the legacy stream and checks D, aux,
// the bias gradient and the amax outputs against the FP64 reference and bound above, and D's padding against
// change. Records gtest failures; returns the largest |error| / bound seen (< 1 when every check passed).
double RunCase(const Case& c);

}  // namespace simgpu::lt_testing

#endif  // TTRACE_TOOLS_SIMGPU_CUBLASLT_MATMUL_TEST_UTIL_H_
