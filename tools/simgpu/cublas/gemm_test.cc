// simgpu's cuBLAS GEMMs against an FP64 reference (within the FP32-accumulation bound) and against an
// independent implementation of the documented FP32 summation order (bit for bit), for every supported dtype
// combination, every transpose combination, padded leading dimensions and several alpha/beta.
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "tools/simgpu/cublas/gemm_test_util.h"

namespace simgpu::testing {
namespace {

struct Types {
  cudaDataType ab;
  cudaDataType c;
};
const Types kTypes[] = {{CUDA_R_32F, CUDA_R_32F},  {CUDA_R_16F, CUDA_R_16F},  {CUDA_R_16F, CUDA_R_32F},
                        {CUDA_R_16BF, CUDA_R_16BF}, {CUDA_R_16BF, CUDA_R_32F}};
const cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
const float kScalars[][2] = {{1.0f, 0.0f}, {0.5f, -1.25f}, {-2.0f, 1.0f}};

const char* TypeName(cudaDataType t) { return t == CUDA_R_32F ? "f32" : t == CUDA_R_16F ? "f16" : "bf16"; }
const char* OpName(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : op == CUBLAS_OP_T ? "T" : "C"; }

class Cublas : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate_v2(&handle_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cublasDestroy_v2(handle_), CUBLAS_STATUS_SUCCESS); }
  cublasHandle_t handle_ = nullptr;
};

// Operand sizes for a case: a = op(A) storage, b = op(B) storage, c = C storage, including padding and batches.
size_t SizeA(const GemmCase& g) { return (g.batch - 1) * g.stride_a + g.lda * (g.ta == CUBLAS_OP_N ? g.k : g.m); }
size_t SizeB(const GemmCase& g) { return (g.batch - 1) * g.stride_b + g.ldb * (g.tb == CUBLAS_OP_N ? g.n : g.k); }
size_t SizeC(const GemmCase& g) { return (g.batch - 1) * g.stride_c + g.ldc * g.n; }

GemmCase MakeCase(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, int pad,
                  int64_t batch) {
  GemmCase g;
  g.ta = ta;
  g.tb = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = (ta == CUBLAS_OP_N ? m : k) + pad;
  g.ldb = (tb == CUBLAS_OP_N ? k : n) + 2 * pad;
  g.ldc = m + 3 * pad;
  g.batch = batch;
  return g;
}

void SetStrides(GemmCase* g, int gap) {
  GemmCase one = *g;
  one.batch = 1;
  g->stride_a = static_cast<long long>(SizeA(one)) + gap;
  g->stride_b = static_cast<long long>(SizeB(one)) + gap;
  g->stride_c = static_cast<long long>(SizeC(one)) + gap;
}

