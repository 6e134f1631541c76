// cuBLAS handle state, argument checks and status codes, pointer modes and stream semantics of simgpu's
// libcublas.so.13.
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"

namespace {

using simgpu::testing::Gate;

class Handle : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cublasCreate_v2(&h_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cudaMalloc(&buf_, 1 << 16), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cublasDestroy_v2(h_), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaFree(buf_), cudaSuccess);
  }
  float* f() const { return static_cast<float*>(buf_); }

  cublasHandle_t h_ = nullptr;
  void* buf_ = nullptr;
};

TEST_F(Handle, StateRoundTrips) {
  cudaStream_t s, got = reinterpret_cast<cudaStream_t>(0x1234);
  ASSERT_EQ(cublasGetStream_v2(h_, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, nullptr);  // default: the legacy default stream
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cublasSetStream_v2(h_, s), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetStream_v2(h_, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, s);

  cublasPointerMode_t pm;
  ASSERT_EQ(cublasGetPointerMode_v2(h_, &pm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_HOST);
  ASSERT_EQ(cublasSetPointerMode_v2(h_, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetPointerMode_v2(h_, &pm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_DEVICE);
  EXPECT_EQ(cublasSetPointerMode_v2(h_, static_cast<cublasPointerMode_t>(5)), CUBLAS_STATUS_INVALID_VALUE);

  cublasMath_t mm;
  ASSERT_EQ(cublasGetMathMode(h_, &mm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm, CUBLAS_DEFAULT_MATH);
  auto tf32_strict =
      static_cast<cublasMath_t>(CUBLAS_TF32_TENSOR_OP_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  ASSERT_EQ(cublasSetMathMode(h_, tf32_strict), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGetMathMode(h_, &mm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mm, tf32_strict);
  EXPECT_EQ(cublasSetMathMode(h_, static_cast<cublasMath_t>(7)), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSetMathMode(h_, static_cast<cublasMath_t>(64)), CUBLAS_STATUS_INVALID_VALUE);

  EXPECT_EQ(cublasSetWorkspace_v2(h_, buf_, 1 << 16), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace_v2(h_, static_cast<char*>(buf_) + 16, 1024), CUBLAS_STATUS_INVALID_VALUE);
  int version = 0;
  ASSERT_EQ(cublasGetVersion_v2(h_, &version), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(version, CUBLAS_VERSION);

  ASSERT_EQ(cublasSetStream_v2(h_, nullptr), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Handle, NullOrDestroyedHandleIsNotInitialized) {
  float one = 1.0f;
  EXPECT_EQ(cublasCreate_v2(nullptr), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm_v2(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, f(), 1, f(), 1, &one, f(), 1),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetStream_v2(nullptr, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasDestroy_v2(nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  cublasHandle_t gone;
  ASSERT_EQ(cublasCreate_v2(&gone), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDestroy_v2(gone), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGemmEx(gone, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, f(), CUDA_R_32F, 1, f(), CUDA_R_32F, 1, &one,
                         f(), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_STREQ(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE),
               "an unsupported value or parameter was passed to the function");
}

// Every leading-dimension rule, for every transpose: the smallest legal value passes, one less fails.
TEST_F(Handle, LeadingDimensionAndSizeChecks) {
  const float one = 1.0f;
  const int m = 4, n = 5, k = 6;
  const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
  for (cublasOperation_t ta : ops) {
    for (cublasOperation_t tb : ops) {
      const int lda = ta == CUBLAS_OP_N ? m : k, ldb = tb == CUBLAS_OP_N ? k : n, ldc = m;
      auto call = [&](int mm, int nn, int kk, int a, int b, int c) {
        return cublasSgemm_v2(h_, ta, tb, mm, nn, kk, &one, f(), a, f() + 1024, b, &one, f() + 2048, c);
      };
      EXPECT_EQ(call(m, n, k, lda, ldb, ldc), CUBLAS_STATUS_SUCCESS);
      EXPECT_EQ(call(m, n, k, lda - 1, ldb, ldc), CUBLAS_STATUS_INVALID_VALUE);
      EXPECT_EQ(call(m, n, k, lda, ldb - 1, ldc), CUBLAS_STATUS_INVALID_VALUE);
      EXPECT_EQ(call(m, n, k, lda, ldb, ldc - 1), CUBLAS_STATUS_INVALID_VALUE);
      EXPECT_EQ(call(-1, n, k, lda, ldb, ldc), CUBLAS_STATUS_INVALID_VALUE);
      EXPECT_EQ(call(m, -1, k, lda, ldb, ldc), CUBLAS_STATUS_INVALID_VALUE);
      EXPECT_EQ(call(m, n, -1, lda, ldb, ldc), CUBLAS_STATUS_INVALID_VALUE);
      EXPECT_EQ(call(0, 0, 0, 1, 1, 1), CUBLAS_STATUS_SUCCESS);  // ld >= max(1, rows): 0 is never legal
      EXPECT_EQ(call(0, 0, 0, 0, 1, 1), CUBLAS_STATUS_INVALID_VALUE);
    }
  }
  EXPECT_EQ(cublasSgemm_v2(h_, static_cast<cublasOperation_t>(3), CUBLAS_OP_N, 1, 1, 1, &one, f(), 1, f(), 1, &one,
                           f(), 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm_v2(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, nullptr, f(), 1, f(), 1, &one, f(), 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm_v2(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, f(), 1, f(), 1, nullptr, f(), 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGemmStridedBatchedEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, f(), CUDA_R_32F, 1, 1, f(),
                                       CUDA_R_32F, 1, 1, &one, f(), CUDA_R_32F, 1, 1, -1, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasGemmStridedBatchedEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, f(), CUDA_R_32F, 1, 1, f(),
                                       CUDA_R_32F, 1, 1, &one, f(), CUDA_R_32F, 1, 1, 0, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  cudaDeviceSynchronize();
}

TEST_F(Handle, UnsupportedTypeAndComputeCombinations) {
  const float one = 1.0f;
  auto gemm_ex = [&](cudaDataType a, cudaDataType b, cudaDataType c, int compute) {
    return cublasGemmEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, f(), a, 2, f() + 64, b, 2, &one, f() + 128, c, 2,
                        static_cast<cublasComputeType_t>(compute), CUBLAS_GEMM_DEFAULT);
  };
  EXPECT_EQ(gemm_ex(CUDA_R_32F, CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_R_32F, CUDA_R_32F, CUDA_R_16BF, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_16BF, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_16F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F_FAST_TF32), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm_ex(CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F_PEDANTIC), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm_ex(CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  cudaDeviceSynchronize();
}

// In device pointer mode alpha and beta are read when the GEMM runs on its stream, not at the call.
TEST_F(Handle, DevicePointerModeReadsScalarsAtExecution) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cublasSetStream_v2(h_, s), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetPointerMode_v2(h_, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_SUCCESS);
  float* scalars = f();  // [alpha, beta]
  float* a = f() + 64;   // 1 x 1
  float* c = f() + 128;
  const float init[2] = {1.0f, 0.0f}, a_val = 3.0f, c_val = 100.0f;
  cudaMemcpy(scalars, init, sizeof init, cudaMemcpyHostToDevice);
  cudaMemcpy(a, &a_val, 4, cudaMemcpyHostToDevice);
  cudaMemcpy(c, &c_val, 4, cudaMemcpyHostToDevice);
  Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(s, Gate::WaitFn, &gate), cudaSuccess);
  ASSERT_EQ(cublasSgemm_v2(h_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, scalars, a, 1, a, 1, scalars + 1, c, 1),
            CUBLAS_STATUS_SUCCESS);
  // simgpu's device memory is host memory: the test reads and writes it directly while the stream is held.
  const float later[2] = {2.0f, 0.5f};
  memcpy(scalars, later, sizeof later);
  EXPECT_EQ(c[0], 100.0f);
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(c[0], 2.0f * 9.0f + 0.5f * 100.0f);
  ASSERT_EQ(cublasSetStream_v2(h_, nullptr), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

}  // namespace
