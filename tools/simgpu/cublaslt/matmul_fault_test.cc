// SIMGPU_FAULT on cublasLtMatmul outputs (matmul.h: call numbering shared with cuBLAS, element indexing in D's
// layout, bit and value actions). main() re-executes the binary with RANK=0 and the faults below, because the core
// reads the environment once, at load time; every test runs in a process of its own, so each starts at call 0.
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/nv_dtype.h"

namespace {

constexpr char kFaults[] =
    "gemm:rank=0:call=1:elem=7:bit=31;"       // cuBLASLt FP32, m=3 n=4 ldd=5: D(1, 2) = D[11], sign bit
    "gemm:rank=0:call=2:elem=5:bit=3;"        // cuBLAS Sgemm, m=3 n=4 ldc=5: C(2, 1) = C[7], bit 3
    "gemm:rank=0:call=3:elem=22:value=-2.5;"  // cuBLASLt BF16 row-major, m=3 n=4 ld=6, 2 batches of stride 20:
                                              //   batch 1, D(1, 3) = D[20 + 1 * 6 + 3]
    "gemm:rank=1:call=0:elem=0:bit=0;"        // another rank: never applied here
    "coll:rank=0:call=0:elem=0:bit=0";        // another site

class LtFault : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cublasLtCreate(&lt_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasCreate_v2(&blas_), CUBLAS_STATUS_SUCCESS);
    for (int i = 0; i < 6; ++i) a_[i] = 0.5f * static_cast<float>(i + 1);
    for (int i = 0; i < 8; ++i) b_[i] = 0.25f * static_cast<float>(i) - 1.0f;
  }
  void TearDown() override {
    EXPECT_EQ(cublasLtDestroy(lt_), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasDestroy_v2(blas_), CUBLAS_STATUS_SUCCESS);
  }

  // D (3 x 4) = A (3 x 2) B (2 x 4) in `type` and `order`, ld and batch stride as given, 2 batches when stride > 0.
  // Returns D's storage (as bytes) after the call; `status` is cublasLtMatmul's.
  std::vector<uint8_t> LtMatmul(cudaDataType type, int32_t order, int64_t ld, int64_t stride,
                                cublasStatus_t status = CUBLAS_STATUS_SUCCESS) {
    const size_t width = type == CUDA_R_32F ? 4 : 2;
    const int32_t batch = stride > 0 ? 2 : 1;
    std::vector<uint8_t> a(2 * 20 * width), b(2 * 20 * width), d(2 * 40 * width, 0);
    for (int i = 0; i < 6; ++i) Put(type, order == CUBLASLT_ORDER_ROW ? (i % 3) * 2 + i / 3 : i, a_[i], &a);
    for (int i = 0; i < 8; ++i) Put(type, order == CUBLASLT_ORDER_ROW ? (i % 2) * 4 + i / 2 : i, b_[i], &b);
    memcpy(&a[20 * width], &a[0], 20 * width);  // batch 1 = batch 0
    memcpy(&b[20 * width], &b[0], 20 * width);
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatrixLayout_t la, lb, ld_layout;
    const bool row = order == CUBLASLT_ORDER_ROW;
    cublasLtMatrixLayoutCreate(&la, type, 3, 2, row ? 2 : 3);
    cublasLtMatrixLayoutCreate(&lb, type, 2, 4, row ? 4 : 2);
    cublasLtMatrixLayoutCreate(&ld_layout, type, 3, 4, ld);
    const int64_t ab_stride = 20;
    for (cublasLtMatrixLayout_t l : {la, lb, ld_layout}) {
      cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
      cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
      const int64_t s = l == ld_layout ? stride : ab_stride;
      cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s);
    }
    const float alpha = 1.0f, beta = 0.0f;
    EXPECT_EQ(cublasLtMatmul(lt_, desc, &alpha, a.data(), la, b.data(), lb, &beta, d.data(), ld_layout, d.data(),
                             ld_layout, nullptr, nullptr, 0, nullptr),
              status);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (cublasLtMatrixLayout_t l : {la, lb, ld_layout}) cublasLtMatrixLayoutDestroy(l);
    cublasLtMatmulDescDestroy(desc);
    return d;
  }

  // C (3 x 4, ldc 5) = A B through cuBLAS.
  std::vector<float> Sgemm() {
    std::vector<float> c(20, 0.0f);
    const float alpha = 1.0f, beta = 0.0f;
    EXPECT_EQ(cublasSgemm_v2(blas_, CUBLAS_OP_N, CUBLAS_OP_N, 3, 4, 2, &alpha, a_, 3, b_, 2, &beta, c.data(), 5),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return c;
  }

  static void Put(cudaDataType type, int index, float v, std::vector<uint8_t>* out) {
    if (type == CUDA_R_32F) {
      memcpy(&(*out)[index * 4], &v, 4);
    } else {
      uint16_t h = simgpu::nv::FloatToBf16(v);
      memcpy(&(*out)[index * 2], &h, 2);
    }
  }

  // Byte offsets where x and y differ.
  static std::vector<size_t> Diff(const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
    std::vector<size_t> out;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] != y[i]) out.push_back(i);
    }
    return out;
  }

  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  float a_[6], b_[8];
};

