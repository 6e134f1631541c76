// cublasLtMatmul with FP8 operands: every supported A/B/C/D type row of matmul.h x every epilogue x layout (tight
// and padded leading dimensions, strided batches, in place, device scalars) with and without the scale and amax
// pointers (scalar and row-wise OUTER_VEC_32F), against the FP64 reference and bound of matmul_test_util.h; and the reduced FP8 accumulator
// (SIMGPU_FP8_ACC_BITS, FAST_ACCUM) bit for bit against accumulate_reference.h.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/nv_dtype.h"
#include "tools/simgpu/common/accumulate.h"
#include "tools/simgpu/common/accumulate_reference.h"
#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cublaslt/matmul_test_util.h"

namespace simgpu::lt_testing {
namespace {

constexpr uint32_t kEpilogues[] = {
    CUBLASLT_EPILOGUE_DEFAULT,   CUBLASLT_EPILOGUE_RELU,          CUBLASLT_EPILOGUE_BIAS,
    CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU,          CUBLASLT_EPILOGUE_GELU_BIAS,
    CUBLASLT_EPILOGUE_GELU_AUX,  CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU,
    CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADA,      CUBLASLT_EPILOGUE_BGRADB};

struct Fp8Types {
  cudaDataType a, b, c, d;
};

class LtMatmulFp8 : public ::testing::TestWithParam<Fp8Types> {};

TEST_P(LtMatmulFp8, EveryEpilogueAndLayoutWithinTheBound) {
  const Fp8Types t = GetParam();
  uint32_t seed = 100;
  for (uint32_t e : kEpilogues) {
    for (int variant = 0; variant < 5; ++variant) {
      Case c;
      c.a_type = t.a;
      c.b_type = t.b;
      c.c_type = t.c;
      c.d_type = t.d;
      c.trans_a = CUBLAS_OP_T;  // FP8 on Hopper: the TN layout only
      c.trans_b = CUBLAS_OP_N;
      c.epilogue = e;
      c.scales = variant != 1;
      c.fp8_acc_bits = Fp8AccBitsFromEnv();
      c.seed = seed++;
      if (variant == 1) c.beta = 0.0f;
      if (variant == 2) {
        c.batch = 3;
        c.ld_pad = 16;
        c.stride_pad = 32;
        c.device_scalars = true;
        c.fast_accum = 1;
      }
      if (variant == 3) {
        if (t.c != t.d) continue;
        c.in_place = true;
        c.batch = 2;
      }
      if (variant == 4) c.outer_vec_scales = true;
      EXPECT_LT(RunCase(c), 1.0);
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, LtMatmulFp8,
    ::testing::Values(Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_16BF},
                      Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_8F_E4M3},
                      Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16F, CUDA_R_16F},
                      Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16F, CUDA_R_8F_E4M3},
                      Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F},
                      Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3},
                      Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_16BF, CUDA_R_8F_E5M2},
                      Fp8Types{CUDA_R_8F_E5M2, CUDA_R_8F_E4M3, CUDA_R_16F, CUDA_R_8F_E5M2},
                      Fp8Types{CUDA_R_8F_E5M2, CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_16BF},
                      Fp8Types{CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_32F, CUDA_R_32F}),
    [](const ::testing::TestParamInfo<Fp8Types>& info) {
      return std::string(TypeName(info.param.a)) + "_" + TypeName(info.param.b) + "_" + TypeName(info.param.c) +
             "_" + TypeName(info.param.d);
    });

