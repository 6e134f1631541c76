// The arithmetic of matmul.h. For each batch, op(A) and op(B) are widened (exactly) into dense FP32 panels and
// accumulate.h sums every output element's products in the selected order; the epilogue then runs element by
// element in the order matmul.h lists. Compiled with -ffp-contract=off: every step is the stated rounded operation,
// never a fused multiply-add the compiler chose.
#include <cmath>
#include <cstdint>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"
#include "tools/simgpu/common/accumulate.h"
#include "tools/simgpu/cublaslt/matmul.h"

namespace simgpu::cublaslt {
namespace {

using simgpu::nv::Bf16ToFloat;
using simgpu::nv::BitsFloat;
using simgpu::nv::E4M3ToFloat;
using simgpu::nv::E5M2ToFloat;
using simgpu::nv::FloatBits;
using simgpu::nv::FloatToBf16;
using simgpu::nv::FloatToE4M3;
using simgpu::nv::FloatToE5M2;
using simgpu::nv::FloatToHalf;
using simgpu::nv::HalfToFloat;

float Load(const void* base, uint32_t type, int64_t index) {
  switch (type) {
    case CUDA_R_16F:
      return HalfToFloat(static_cast<const uint16_t*>(base)[index]);
    case CUDA_R_16BF:
      return Bf16ToFloat(static_cast<const uint16_t*>(base)[index]);
    case CUDA_R_8F_E4M3:
      return E4M3ToFloat(static_cast<const uint8_t*>(base)[index]);
    case CUDA_R_8F_E5M2:
      return E5M2ToFloat(static_cast<const uint8_t*>(base)[index]);
    default:
      return static_cast<const float*>(base)[index];
  }
}

void Store(void* base, uint32_t type, int64_t index, float value) {
  switch (type) {
    case CUDA_R_16F:
      static_cast<uint16_t*>(base)[index] = FloatToHalf(value);
      break;
    case CUDA_R_16BF:
      static_cast<uint16_t*>(base)[index] = FloatToBf16(value);
      break;
    case CUDA_R_8F_E4M3:
      static_cast<uint8_t*>(base)[index] = FloatToE4M3(value);
      break;
    case CUDA_R_8F_E5M2:
      static_cast<uint8_t*>(base)[index] = FloatToE5M2(value);
      break;
    default:
      static_cast<float*>(base)[index] = value;
      break;
  }
}

// TF32: FP32 with 10 fraction bits, rounded to nearest even (NaN and infinity unchanged).
float RoundToTf32(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;
  u += 0xfffu + ((u >> 13) & 1u);
  return BitsFloat(u & ~0x1fffu);
}

// The input rounding of the FAST compute types (identity otherwise).
float RoundInput(int32_t compute, float f) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_16F:
      return HalfToFloat(FloatToHalf(f));
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      return Bf16ToFloat(FloatToBf16(f));
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return RoundToTf32(f);
    default:
      return f;
  }
}

// Index of element (r, c) of a matrix in its layout, batch b.
int64_t Index(const LayoutState& l, int64_t b, int64_t r, int64_t c) {
  return b * l.batch_stride + (l.order == CUBLASLT_ORDER_ROW ? r * l.ld + c : r + c * l.ld);
}

// Device scalars a call reads on the stream: a NULL scale pointer means 1.
float ScaleOrOne(const void* p) { return p == nullptr ? 1.0f : *static_cast<const float*>(p); }

constexpr double kGeluC = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluA = 0.044715;

float Gelu(float t) {
  const double x = t;
  return static_cast<float>(0.5 * x * (1.0 + std::tanh(kGeluC * (x + kGeluA * x * x * x))));
}

double GeluGrad(double x) {
  const double th = std::tanh(kGeluC * (x + kGeluA * x * x * x));
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * kGeluC * (1.0 + 3.0 * kGeluA * x * x);
}

class Matmul {
 public:
  Matmul(const MatmulProblem& p, float alpha, float beta)
      : p_(p), s_(p.desc), alpha_(alpha), beta_(beta),
        plan_(AccumFromEnv(), p.fp8 ? AccumPrecision::kFp8 : AccumPrecision::kFp32, p.k, p.call,
              Fp8AccBitsFromEnv(), p.fp8 && s_.fast_accum ? 0 : kFp8PromoteInterval) {}

  void Run() {
    const bool use_ab = alpha_ != 0.0f && p_.k > 0;
    const bool need_panels =
        use_ab || s_.epilogue == CUBLASLT_EPILOGUE_BGRADA || s_.epilogue == CUBLASLT_EPILOGUE_BGRADB;
    if (p_.fp8) {
      a_vector_ = s_.a_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      b_vector_ = s_.b_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      ab_scale_ = alpha_ * (a_vector_ ? 1.0f : ScaleOrOne(s_.a_scale)) * (b_vector_ ? 1.0f : ScaleOrOne(s_.b_scale));
      c_scale_ = beta_ * ScaleOrOne(s_.c_scale);
      d_scale_ = s_.d_scale == nullptr ? 1.0f : *static_cast<const float*>(s_.d_scale);
      aux_scale_ = s_.aux_scale == nullptr ? 1.0f : *static_cast<const float*>(s_.aux_scale);
    }
    a_.assign(need_panels ? p_.m * p_.k : 0, 0.0f);
    b_.assign(need_panels ? p_.k * p_.n : 0, 0.0f);
    acc_.assign(p_.m * p_.n, 0.0f);
    for (int64_t batch = 0; batch < p_.batch; ++batch) {
      if (need_panels) FillPanels(batch);
      if (use_ab) {
        plan_.SumPanel(p_.m, p_.n, a_.data(), p_.m, b_.data(), p_.k, acc_.data(), p_.m);
      }
      Epilogue(batch, use_ab);
    }
    if (s_.amax_d != nullptr) *static_cast<float*>(s_.amax_d) = amax_d_;
    if (s_.aux_amax != nullptr) *static_cast<float*>(s_.aux_amax) = amax_aux_;
  }