class GemmCombo
    : public ::testing::TestWithParam<std::tuple<int, cublasOperation_t, cublasOperation_t>> {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate_v2(&handle_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cublasDestroy_v2(handle_), CUBLAS_STATUS_SUCCESS); }

  // Runs one case through `entry` (0: cublasGemmEx or cublasSgemm_v2, 1: the _64 variant, 2: strided batched,
  // 3: strided batched _64) and checks both properties.
  void Run(const Types& types, GemmCase g, int entry, std::mt19937* rng) {
    SCOPED_TRACE(std::string(TypeName(types.ab)) + "->" + TypeName(types.c) + " " + OpName(g.ta) + OpName(g.tb) +
                 " m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
                 " lda=" + std::to_string(g.lda) + " ldb=" + std::to_string(g.ldb) + " ldc=" +
                 std::to_string(g.ldc) + " batch=" + std::to_string(g.batch) + " alpha=" + std::to_string(g.alpha) +
                 " beta=" + std::to_string(g.beta) + " entry=" + std::to_string(entry));
    Operand a = RandomOperand(types.ab, SizeA(g), rng);
    Operand b = RandomOperand(types.ab, SizeB(g), rng);
    Operand c0 = RandomOperand(types.c, SizeC(g), rng);
    DeviceBuffer da(a), db(b), dc(c0);
    cublasStatus_t st;
    bool sgemm = types.ab == CUDA_R_32F && types.c == CUDA_R_32F;
    switch (entry) {
      case 0:
        st = sgemm ? cublasSgemm_v2(handle_, g.ta, g.tb, g.m, g.n, g.k, &g.alpha, static_cast<float*>(da.get()),
                                    g.lda, static_cast<float*>(db.get()), g.ldb, &g.beta,
                                    static_cast<float*>(dc.get()), g.ldc)
                   : cublasGemmEx(handle_, g.ta, g.tb, g.m, g.n, g.k, &g.alpha, da.get(), types.ab, g.lda, db.get(),
                                  types.ab, g.ldb, &g.beta, dc.get(), types.c, g.ldc, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT);
        break;
      case 1:
        st = sgemm ? cublasSgemm_v2_64(handle_, g.ta, g.tb, g.m, g.n, g.k, &g.alpha, static_cast<float*>(da.get()),
                                       g.lda, static_cast<float*>(db.get()), g.ldb, &g.beta,
                                       static_cast<float*>(dc.get()), g.ldc)
                   : cublasGemmEx_64(handle_, g.ta, g.tb, g.m, g.n, g.k, &g.alpha, da.get(), types.ab, g.lda,
                                     db.get(), types.ab, g.ldb, &g.beta, dc.get(), types.c, g.ldc,
                                     CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
        break;
      case 2:
        st = cublasGemmStridedBatchedEx(handle_, g.ta, g.tb, g.m, g.n, g.k, &g.alpha, da.get(), types.ab, g.lda,
                                        g.stride_a, db.get(), types.ab, g.ldb, g.stride_b, &g.beta, dc.get(), types.c,
                                        g.ldc, g.stride_c, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        break;
      default:
        st = cublasGemmStridedBatchedEx_64(handle_, g.ta, g.tb, g.m, g.n, g.k, &g.alpha, da.get(), types.ab, g.lda,
                                           g.stride_a, db.get(), types.ab, g.ldb, g.stride_b, &g.beta, dc.get(),
                                           types.c, g.ldc, g.stride_c, g.batch, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT);
        break;
    }
    ASSERT_EQ(st, CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Operand out(types.c, c0.size());
    dc.CopyTo(&out);
    BoundCheck check = CheckAgainstFp64(g, a, b, c0, out);
    EXPECT_EQ(check.violations, 0) << "worst error / bound = " << check.worst_ratio;
    EXPECT_EQ(check.padding_changed, 0);
    Operand expected = SequentialFp32(g, a, b, c0);
    EXPECT_EQ(out.bytes, expected.bytes) << "result differs from sequential FP32 accumulation";
    worst_ratio_ = std::max(worst_ratio_, check.worst_ratio);
  }

  cublasHandle_t handle_ = nullptr;
  double worst_ratio_ = 0.0;
};

TEST_P(GemmCombo, MatchesReferenceForAllScalarsLayoutsAndEntryPoints) {
  const Types types = kTypes[std::get<0>(GetParam())];
  const cublasOperation_t ta = std::get<1>(GetParam()), tb = std::get<2>(GetParam());
  std::mt19937 rng(1234 + 97 * std::get<0>(GetParam()) + 7 * ta + tb);
  for (const auto& scalars : kScalars) {
    for (int pad : {0, 3}) {
      for (int entry = 0; entry < 4; ++entry) {
        GemmCase g = MakeCase(ta, tb, 5, 7, 33, pad, entry >= 2 ? 3 : 1);
        SetStrides(&g, entry >= 2 ? pad * 5 : 0);
        g.alpha = scalars[0];
        g.beta = scalars[1];
        Run(types, g, entry, &rng);
      }
    }
  }
  RecordProperty("worst_error_over_bound", std::to_string(worst_ratio_));
}

INSTANTIATE_TEST_SUITE_P(
    AllCombos, GemmCombo,
    ::testing::Combine(::testing::Range(0, 5), ::testing::ValuesIn(kOps), ::testing::ValuesIn(kOps)),
    [](const ::testing::TestParamInfo<GemmCombo::ParamType>& info) {
      const Types t = kTypes[std::get<0>(info.param)];
      return std::string(TypeName(t.ab)) + "_to_" + TypeName(t.c) + "_" + OpName(std::get<1>(info.param)) +
             OpName(std::get<2>(info.param));
    });

TEST_F(Cublas, BetaZeroDoesNotReadC) {
  for (const Types& types : kTypes) {
    const int m = 4, n = 3, k = 5;
    std::mt19937 rng(5);
    Operand a = RandomOperand(types.ab, m * k, &rng), b = RandomOperand(types.ab, k * n, &rng);
    Operand c0(types.c, m * n);
    for (int i = 0; i < m * n; ++i) c0.Set(i, std::numeric_limits<float>::quiet_NaN());
    DeviceBuffer da(a), db(b), dc(c0);
    float alpha = 1.0f, beta = 0.0f;
    ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da.get(), types.ab, m, db.get(),
                           types.ab, k, &beta, dc.get(), types.c, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    Operand out(types.c, m * n);
    dc.CopyTo(&out);
    for (int i = 0; i < m * n; ++i) EXPECT_TRUE(std::isfinite(out.values[i])) << TypeName(types.c) << " " << i;
  }
}

TEST_F(Cublas, AlphaZeroDoesNotReadAOrB) {
  const int m = 3, n = 3, k = 4;
  std::vector<float> nan_ab(m * k, std::numeric_limits<float>::quiet_NaN());
  Operand c0(CUDA_R_32F, m * n);
  for (int i = 0; i < m * n; ++i) c0.Set(i, static_cast<float>(i));
  DeviceBuffer da(nan_ab.size() * 4), dc(c0);
  cudaMemcpy(da.get(), nan_ab.data(), nan_ab.size() * 4, cudaMemcpyHostToDevice);
  float alpha = 0.0f, beta = 2.0f;
  ASSERT_EQ(cublasSgemm_v2(handle_, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, static_cast<float*>(da.get()), m,
                           static_cast<float*>(da.get()), k, &beta, static_cast<float*>(dc.get()), m),
            CUBLAS_STATUS_SUCCESS);
  Operand out(CUDA_R_32F, m * n);
  dc.CopyTo(&out);
  for (int i = 0; i < m * n; ++i) EXPECT_EQ(out.values[i], 2.0f * i);
}

TEST_F(Cublas, OutputIsRoundedToNearestEven) {
  // With BF16 operands 1 and 1, C = alpha exactly in FP32 before rounding. 1 + 2^-8 lies halfway between the
  // BF16 neighbours 1 and 1 + 2^-7 and must round to the even one, 1; 1 + 3 * 2^-8 lies halfway between
  // 1 + 2^-7 and 1 + 2^-6 and must round to 1 + 2^-6.
  Operand a(CUDA_R_16BF, 1), c0(CUDA_R_16BF, 1);
  a.Set(0, 1.0f);
  DeviceBuffer da(a), dc(c0);
  const float alphas[2] = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8)};
  const float expected[2] = {1.0f, 1.0f + std::ldexp(1.0f, -6)};
  const float zero = 0.0f;
  for (int t = 0; t < 2; ++t) {
    ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alphas[t], da.get(), CUDA_R_16BF, 1,
                           da.get(), CUDA_R_16BF, 1, &zero, dc.get(), CUDA_R_16BF, 1, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    Operand out(CUDA_R_16BF, 1);
    dc.CopyTo(&out);
    EXPECT_EQ(out.values[0], expected[t]) << t;
  }
}

TEST_F(Cublas, LegacyComputeTypeValueIsAccepted) {
  Operand a(CUDA_R_16BF, 4), b(CUDA_R_16BF, 4), c(CUDA_R_32F, 4);
  for (int i = 0; i < 4; ++i) {
    a.Set(i, static_cast<float>(i + 1));
    b.Set(i, i == 0 || i == 3 ? 1.0f : 0.0f);  // identity
  }
  DeviceBuffer da(a), db(b), dc(c);
  float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, da.get(), CUDA_R_16BF, 2, db.get(),
                         CUDA_R_16BF, 2, &beta, dc.get(), CUDA_R_32F, 2, static_cast<cublasComputeType_t>(CUDA_R_32F),
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  Operand out(CUDA_R_32F, 4);
  dc.CopyTo(&out);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.values[i], static_cast<float>(i + 1));
}

}  // namespace
}  // namespace simgpu::testing
