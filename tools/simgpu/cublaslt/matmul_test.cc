// cublasLtMatmul with FP32, FP16 and BF16 operands: every epilogue x layout (column and row order, transposes, padded
// leading dimensions, strided batches, in place, host and device scalars, beta 0) x type combination against the
// FP64 reference and bound of matmul_test_util.h; and, bit for bit, the summation order accumulate.h states.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest-spi.h"
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

struct LayoutVariant {
  int32_t order;
  cublasOperation_t trans_a, trans_b;
  int64_t batch, ld_pad, stride_pad;
  bool in_place, device_scalars;
  float beta;
};

constexpr LayoutVariant kLayouts[] = {
    {CUBLASLT_ORDER_COL, CUBLAS_OP_N, CUBLAS_OP_N, 1, 0, 0, false, false, 0.5f},
    {CUBLASLT_ORDER_COL, CUBLAS_OP_T, CUBLAS_OP_T, 1, 3, 0, false, true, 0.5f},
    {CUBLASLT_ORDER_ROW, CUBLAS_OP_N, CUBLAS_OP_T, 1, 2, 0, false, false, 0.0f},
    {CUBLASLT_ORDER_COL, CUBLAS_OP_T, CUBLAS_OP_N, 3, 1, 5, false, false, -1.25f},
    {CUBLASLT_ORDER_ROW, CUBLAS_OP_N, CUBLAS_OP_N, 2, 0, 7, false, true, 0.5f},
    {CUBLASLT_ORDER_COL, CUBLAS_OP_N, CUBLAS_OP_C, 2, 0, 4, true, false, 1.0f},
};

struct Types {
  cudaDataType ab, cd;
  cublasComputeType_t compute;
};

class LtMatmulTypes : public ::testing::TestWithParam<Types> {};

TEST_P(LtMatmulTypes, EveryEpilogueAndLayoutWithinTheBound) {
  const Types t = GetParam();
  uint32_t seed = 1;
  for (uint32_t e : kEpilogues) {
    for (const LayoutVariant& l : kLayouts) {
      Case c;
      c.a_type = c.b_type = t.ab;
      c.c_type = c.d_type = t.cd;
      c.compute = t.compute;
      c.order = l.order;
      c.trans_a = l.trans_a;
      c.trans_b = l.trans_b;
      c.batch = l.batch;
      c.ld_pad = l.ld_pad;
      c.stride_pad = l.stride_pad;
      c.in_place = l.in_place;
      c.device_scalars = l.device_scalars;
      c.beta = l.beta;
      c.epilogue = e;
      c.seed = seed++;
      EXPECT_LT(RunCase(c), 1.0);
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, LtMatmulTypes,
    ::testing::Values(Types{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
                      Types{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC},
                      Types{CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F},
                      Types{CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
                      Types{CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
                      Types{CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F},
                      Types{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
                      Types{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F},
                      Types{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF}),
    [](const ::testing::TestParamInfo<Types>& info) {
      return std::string(TypeName(info.param.ab)) + "_" + TypeName(info.param.cd) + "_compute" +
             std::to_string(info.param.compute);
    });

// Host copies of an FP32 operand and its device buffer.
struct Buffer {
  explicit Buffer(std::vector<float> v) : host(std::move(v)) {
    cudaMalloc(&dev, host.size() * sizeof(float));
    cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  }
  ~Buffer() { cudaFree(dev); }
  std::vector<float> Download() const {
    std::vector<float> out(host.size());
    cudaMemcpy(out.data(), dev, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
    return out;
  }
  std::vector<float> host;
  void* dev = nullptr;
};

std::vector<float> Random(size_t n, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(*rng);
  return v;
}

// FP32 D = alpha A B + beta C + bias, bit for bit as matmul.h states it: the k products of each element summed in
// accumulate.h's order for this process's SIMGPU_ACCUM and this call's number (restated independently by
// accumulate_reference.h), then alpha * acc, + beta * C, + bias, each rounded to FP32.
TEST(LtMatmul, SummationOrderBitForBit) {
  const int64_t m = 9, n = 7, k = 300;
  std::mt19937 rng(5);
  Buffer a(Random(m * k, &rng)), b(Random(k * n, &rng)), c(Random(m * n, &rng)), bias(Random(m, &rng));
  Buffer d(std::vector<float>(m * n, 0.0f));
  cublasLtHandle_t handle;
  ASSERT_EQ(cublasLtCreate(&handle), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), 0);
  ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias.dev, sizeof bias.dev), 0);
  cublasLtMatrixLayout_t la, lb, lc;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m), CUBLAS_STATUS_SUCCESS);
  const float alpha = 0.625f, beta = -1.5f;
  const int64_t call = NextCallIndex(FaultSite::kGemm) + 1;
  ASSERT_EQ(cublasLtMatmul(handle, desc, &alpha, a.dev, la, b.dev, lb, &beta, c.dev, lc, d.dev, lc, nullptr, nullptr,
                           0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = d.Download();
  testing_ref::RefSpec spec;
  spec.config = AccumFromEnv();
  spec.precision = AccumPrecision::kFp32;
  spec.call = call;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      std::vector<double> products(k);
      for (int64_t p = 0; p < k; ++p) products[p] = double{a.host[i + p * m]} * b.host[p + j * k];
      float t = alpha * static_cast<float>(testing_ref::RefSum(spec, products));
      t = t + beta * c.host[i + j * m];
      t = t + bias.host[i];
      ASSERT_EQ(simgpu::nv::FloatBits(got[i + j * m]), simgpu::nv::FloatBits(t)) << i << ", " << j;
    }
  }
  for (cublasLtMatrixLayout_t l : {la, lb, lc}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(handle);
}

// An explicit BIAS_DATA_TYPE (FP32 bias with BF16 output), with every bias epilogue.
TEST(LtMatmul, ExplicitBiasDataType) {
  for (uint32_t e : {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU_BGRAD,
                     CUBLASLT_EPILOGUE_BGRADA, CUBLASLT_EPILOGUE_BGRADB}) {
    Case c;
    c.a_type = c.b_type = c.c_type = c.d_type = CUDA_R_16BF;
    c.bias_type = CUDA_R_32F;
    c.epilogue = e;
    EXPECT_LT(RunCase(c), 1.0);
  }
}

// The checker can fail: a GELU or RELU result checked as if no epilogue had run is outside the bound somewhere.
TEST(LtMatmul, ReferenceRejectsTheWrongEpilogue) {
  for (uint32_t e : {CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_BIAS}) {
    Case c;
    c.epilogue = e;
    c.check_epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      RunCase(c);
    }
    EXPECT_GT(failures.size(), 0) << "epilogue " << e << " passed as DEFAULT";
  }
}

}  // namespace
}  // namespace simgpu::lt_testing
