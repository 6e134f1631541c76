// RunCase (matmul_test_util.h): sets up every input of one cublasLtMatmul call, runs it, and checks every output
// against an FP64 reference written from cuBLASLt's documented semantics (matmul.h), independently of the library.
#include "tools/simgpu/cublaslt/matmul_test_util.h"

#include <cfenv>
#include <memory>

namespace simgpu::lt_testing {
namespace {

constexpr double kU32 = 1.0 / 16777216.0;  // 2^-24
constexpr double kGeluLipschitz = 1.2;     // max |d/dt gelu_tanh(t)| is about 1.13

bool HasBiasInput(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool HasBiasOutput(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}
bool HasAuxOutput(uint32_t e) { return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS; }
bool HasAuxInput(uint32_t e) { return e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD; }

double RefGelu(double x) {
  const double s = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(s * (x + 0.044715 * x * x * x)));
}
double RefGeluGrad(double x) {
  const double s = std::sqrt(2.0 / M_PI);
  const double u = s * (x + 0.044715 * x * x * x);
  const double du = s * (1.0 + 3.0 * 0.044715 * x * x);
  const double th = std::tanh(u);
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
}

// x rounded to `bits` significant bits, to nearest even (the FAST compute types' input model, restated).
double RoundSignificant(double x, int bits) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);
  const double q = std::ldexp(1.0, e - bits);
  return std::nearbyint(x / q) * q;
}

double RoundInput(cublasComputeType_t compute, double x) {
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_16F: return simgpu::nv::HalfToFloat(simgpu::nv::FloatToHalf(x));
    case CUBLAS_COMPUTE_32F_FAST_16BF: return RoundSignificant(x, 8);
    case CUBLAS_COMPUTE_32F_FAST_TF32: return RoundSignificant(x, 11);
    default: return x;
  }
}

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Records a failure when |got - want| > bound (NaN never passes); returns |got - want| / bound.
double Check(const char* what, int64_t b, int64_t i, int64_t j, double got, double want, double bound) {
  const double err = std::fabs(got - want);
  if (!(err <= bound)) {
    ADD_FAILURE() << what << " batch " << b << " (" << i << ", " << j << "): got " << got << " want " << want
                  << " |err| " << err << " > bound " << bound;
    return std::isnan(err) ? 1e30 : err / bound;
  }
  return bound > 0 ? err / bound : 0.0;
}

// The bound on a stored value: err on the exact value, then one rounding to `type`.
double StoreBound(cudaDataType type, double want, double err) {
  return err + UnitRoundoff(type) * (std::fabs(want) + err) + TinyError(type);
}

class Scalar {
 public:
  explicit Scalar(float v) {
    cudaMalloc(reinterpret_cast<void**>(&dev_), sizeof(float));
    cudaMemcpy(dev_, &v, sizeof v, cudaMemcpyHostToDevice);
  }
  ~Scalar() { cudaFree(dev_); }
  float Read() const {
    float v;
    cudaMemcpy(&v, dev_, sizeof v, cudaMemcpyDeviceToHost);
    return v;
  }
  float* dev() const { return dev_; }

 private:
  float* dev_ = nullptr;
};

}  // namespace

