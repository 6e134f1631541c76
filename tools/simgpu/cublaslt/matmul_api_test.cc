// cublasLtMatmul's and the heuristic's status codes for bad arguments (matmul.h), handles, stream semantics (work on
// the given stream, asynchronously; device scalars read when the work runs) and the algorithm the heuristic returns.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"

namespace {

// A valid FP32 problem (m = 4, n = 3, k = 2, column-major, no padding) whose descriptors a test then breaks.
class LtApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cublasLtCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&a_, CUDA_R_32F, 4, 2, 4), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&b_, CUDA_R_32F, 2, 3, 2), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&c_, CUDA_R_32F, 4, 3, 4), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatrixLayoutCreate(&d_, CUDA_R_32F, 4, 3, 4), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref_), CUBLAS_STATUS_SUCCESS);
    for (int i = 0; i < 12; ++i) c_host_[i] = static_cast<float>(i);
  }
  void TearDown() override {
    for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulDescDestroy(desc_);
    cublasLtMatmulPreferenceDestroy(pref_);
    EXPECT_EQ(cublasLtDestroy(handle_), CUBLAS_STATUS_SUCCESS);
  }

  cublasStatus_t Matmul(cudaStream_t stream = nullptr, const void* alpha = nullptr, const void* beta = nullptr) {
    return cublasLtMatmul(handle_, desc_, alpha ? alpha : &one_, a_host_, a_, b_host_, b_, beta ? beta : &one_,
                          c_host_, c_, d_host_, d_, nullptr, nullptr, 0, stream);
  }
  // The heuristic's status; *count is set to its returned algorithm count.
  cublasStatus_t Heuristic(int* count) {
    cublasLtMatmulHeuristicResult_t r[3];
    *count = -1;
    return cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, d_, pref_, 3, r, count);
  }
  template <typename T>
  void SetDesc(cublasLtMatmulDescAttributes_t attr, T value) {
    ASSERT_EQ(cublasLtMatmulDescSetAttribute(desc_, attr, &value, sizeof value), CUBLAS_STATUS_SUCCESS);
  }
  template <typename T>
  void SetLayout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, T value) {
    ASSERT_EQ(cublasLtMatrixLayoutSetAttribute(l, attr, &value, sizeof value), CUBLAS_STATUS_SUCCESS);
  }
  // Both the heuristic and the matmul return `status` (the heuristic with no algorithm unless it succeeds).
  void ExpectBoth(cublasStatus_t status) {
    int count;
    EXPECT_EQ(Heuristic(&count), status);
    EXPECT_EQ(count, status == CUBLAS_STATUS_SUCCESS ? 1 : 0);
    EXPECT_EQ(Matmul(), status);
    cudaDeviceSynchronize();
  }

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  float a_host_[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float b_host_[6] = {1, 0, 0, 1, 1, 1};
  float c_host_[12];
  float d_host_[12] = {};
  float one_ = 1.0f;
};

