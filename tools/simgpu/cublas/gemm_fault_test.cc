// SIMGPU_FAULT applied to cuBLAS GEMM outputs (gemm.h: call numbering and element indexing). main() re-executes
// the binary with RANK=0 and the faults below, because the core reads the environment once, at load time; every
// test runs in a process of its own, so each starts counting GEMM calls at 0.
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "tools/simgpu/cublas/gemm_test_util.h"

namespace simgpu::testing {
namespace {

constexpr char kFaults[] =
    "gemm:rank=0:call=1:elem=7:bit=31;"   // Sgemm, m=3 n=4 ldc=5: element (i=1, j=2) = C[11], sign bit
    "gemm:rank=0:call=2:elem=13:bit=15;"  // batched BF16, m=3 n=4 ldc=5 strideC=25: batch 1 (i=1, j=0) = C[26]
    "gemm:rank=1:call=0:elem=0:bit=0;"    // another rank: never applied here
    "coll:rank=0:call=0:elem=0:bit=0";    // another site: never applied by cuBLAS

class GemmFault : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate_v2(&handle_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cublasDestroy_v2(handle_), CUBLAS_STATUS_SUCCESS); }

  // C (3 x 4, ldc 5, FP32) = A (3 x 2) * B (2 x 4), starting from c0; returns C's storage after the call.
  Operand Sgemm(const Operand& a, const Operand& b, const Operand& c0) {
    DeviceBuffer da(a), db(b), dc(c0);
    float alpha = 1.0f, beta = 0.5f;
    EXPECT_EQ(cublasSgemm_v2(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 3, 4, 2, &alpha, static_cast<float*>(da.get()), 3,
                             static_cast<float*>(db.get()), 2, &beta, static_cast<float*>(dc.get()), 5),
              CUBLAS_STATUS_SUCCESS);
    cudaDeviceSynchronize();
    Operand out(CUDA_R_32F, c0.size());
    dc.CopyTo(&out);
    return out;
  }

  // Two batches of C (3 x 4, ldc 5, stride 25, BF16) = A * B with BF16 operands.
  Operand Batched(const Operand& a, const Operand& b, const Operand& c0) {
    DeviceBuffer da(a), db(b), dc(c0);
    float alpha = 1.0f, beta = 0.0f;
    EXPECT_EQ(cublasGemmStridedBatchedEx(handle_, CUBLAS_OP_N, CUBLAS_OP_T, 3, 4, 2, &alpha, da.get(), CUDA_R_16BF,
                                         3, 6, db.get(), CUDA_R_16BF, 4, 8, &beta, dc.get(), CUDA_R_16BF, 5, 25, 2,
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    cudaDeviceSynchronize();
    Operand out(CUDA_R_16BF, c0.size());
    dc.CopyTo(&out);
    return out;
  }

  cublasHandle_t handle_ = nullptr;
};

// Indices of the elements whose storage differs, and the XOR of the first difference.
std::vector<size_t> Diff(const Operand& x, const Operand& y, uint32_t* first_xor) {
  std::vector<size_t> diff;
  size_t bytes = DtypeBytes(x.type);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u = 0, v = 0;
    memcpy(&u, &x.bytes[i * bytes], bytes);
    memcpy(&v, &y.bytes[i * bytes], bytes);
    if (u != v) {
      if (diff.empty()) *first_xor = u ^ v;
      diff.push_back(i);
    }
  }
  return diff;
}

TEST_F(GemmFault, FlipsExactlyTheNamedBitOfTheNamedCallAndElement) {
  std::mt19937 rng(11);
  Operand a = RandomOperand(CUDA_R_32F, 6, &rng), b = RandomOperand(CUDA_R_32F, 8, &rng);
  Operand c0 = RandomOperand(CUDA_R_32F, 20, &rng);
  Operand clean = Sgemm(a, b, c0);    // call 0: the rank-1 fault must not apply
  Operand faulty = Sgemm(a, b, c0);   // call 1
  EXPECT_EQ(clean.bytes, SequentialFp32({CUBLAS_OP_N, CUBLAS_OP_N, 3, 4, 2, 3, 2, 5, 0, 0, 0, 1, 1.0f, 0.5f}, a, b,
                                        c0).bytes);
  uint32_t x = 0;
  EXPECT_EQ(Diff(clean, faulty, &x), std::vector<size_t>({11}));
  EXPECT_EQ(x, 1u << 31);

  Operand ab = RandomOperand(CUDA_R_16BF, 12, &rng), bb = RandomOperand(CUDA_R_16BF, 16, &rng);
  Operand cb = RandomOperand(CUDA_R_16BF, 45, &rng);
  Operand faulty_b = Batched(ab, bb, cb);  // call 2
  Operand clean_b = Batched(ab, bb, cb);   // call 3: no fault
  EXPECT_EQ(Diff(clean_b, faulty_b, &x), std::vector<size_t>({26}));
  EXPECT_EQ(x, 1u << 15);
}

TEST_F(GemmFault, RejectedCallsTakeNoCallNumber) {
  std::mt19937 rng(12);
  Operand a = RandomOperand(CUDA_R_32F, 6, &rng), b = RandomOperand(CUDA_R_32F, 8, &rng);
  Operand c0 = RandomOperand(CUDA_R_32F, 20, &rng);
  float one = 1.0f;
  EXPECT_EQ(cublasSgemm_v2(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 3, 4, 2, &one, nullptr, 2, nullptr, 2, &one, nullptr,
                           5),
            CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  Operand first = Sgemm(a, b, c0);   // call 0
  Operand second = Sgemm(a, b, c0);  // call 1: faulted
  uint32_t x = 0;
  EXPECT_EQ(Diff(first, second, &x), std::vector<size_t>({11}));
}

TEST_F(GemmFault, ElementOutsideTheOutputStopsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        float one = 1.0f;
        DeviceBuffer buf(64);
        auto* f = static_cast<float*>(buf.get());
        for (int call = 0; call < 2; ++call) {  // call 1 has 4 outputs; its fault names element 7
          cublasSgemm_v2(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 1, &one, f, 2, f, 1, &one, f + 4, 2);
        }
        cudaDeviceSynchronize();
        std::exit(0);
      },
      ::testing::ExitedWithCode(2), "gemm:call=1: elem=7 is out of range");
}

}  // namespace
}  // namespace simgpu::testing

int main(int argc, char** argv) {
  if (getenv("SIMGPU_FAULT") == nullptr) {
    setenv("RANK", "0", 1);
    setenv("SIMGPU_FAULT", simgpu::testing::kFaults, 1);
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