double RunCase(const Case& c) {
  SCOPED_TRACE(c.Name());
  std::mt19937 rng(c.seed);
  const bool fp8 = IsFp8(c.a_type);
  const uint32_t e = c.epilogue;
  const uint32_t checked = c.check_epilogue != 0 ? c.check_epilogue : e;
  const bool row = c.order == CUBLASLT_ORDER_ROW;
  auto ld_of = [&](int64_t rows, int64_t cols) { return (row ? cols : rows) + c.ld_pad; };
  auto stride_of = [&](int64_t rows, int64_t cols) {
    return c.batch > 1 ? (row ? rows : cols) * ld_of(rows, cols) + c.stride_pad : 0;
  };
  const int64_t ar = c.trans_a == CUBLAS_OP_N ? c.m : c.k, ac = c.trans_a == CUBLAS_OP_N ? c.k : c.m;
  const int64_t br = c.trans_b == CUBLAS_OP_N ? c.k : c.n, bc = c.trans_b == CUBLAS_OP_N ? c.n : c.k;
  Matrix a(c.a_type, c.order, ar, ac, ld_of(ar, ac), c.batch, stride_of(ar, ac));
  Matrix b(c.b_type, c.order, br, bc, ld_of(br, bc), c.batch, stride_of(br, bc));
  Matrix cm(c.c_type, c.order, c.m, c.n, ld_of(c.m, c.n), c.batch, stride_of(c.m, c.n));
  std::unique_ptr<Matrix> d_own;
  if (!c.in_place) {
    d_own = std::make_unique<Matrix>(c.d_type, c.order, c.m, c.n, ld_of(c.m, c.n), c.batch, stride_of(c.m, c.n));
  }
  Matrix& d = c.in_place ? cm : *d_own;
  const float range = fp8 ? 2.0f : 1.0f;
  a.Fill(&rng, -range, range);
  b.Fill(&rng, -range, range);
  if (c.beta != 0.0f) {
    cm.Fill(&rng, -1.0f, 1.0f);
  } else {
    cm.FillBytes(0xff);  // NaN in every type: C must not be read when beta == 0
  }
  if (!c.in_place) d.FillBytes(0x5a);

  // Bias (input or gradient output) and aux, typed as cuBLASLt's defaults say (matmul.h).
  const bool c16 = c.c_type == CUDA_R_16F || c.c_type == CUDA_R_16BF;
  const cudaDataType bias_type =
      c.bias_type != -1 ? static_cast<cudaDataType>(c.bias_type) : fp8 ? (c16 ? c.c_type : CUDA_R_16BF) : c.d_type;
  const int64_t bias_len = e == CUBLASLT_EPILOGUE_BGRADB ? c.n : c.m;
  const int64_t bias_stride = c.batch > 1 ? bias_len + 3 : 0;
  Matrix bias(bias_type, CUBLASLT_ORDER_COL, bias_len, 1, bias_len, c.batch, bias_stride);
  if (HasBiasInput(e)) bias.Fill(&rng, -1.0f, 1.0f);
  const int64_t aux_ld = RoundUp(c.m, 8) + 8;
  const int64_t aux_stride = c.batch > 1 ? aux_ld * c.n + 8 : 0;
  Matrix aux(c.d_type, CUBLASLT_ORDER_COL, c.m, c.n, aux_ld, c.batch, aux_stride);
  if (HasAuxInput(e)) aux.Fill(&rng, -3.0f, 3.0f);
  const std::vector<uint8_t> d_before = d.host();
  const std::vector<uint8_t> c_before = cm.host();  // C as the call reads it (D overwrites it in place)
  auto c_at = [&](int64_t bt, int64_t i, int64_t j) {
    return Decode(c.c_type, &c_before[cm.Index(bt, i, j) * TypeBytes(c.c_type)]);
  };
  for (Matrix* m : {&a, &b, &cm, &bias, &aux}) m->Upload();
  if (!c.in_place) d.Upload();

  const bool scales = fp8 && c.scales;
  const float sa = scales ? 0.5f : 1.0f, sb = scales ? 1.5f : 1.0f, sc = scales ? 0.75f : 1.0f;
  const float sd = scales ? (IsFp8(c.d_type) ? 0.25f : 1.25f) : 1.0f, saux = scales ? 0.5f : 1.0f;
  Scalar a_scale(sa), b_scale(sb), c_scale(sc), d_scale(sd), aux_scale(saux), amax_d(-1.0f), amax_aux(-1.0f);
  Scalar alpha_dev(c.alpha), beta_dev(c.beta);
  const bool outer = scales && c.outer_vec_scales;
  std::vector<float> a_vec(c.m), b_vec(c.n);
  std::uniform_real_distribution<float> scale_dist(0.25f, 2.0f);
  for (float& x : a_vec) x = scale_dist(rng);
  for (float& x : b_vec) x = scale_dist(rng);
  float *a_vec_dev = nullptr, *b_vec_dev = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&a_vec_dev), a_vec.size() * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&b_vec_dev), b_vec.size() * sizeof(float));
  cudaMemcpy(a_vec_dev, a_vec.data(), a_vec.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(b_vec_dev, b_vec.data(), b_vec.size() * sizeof(float), cudaMemcpyHostToDevice);

  cublasLtMatmulDesc_t desc;
  EXPECT_EQ(cublasLtMatmulDescCreate(&desc, c.compute, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* value, size_t size) {
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, attr, value, size), CUBLAS_STATUS_SUCCESS) << "attribute " << attr;
  };
  const int32_t mode = c.device_scalars ? CUBLASLT_POINTER_MODE_DEVICE : CUBLASLT_POINTER_MODE_HOST;
  set(CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode);
  set(CUBLASLT_MATMUL_DESC_TRANSA, &c.trans_a, sizeof c.trans_a);
  set(CUBLASLT_MATMUL_DESC_TRANSB, &c.trans_b, sizeof c.trans_b);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
  void* bias_ptr = bias.dev();
  void* aux_ptr = aux.dev();
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof bias_ptr);
  set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride, sizeof bias_stride);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux_ptr, sizeof aux_ptr);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &aux_stride, sizeof aux_stride);
  if (c.bias_type != -1) set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &c.bias_type, sizeof c.bias_type);
  if (fp8) set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &c.fast_accum, sizeof c.fast_accum);
  if (scales) {
    const std::pair<cublasLtMatmulDescAttributes_t, float*> pointers[] = {
        {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale.dev()},
        {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale.dev()},
        {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, c_scale.dev()},
        {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, d_scale.dev()},
        {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, amax_d.dev()},
        {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, aux_scale.dev()},
        {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, amax_aux.dev()}};
    for (const auto& [attr, ptr] : pointers) set(attr, &ptr, sizeof ptr);
  }
  if (outer) {
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_vec_dev, sizeof a_vec_dev);
    set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_vec_dev, sizeof b_vec_dev);
    set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode);
    set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode);
  }
  cublasLtMatrixLayout_t la = a.Layout(), lb = b.Layout(), lc = cm.Layout(), ldd = d.Layout();
  cublasLtHandle_t handle;
  EXPECT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref;
  EXPECT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  uint64_t workspace = 1 << 20;
  EXPECT_EQ(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                 sizeof workspace),
            CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, ldd, pref, 1, &result, &found),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(found, 1);
  EXPECT_EQ(result.state, CUBLAS_STATUS_SUCCESS);
  EXPECT_LE(result.workspaceSize, workspace);
  const void* alpha = c.device_scalars ? static_cast<const void*>(alpha_dev.dev()) : &c.alpha;
  const void* beta = c.device_scalars ? static_cast<const void*>(beta_dev.dev()) : &c.beta;
  EXPECT_EQ(cublasLtMatmul(handle, desc, alpha, a.dev(), la, b.dev(), lb, beta, cm.dev(), lc, d.dev(), ldd,
                           &result.algo, nullptr, 0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  d.Download();
  bias.Download();
  aux.Download();
  for (cublasLtMatrixLayout_t l : {la, lb, lc, ldd}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatmulDescDestroy(desc);
  EXPECT_EQ(cublasLtDestroy(handle), CUBLAS_STATUS_SUCCESS);

  // Reference.
  const double u_acc = fp8 && c.fp8_acc_bits > 0 ? std::ldexp(1.0, -c.fp8_acc_bits) : kU32;
  auto scale_ab = [&](int64_t i, int64_t j) {
    return outer ? static_cast<double>(c.alpha) * a_vec[i] * b_vec[j] : static_cast<double>(c.alpha) * sa * sb;
  };
  const double s_c = static_cast<double>(c.beta) * sc;
  double worst = 0.0, amax_ref = 0.0, amax_err = 0.0, amax_aux_ref = 0.0, amax_aux_err = 0.0;
  auto op_a = [&](int64_t bt, int64_t i, int64_t p) {
    return RoundInput(c.compute, c.trans_a == CUBLAS_OP_N ? a.At(bt, i, p) : a.At(bt, p, i));
  };
  auto op_b = [&](int64_t bt, int64_t p, int64_t j) {
    return RoundInput(c.compute, c.trans_b == CUBLAS_OP_N ? b.At(bt, p, j) : b.At(bt, j, p));
  };
  for (int64_t bt = 0; bt < c.batch; ++bt) {
    std::vector<double> grad_sum(c.m, 0.0), grad_abs(c.m, 0.0), grad_err(c.m, 0.0);
    for (int64_t j = 0; j < c.n; ++j) {
      for (int64_t i = 0; i < c.m; ++i) {
        double acc = 0.0, abs_sum = 0.0;
        for (int64_t p = 0; p < c.k; ++p) {
          const double x = op_a(bt, i, p) * op_b(bt, p, j);
          acc += x;
          abs_sum += std::fabs(x);
        }
        const double c_term = c.beta != 0.0f ? s_c * c_at(bt, i, j) : 0.0;
        const double bias_term = HasBiasInput(checked) ? bias.At(bt, i, 0) : 0.0;
        const double s_ab = scale_ab(i, j);
        const double t = s_ab * acc + c_term + bias_term;
        const double err_t = Gamma(static_cast<double>(c.k + 5), u_acc) *
                             (std::fabs(s_ab) * abs_sum + std::fabs(c_term) + std::fabs(bias_term));
        if (HasAuxOutput(checked)) {
          const double want = saux * t, err = saux * err_t + kU32 * std::fabs(want);
          worst = std::max(worst, Check("aux", bt, i, j, aux.At(bt, i, j), want, StoreBound(aux.type(), want, err)));
          amax_aux_ref = std::max(amax_aux_ref, std::fabs(t));
          amax_aux_err = std::max(amax_aux_err, err_t);
        }
        double f = t, err_f = err_t;
        if (checked == CUBLASLT_EPILOGUE_RELU || checked == CUBLASLT_EPILOGUE_RELU_BIAS) {
          f = t > 0 ? t : 0;
        } else if (checked == CUBLASLT_EPILOGUE_GELU || checked == CUBLASLT_EPILOGUE_GELU_BIAS ||
                   HasAuxOutput(checked)) {
          f = RefGelu(t);
          err_f = kGeluLipschitz * err_t + kU32 * std::fabs(f);
        } else if (HasAuxInput(checked)) {
          const double g = RefGeluGrad(aux.At(bt, i, j));
          f = t * g;
          err_f = std::fabs(g) * err_t + kU32 * std::fabs(f);
        }
        amax_ref = std::max(amax_ref, std::fabs(f));
        amax_err = std::max(amax_err, err_f);
        grad_sum[i] += f;
        grad_abs[i] += std::fabs(f);
        grad_err[i] += err_f;
        const double want = sd * f;
        const double err = sd * err_f + (scales ? kU32 * std::fabs(want) : 0.0);
        EXPECT_LT(std::fabs(want) + err, MaxFinite(c.d_type)) << "test inputs must not saturate D";
        worst = std::max(worst, Check("D", bt, i, j, d.At(bt, i, j), want, StoreBound(c.d_type, want, err)));
      }
    }
    if (checked == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
      for (int64_t i = 0; i < c.m; ++i) {
        const double err = grad_err[i] + Gamma(static_cast<double>(c.n), kU32) * (grad_abs[i] + grad_err[i]);
        worst = std::max(worst, Check("bias gradient", bt, i, 0, bias.At(bt, i, 0), grad_sum[i],
                                      StoreBound(bias_type, grad_sum[i], err)));
      }
    } else if (checked == CUBLASLT_EPILOGUE_BGRADA || checked == CUBLASLT_EPILOGUE_BGRADB) {
      const bool of_a = checked == CUBLASLT_EPILOGUE_BGRADA;
      for (int64_t x = 0; x < bias_len; ++x) {
        double sum = 0.0, abs_sum = 0.0;
        for (int64_t p = 0; p < c.k; ++p) {
          const double v = of_a ? op_a(bt, x, p) : op_b(bt, p, x);
          sum += v;
          abs_sum += std::fabs(v);
        }
        const double err = Gamma(static_cast<double>(c.k), kU32) * abs_sum;
        worst = std::max(worst, Check("bias gradient", bt, x, 0, bias.At(bt, x, 0), sum,
                                      StoreBound(bias_type, sum, err)));
      }
    }
  }
  if (scales) {
    worst = std::max(worst, Check("amax D", 0, 0, 0, amax_d.Read(), amax_ref, amax_err + 1e-300));
    const double aux_amax = amax_aux.Read();
    if (HasAuxOutput(checked)) {
      worst = std::max(worst, Check("amax aux", 0, 0, 0, aux_amax, amax_aux_ref, amax_aux_err + 1e-300));
    } else {
      EXPECT_EQ(aux_amax, 0.0) << "no aux output: amax over no values";
    }
  }
  cudaFree(a_vec_dev);
  cudaFree(b_vec_dev);
  // D's padding (between columns and between batches) keeps its bytes.
  const size_t width = TypeBytes(d.type());
  for (int64_t x = 0; x < d.elems(); ++x) {
    if (d.Covered(x)) continue;
    if (memcmp(&d.host()[x * width], &d_before[x * width], width) != 0) {
      ADD_FAILURE() << "padding element " << x << " of D was written";
      break;
    }
  }
  return worst;
}

}  // namespace simgpu::lt_testing