 private:
  // FP8: alpha * scale_A * scale_B for element (i, j), left to right; an OUTER_VEC_32F scale contributes its i-th
  // (A, length m) or j-th (B, length n) element.
  float AbScale(int64_t i, int64_t j) const {
    if (!a_vector_ && !b_vector_) return ab_scale_;
    const float a = a_vector_ ? static_cast<const float*>(s_.a_scale)[i] : ScaleOrOne(s_.a_scale);
    const float b = b_vector_ ? static_cast<const float*>(s_.b_scale)[j] : ScaleOrOne(s_.b_scale);
    return alpha_ * a * b;
  }

  void FillPanels(int64_t batch) {
    const LayoutState& la = p_.a.layout;
    const LayoutState& lb = p_.b.layout;
    for (int64_t p = 0; p < p_.k; ++p) {
      for (int64_t i = 0; i < p_.m; ++i) {
        const int64_t index = s_.trans_a == CUBLAS_OP_N ? Index(la, batch, i, p) : Index(la, batch, p, i);
        a_[i + p * p_.m] = RoundInput(s_.compute_type, Load(p_.a.ptr, la.type, index));
      }
    }
    for (int64_t j = 0; j < p_.n; ++j) {
      for (int64_t p = 0; p < p_.k; ++p) {
        const int64_t index = s_.trans_b == CUBLAS_OP_N ? Index(lb, batch, p, j) : Index(lb, batch, j, p);
        b_[p + j * p_.k] = RoundInput(s_.compute_type, Load(p_.b.ptr, lb.type, index));
      }
    }
  }

  void Epilogue(int64_t batch, bool use_ab) {
    const uint32_t e = s_.epilogue;
    const bool bias_in = e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
                         e == CUBLASLT_EPILOGUE_GELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool aux_out = e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool dgelu = e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
    const bool relu = e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS;
    const bool gelu = e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS || aux_out;
    const int64_t bias_base = batch * s_.bias_batch_stride;
    const int64_t aux_base = batch * s_.aux_batch_stride;
    const LayoutState& lc = p_.c.layout;
    const LayoutState& ld = p_.d.layout;
    std::vector<float> bgrad_terms(e == CUBLASLT_EPILOGUE_DGELU_BGRAD ? p_.m * p_.n : 0);
    for (int64_t j = 0; j < p_.n; ++j) {
      for (int64_t i = 0; i < p_.m; ++i) {
        const float acc = acc_[i + j * p_.m];
        float t = use_ab ? (p_.fp8 ? AbScale(i, j) * acc : alpha_ * acc) : 0.0f;
        if (beta_ != 0.0f) {
          const float c = Load(p_.c.ptr, lc.type, Index(lc, batch, i, j));
          t = t + (p_.fp8 ? c_scale_ * c : beta_ * c);
        }
        if (bias_in) t = t + Load(s_.bias, p_.bias_type, bias_base + i);
        if (aux_out) {
          if (std::fabs(t) > amax_aux_) amax_aux_ = std::fabs(t);
          Store(s_.aux, p_.aux_type, aux_base + i + j * s_.aux_ld, p_.fp8 ? aux_scale_ * t : t);
        }
        if (relu) t = t > 0.0f ? t : 0.0f;
        if (gelu) t = Gelu(t);
        if (dgelu) {
          const double x = Load(s_.aux, p_.aux_type, aux_base + i + j * s_.aux_ld);
          t = static_cast<float>(static_cast<double>(t) * GeluGrad(x));
        }
        if (!bgrad_terms.empty()) bgrad_terms[i * p_.n + j] = t;
        if (std::fabs(t) > amax_d_) amax_d_ = std::fabs(t);
        Store(const_cast<void*>(p_.d.ptr), ld.type, Index(ld, batch, i, j), p_.fp8 ? d_scale_ * t : t);
      }
    }
    void* bias_out = const_cast<void*>(s_.bias);
    if (e == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
      AccumPlan plan(AccumFromEnv(), AccumPrecision::kFp32, p_.n, p_.call);
      for (int64_t i = 0; i < p_.m; ++i) Store(bias_out, p_.bias_type, bias_base + i, plan.Sum(&bgrad_terms[i * p_.n]));
    } else if (e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB) {
      AccumPlan plan(AccumFromEnv(), AccumPrecision::kFp32, p_.k, p_.call);
      std::vector<float> terms(p_.k);
      const bool rows_of_a = e == CUBLASLT_EPILOGUE_BGRADA;
      for (int64_t x = 0; x < (rows_of_a ? p_.m : p_.n); ++x) {
        for (int64_t p = 0; p < p_.k; ++p) terms[p] = rows_of_a ? a_[x + p * p_.m] : b_[p + x * p_.k];
        Store(bias_out, p_.bias_type, bias_base + x, plan.Sum(terms.data()));
      }
    }
  }

  const MatmulProblem& p_;
  const MatmulDescState& s_;
  const float alpha_, beta_;
  const AccumPlan plan_;
  float ab_scale_ = 1.0f, c_scale_ = 1.0f, d_scale_ = 1.0f, aux_scale_ = 1.0f;
  bool a_vector_ = false, b_vector_ = false;
  float amax_d_ = 0.0f, amax_aux_ = 0.0f;
  std::vector<float> a_, b_, acc_;
};

}  // namespace

void ComputeMatmul(const MatmulProblem& problem, float alpha, float beta) { Matmul(problem, alpha, beta).Run(); }

}  // namespace simgpu::cublaslt