// FP32 D = scale_D (alpha scale_A scale_B acc), E4M3 x E4M3, k = 300 (three promotion intervals), with FAST_ACCUM off
// and on: bit for bit the accumulator accumulate.h states for this process's SIMGPU_ACCUM and SIMGPU_FP8_ACC_BITS
// (promotion every kFp8PromoteInterval products, none with FAST_ACCUM), restated by accumulate_reference.h.
TEST(LtMatmulFp8, ReducedAccumulatorBitForBit) {
  const int64_t m = 5, n = 6, k = 300;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<uint8_t> a(k * m), b(k * n);  // A stored k x m (transposed), B k x n
  for (uint8_t& x : a) x = simgpu::nv::FloatToE4M3(dist(rng));
  for (uint8_t& x : b) x = simgpu::nv::FloatToE4M3(dist(rng));
  void *da, *db, *dd;
  float* dscale;
  cudaMalloc(&da, a.size());
  cudaMalloc(&db, b.size());
  cudaMalloc(&dd, m * n * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&dscale), 3 * sizeof(float));
  const float scales[3] = {0.375f, 1.75f, 0.5f};  // A, B, D
  cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dscale, scales, sizeof scales, cudaMemcpyHostToDevice);
  cublasLtHandle_t handle;
  ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, m);
  std::vector<float> results[2];
  for (int8_t fast : {0, 1}) {
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t t = CUBLAS_OP_T;
    const float* pa = dscale;
    const float* pb = dscale + 1;
    const float* pd = dscale + 2;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &pa, sizeof pa);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &pb, sizeof pb);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &pd, sizeof pd);
    const float alpha = 1.25f, beta = 0.0f;
    const int64_t call = NextCallIndex(FaultSite::kGemm) + 1;
    ASSERT_EQ(cublasLtMatmul(handle, desc, &alpha, da, la, db, lb, &beta, dd, ld, dd, ld, nullptr, nullptr, 0,
                             nullptr),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float>& got = results[fast];
    got.resize(m * n);
    cudaMemcpy(got.data(), dd, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    testing_ref::RefSpec spec;
    spec.config = AccumFromEnv();
    spec.precision = AccumPrecision::kFp8;
    spec.fp8_bits = Fp8AccBitsFromEnv();
    spec.interval = fast ? 0 : kFp8PromoteInterval;
    spec.call = call;
    const float s_ab = alpha * scales[0] * scales[1];
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        std::vector<double> products(k);
        for (int64_t p = 0; p < k; ++p) {
          products[p] = double{simgpu::nv::E4M3ToFloat(a[p + i * k])} * simgpu::nv::E4M3ToFloat(b[p + j * k]);
        }
        const float want = scales[2] * (s_ab * static_cast<float>(testing_ref::RefSum(spec, products)));
        ASSERT_EQ(simgpu::nv::FloatBits(got[i + j * m]), simgpu::nv::FloatBits(want))
            << "fast " << int{fast} << " (" << i << ", " << j << ")";
      }
    }
    cublasLtMatmulDescDestroy(desc);
  }
  // FAST_ACCUM changes nothing without a reduced accumulator; with one, and one sequential run of all 300 products
  // (sequential and random orders), turning promotion off changes some element (almost surely; fixed seed).
  const AccumOrder order = AccumFromEnv().order;
  if (Fp8AccBitsFromEnv() == 0) {
    EXPECT_EQ(results[0], results[1]);
  } else if (order == AccumOrder::kSequential || order == AccumOrder::kRandom) {
    EXPECT_NE(results[0], results[1]) << "SIMGPU_FP8_ACC_BITS=" << Fp8AccBitsFromEnv();
  }
  for (cublasLtMatrixLayout_t l : {la, lb, ld}) cublasLtMatrixLayoutDestroy(l);
  cublasLtDestroy(handle);
  for (void* p : {da, db, dd, static_cast<void*>(dscale)}) cudaFree(p);
}

// FP8 output saturates to the largest finite value (matmul.h), and amax reports the unsaturated maximum.
TEST(LtMatmulFp8, OutputSaturatesAndAmaxIsBeforeScaling) {
  const int64_t m = 2, n = 1, k = 1;
  const uint8_t a[2] = {simgpu::nv::FloatToE4M3(448.0f), simgpu::nv::FloatToE4M3(-3.0f)};  // k x m
  const uint8_t b[1] = {simgpu::nv::FloatToE4M3(2.0f)};
  void *da, *db, *dd;
  float* dev_floats;  // d scale, amax
  cudaMalloc(&da, 2);
  cudaMalloc(&db, 1);
  cudaMalloc(&dd, 2);
  cudaMalloc(reinterpret_cast<void**>(&dev_floats), 2 * sizeof(float));
  const float init[2] = {0.5f, -1.0f};
  cudaMemcpy(da, a, 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, 1, cudaMemcpyHostToDevice);
  cudaMemcpy(dev_floats, init, sizeof init, cudaMemcpyHostToDevice);
  cublasLtHandle_t handle;
  ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t t = CUBLAS_OP_T;
  const float* d_scale = dev_floats;
  float* amax = dev_floats + 1;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &d_scale, sizeof d_scale);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax, sizeof amax);
  cublasLtMatrixLayout_t la, lb, lc, ld;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, m);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_8F_E4M3, m, n, m);
  const float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cublasLtMatmul(handle, desc, &alpha, da, la, db, lb, &beta, nullptr, lc, dd, ld, nullptr, nullptr, 0,
                           nullptr),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  uint8_t d[2];
  float out[2];
  cudaMemcpy(d, dd, 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(out, dev_floats, sizeof out, cudaMemcpyDeviceToHost);
  EXPECT_EQ(d[0], 0x7e) << "896 * 0.5 = 448 exactly";
  EXPECT_EQ(simgpu::nv::E4M3ToFloat(d[1]), -3.0f);
  EXPECT_EQ(out[1], 896.0f) << "amax is taken before scale_D";
  // A larger scale_D overflows E4M3: saturated to 448, not NaN.
  const float big = 4.0f;
  cudaMemcpy(dev_floats, &big, sizeof big, cudaMemcpyHostToDevice);
  ASSERT_EQ(cublasLtMatmul(handle, desc, &alpha, da, la, db, lb, &beta, nullptr, lc, dd, ld, nullptr, nullptr, 0,
                           nullptr),
            CUBLAS_STATUS_SUCCESS);
  cudaMemcpy(d, dd, 2, cudaMemcpyDeviceToHost);
  EXPECT_EQ(d[0], 0x7e);
  EXPECT_EQ(d[1], simgpu::nv::FloatToE4M3(-24.0f));
  for (cublasLtMatrixLayout_t l : {la, lb, lc, ld}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(handle);
  for (void* p : {da, db, dd, static_cast<void*>(dev_floats)}) cudaFree(p);
}

}  // namespace
}  // namespace simgpu::lt_testing