TEST_F(LtApi, ValidProblemComputesAndHeuristicDescribesTheAlgorithm) {
  cublasLtMatmulHeuristicResult_t r[3];
  memset(r, 0x7f, sizeof r);
  int count = -1;
  ASSERT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, d_, pref_, 3, r, &count),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(count, 1);
  EXPECT_EQ(r[0].state, CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(r[0].workspaceSize, 0u);
  EXPECT_GT(r[0].wavesCount, 0.0f);
  int32_t id = -1, splitk = -1;
  size_t written = 0;
  ASSERT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&r[0].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written), 0);
  ASSERT_EQ(cublasLtMatmulAlgoConfigGetAttribute(&r[0].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, 4, nullptr), 0);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(splitk, 1);
  EXPECT_EQ(cublasLtMatmulAlgoConfigSetAttribute(&r[0].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id),
            CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_EQ(cublasLtMatmul(handle_, desc_, &one_, a_host_, a_, b_host_, b_, &one_, c_host_, c_, d_host_, d_,
                           &r[0].algo, nullptr, 0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // D = A B + C with A = [1 5; 2 6; 3 7; 4 8], B = [1 0 1; 0 1 1].
  const float want[12] = {1, 3, 5, 7, 9, 11, 13, 15, 6 + 8, 8 + 9, 10 + 10, 12 + 11};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(d_host_[i], want[i]) << i;
}

TEST_F(LtApi, NullArguments) {
  EXPECT_EQ(cublasLtMatmul(nullptr, desc_, &one_, a_host_, a_, b_host_, b_, &one_, c_host_, c_, d_host_, d_, nullptr,
                           nullptr, 0, nullptr),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasLtMatmul(handle_, nullptr, &one_, a_host_, a_, b_host_, b_, &one_, c_host_, c_, d_host_, d_,
                           nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmul(handle_, desc_, &one_, a_host_, nullptr, b_host_, b_, &one_, c_host_, c_, d_host_, d_,
                           nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmul(handle_, desc_, nullptr, a_host_, a_, b_host_, b_, &one_, c_host_, c_, d_host_, d_,
                           nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmul(handle_, desc_, &one_, a_host_, a_, b_host_, b_, nullptr, c_host_, c_, d_host_, d_,
                           nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulHeuristicResult_t r;
  int count;
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(nullptr, desc_, a_, b_, c_, d_, pref_, 1, &r, &count),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, d_, pref_, 0, &r, &count),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, d_, pref_, 1, &r, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, d_, nullptr, 1, &r, &count),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(LtApi, ShapesThatDisagree) {
  SetLayout<uint64_t>(c_, CUBLASLT_MATRIX_LAYOUT_ROWS, 5);  // C 5 x 3, D 4 x 3
  SetLayout<int64_t>(c_, CUBLASLT_MATRIX_LAYOUT_LD, 5);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(LtApi, TransposeChangesTheExpectedShape) {
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);  // op(A) would be 2 x 4: disagrees with D
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA, 7);  // not an operation
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(LtApi, LeadingDimensionBelowRowsOrColumns) {
  SetLayout<int64_t>(a_, CUBLASLT_MATRIX_LAYOUT_LD, 3);  // column-major A has 4 rows
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
  SetLayout<int64_t>(a_, CUBLASLT_MATRIX_LAYOUT_LD, 2);
  SetLayout<int32_t>(a_, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_ROW);  // row-major A has 2 columns: ld 2 is fine
  ExpectBoth(CUBLAS_STATUS_SUCCESS);
  SetLayout<int64_t>(a_, CUBLASLT_MATRIX_LAYOUT_LD, 1);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(LtApi, BatchCountsMustAgree) {
  SetLayout<int32_t>(a_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 2);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
  for (cublasLtMatrixLayout_t l : {b_, c_, d_}) SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 2);
  int count;
  EXPECT_EQ(Heuristic(&count), CUBLAS_STATUS_SUCCESS);
  for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) SetLayout<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 0);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(LtApi, InPlaceNeedsIdenticalLayouts) {
  SetLayout<int64_t>(d_, CUBLASLT_MATRIX_LAYOUT_LD, 6);
  EXPECT_EQ(cublasLtMatmul(handle_, desc_, &one_, a_host_, a_, b_host_, b_, &one_, c_host_, c_, c_host_, d_, nullptr,
                           nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(LtApi, UnsupportedConfigurations) {
  const std::pair<cublasLtMatmulDescAttributes_t, int32_t> cases[] = {
      {CUBLASLT_MATMUL_DESC_TRANSC, CUBLAS_OP_T},
      {CUBLASLT_MATMUL_DESC_FILL_MODE, CUBLAS_FILL_MODE_LOWER},
      {CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE_VECTOR},
      {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLAS_COMPUTE_64F},
      {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLAS_COMPUTE_16F},
      {CUBLASLT_MATMUL_DESC_SCALE_TYPE, CUDA_R_16F},
      {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0},
  };
  for (const auto& [attr, value] : cases) {
    int32_t saved;
    size_t written;
    ASSERT_EQ(cublasLtMatmulDescGetAttribute(desc_, attr, &saved, sizeof saved, &written), CUBLAS_STATUS_SUCCESS);
    SetDesc<int32_t>(attr, value);
    SCOPED_TRACE(attr);
    ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED);
    SetDesc<int32_t>(attr, saved);
  }
  const uint32_t epilogues[] = {CUBLASLT_EPILOGUE_RELU_AUX, CUBLASLT_EPILOGUE_RELU_AUX_BIAS, CUBLASLT_EPILOGUE_DRELU,
                                CUBLASLT_EPILOGUE_DRELU_BGRAD, 3u};
  for (uint32_t e : epilogues) {
    SetDesc<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE, e);
    SCOPED_TRACE(e);
    ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED);
  }
  SetDesc<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
  SetLayout<int32_t>(a_, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_COL32);
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED);
  SetLayout<int32_t>(a_, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_COL);
  SetLayout<uint32_t>(d_, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_16F);  // C 32F, D 16F: C and D differ
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED);
  SetLayout<uint32_t>(d_, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_32F);
  SetLayout<uint32_t>(a_, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_16F);  // A 16F, B 32F
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(LtApi, EpilogueInputsMustBeSet) {
  SetDesc<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);  // no bias pointer
  float bias[4] = {};
  SetDesc<const void*>(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  ExpectBoth(CUBLAS_STATUS_SUCCESS);
  float aux[64] = {};
  SetDesc<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);  // no aux pointer
  SetDesc<void*>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);  // aux ld 0 < m
  SetDesc<int64_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 4);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);  // not a multiple of 8
  SetDesc<int64_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8);
  ExpectBoth(CUBLAS_STATUS_SUCCESS);
  SetDesc<int64_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 12);
  ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);  // batch stride not a multiple of 8
  SetDesc<int64_t>(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 0);
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_64F);
  SetDesc<uint32_t>(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  ExpectBoth(CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_F(LtApi, ScalePointersNeedFp8Operands) {
  float scale = 1.0f;
  const cublasLtMatmulDescAttributes_t pointers[] = {
      CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER};
  for (cublasLtMatmulDescAttributes_t attr : pointers) {
    SetDesc<float*>(attr, &scale);
    SCOPED_TRACE(attr);
    ExpectBoth(CUBLAS_STATUS_INVALID_VALUE);
    SetDesc<float*>(attr, nullptr);
  }
}

// FP8 restrictions of Hopper: TN layout, column order, not E5M2 x E5M2, D E5M2 only with an E5M2 operand.
TEST_F(LtApi, Fp8Restrictions) {
  cublasLtMatrixLayout_t a8, b8, c16, d8;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&a8, CUDA_R_8F_E4M3, 32, 16, 32), CUBLAS_STATUS_SUCCESS);  // k x m
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&b8, CUDA_R_8F_E4M3, 32, 16, 32), CUBLAS_STATUS_SUCCESS);  // k x n
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&c16, CUDA_R_16BF, 16, 16, 16), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&d8, CUDA_R_8F_E4M3, 16, 16, 16), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t r;
  int count;
  auto heuristic = [&] {
    return cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a8, b8, c16, d8, pref_, 1, &r, &count);
  };
  cublasLtMatrixLayout_t a8_nn;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&a8_nn, CUDA_R_8F_E4M3, 16, 32, 16), CUBLAS_STATUS_SUCCESS);  // m x k
  EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a8_nn, b8, c16, d8, pref_, 1, &r, &count),
            CUBLAS_STATUS_NOT_SUPPORTED)
      << "NN";
  cublasLtMatrixLayoutDestroy(a8_nn);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_INVALID_VALUE) << "NN with a k x m A: shapes disagree";
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_SUCCESS) << "TN";
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_INVALID_VALUE) << "row-wise scale_A without its vector";
  float scales[16] = {};
  SetDesc<float*>(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_SUCCESS) << "row-wise scale_A";
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_NOT_SUPPORTED) << "row-wise scale_C";
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F);
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F);
  SetDesc<float*>(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, nullptr);
  SetLayout<int32_t>(d8, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_ROW);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_NOT_SUPPORTED) << "row-major D";
  SetLayout<int32_t>(d8, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_COL);
  SetLayout<uint32_t>(d8, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_8F_E5M2);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_NOT_SUPPORTED) << "E4M3 x E4M3 -> E5M2";
  SetLayout<uint32_t>(b8, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_8F_E5M2);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_SUCCESS) << "E4M3 x E5M2 -> E5M2";
  SetLayout<uint32_t>(a8, CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_8F_E5M2);
  EXPECT_EQ(heuristic(), CUBLAS_STATUS_NOT_SUPPORTED) << "E5M2 x E5M2";
  for (cublasLtMatrixLayout_t l : {a8, b8, c16, d8}) cublasLtMatrixLayoutDestroy(l);
}