TEST_F(LtFault, SharesTheGemmCallCounterWithCublasAndHitsTheNamedElement) {
  LtMatmul(CUDA_R_32F, CUBLASLT_ORDER_COL, 2, 0, CUBLAS_STATUS_INVALID_VALUE);  // ld 2 < m: takes no call number
  const std::vector<uint8_t> clean = LtMatmul(CUDA_R_32F, CUBLASLT_ORDER_COL, 5, 0);   // call 0
  const std::vector<uint8_t> faulty = LtMatmul(CUDA_R_32F, CUBLASLT_ORDER_COL, 5, 0);  // call 1
  EXPECT_EQ(Diff(clean, faulty), std::vector<size_t>({11 * 4 + 3}));  // the sign bit lives in the last byte
  EXPECT_EQ(faulty[11 * 4 + 3] ^ clean[11 * 4 + 3], 0x80);

  const std::vector<float> sgemm_faulty = Sgemm();  // call 2, through cuBLAS
  const std::vector<uint8_t> bf16_faulty = LtMatmul(CUDA_R_16BF, CUBLASLT_ORDER_ROW, 6, 20);  // call 3
  const std::vector<float> sgemm_clean = Sgemm();   // call 4
  const std::vector<uint8_t> bf16_clean = LtMatmul(CUDA_R_16BF, CUBLASLT_ORDER_ROW, 6, 20);  // call 5

  for (int i = 0; i < 20; ++i) {
    uint32_t x, y;
    memcpy(&x, &sgemm_faulty[i], 4);
    memcpy(&y, &sgemm_clean[i], 4);
    EXPECT_EQ(x ^ y, i == 7 ? 8u : 0u) << "cuBLAS element " << i;
  }
  const size_t hit = (20 + 1 * 6 + 3) * 2;
  EXPECT_EQ(Diff(bf16_clean, bf16_faulty).empty() ? 0 : Diff(bf16_clean, bf16_faulty).front() / 2 * 2, hit);
  for (size_t off : Diff(bf16_clean, bf16_faulty)) EXPECT_TRUE(off == hit || off == hit + 1) << off;
  uint16_t stuck;
  memcpy(&stuck, &bf16_faulty[hit], 2);
  EXPECT_EQ(simgpu::nv::Bf16ToFloat(stuck), -2.5f);
}

// Two 1 x 4 matmuls (calls 0 and 1); call 1's fault names element 7.
void TwoSmallMatmuls(cublasLtHandle_t lt) {
  std::vector<float> a(4, 1.0f), d(8, 0.0f);
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 1, 1, 1);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 1, 4, 1);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 1, 4, 1);
  const float one = 1.0f;
  for (int call = 0; call < 2; ++call) {
    cublasLtMatmul(lt, desc, &one, a.data(), la, a.data(), lb, &one, d.data(), ld, d.data(), ld, nullptr, nullptr, 0,
                   nullptr);
  }
  cudaDeviceSynchronize();
  std::exit(0);
}

TEST_F(LtFault, ElementOutsideTheOutputStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(TwoSmallMatmuls(lt_), ::testing::ExitedWithCode(2), "elem=7");
}

}  // namespace

int main(int argc, char** argv) {
  if (getenv("SIMGPU_FAULT") == nullptr) {
    setenv("RANK", "0", 1);
    setenv("SIMGPU_FAULT", kFaults, 1);
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