// A cublasHandle_t cast to cublasLtHandle_t is valid (as NVIDIA documents): any non-NULL handle runs.
TEST_F(LtApi, ForeignHandlesRunButOnlyOwnHandlesAreDestroyed) {
  int foreign = 0;
  auto* other = reinterpret_cast<cublasLtHandle_t>(&foreign);
  EXPECT_EQ(cublasLtMatmul(other, desc_, &one_, a_host_, a_, b_host_, b_, &one_, c_host_, c_, d_host_, d_, nullptr,
                           nullptr, 0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  cudaDeviceSynchronize();
  EXPECT_EQ(cublasLtDestroy(other), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasLtDestroy(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE);
}

TEST_F(LtApi, StreamIsTheOneGivenAndWorkIsAsynchronous) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  simgpu::testing::Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(stream, simgpu::testing::Gate::WaitFn, &gate), cudaSuccess);
  float* alpha;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&alpha), sizeof(float)), cudaSuccess);
  *alpha = 1.0f;
  SetDesc<int32_t>(CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE);
  float* zero;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&zero), sizeof(float)), cudaSuccess);
  *zero = 0.0f;
  for (float& x : d_host_) x = -1.0f;
  ASSERT_EQ(Matmul(stream, alpha, zero), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDescDestroy(desc_);  // descriptors may go as soon as the call returns
  cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  *alpha = 2.0f;  // device-mode scalars are read when the matmul runs
  EXPECT_EQ(d_host_[0], -1.0f) << "D written before the stream reached the matmul";
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(d_host_[0], 2.0f);
  EXPECT_EQ(d_host_[11], 2.0f * (4 + 8));
  cudaFree(alpha);
  cudaFree(zero);
  cudaStreamDestroy(stream);
  int bogus = 0;
  EXPECT_EQ(Matmul(reinterpret_cast<cudaStream_t>(&bogus)), CUBLAS_STATUS_EXECUTION_FAILED);
}

TEST(LtHandle, VersionsPropertiesAndStatusStrings) {
  EXPECT_EQ(cublasLtGetVersion(), static_cast<size_t>(CUBLAS_VERSION));
  EXPECT_EQ(cublasLtGetCudartVersion(), static_cast<size_t>(CUDART_VERSION));
  int v = -1;
  EXPECT_EQ(cublasLtGetProperty(MAJOR_VERSION, &v), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(v, CUBLAS_VER_MAJOR);
  EXPECT_EQ(cublasLtGetProperty(PATCH_LEVEL, &v), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(v, CUBLAS_VER_PATCH);
  EXPECT_EQ(cublasLtGetProperty(static_cast<libraryPropertyType>(3), &v), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtGetProperty(MAJOR_VERSION, nullptr), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_STREQ(cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasLtGetStatusString(CUBLAS_STATUS_INVALID_VALUE),
               "an unsupported value or parameter was passed to the function");
  EXPECT_STREQ(cublasLtGetStatusName(static_cast<cublasStatus_t>(2)), "unrecognized status");
}

}  // namespace
