// lt_workload: three cublasLtMatmul calls, built against the real headers and linked to libcublasLt.so like any
// application, and a dump of every operand as the program uploaded or downloaded it:
//   seq 0  FP32, op(A) = A^T, beta 0.5 (C read), default epilogue
//   seq 1  BF16 in and out, op(B) = B^T, GELU_BIAS with a BF16 bias
//   seq 2  FP8 E4M3 "TN", C BF16 (beta 0), D E4M3 with scale_a, scale_b, scale_d and amax_D
// then, with --gemm-ex, one cublasGemmEx (cuBLAS's own GEMM, which NVIDIA's cuBLAS may run through cuBLASLt).
//   lt_workload --dump FILE [--gemm-ex]
// Dump: per operand, u64 seq, u8 slot (format::TensorSlot), u64 bytes, the bytes (dense column-major: every
// leading dimension here equals its matrix's rows).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "shim/testing/workload_util.h"
#include "tools/simgpu/common/nv_dtype.h"
#include "ttrace/format.h"

namespace {

using ttrace::shim::testing::Die;
using ttrace::shim::testing::WriteOperand;
using ttrace::format::TensorSlot;

FILE* g_dump = nullptr;
std::mt19937 g_rng(42);

void Dump(uint64_t seq, TensorSlot slot, const void* data, uint64_t bytes) {
  WriteOperand(g_dump, seq, static_cast<uint8_t>(slot), data, bytes);
}

// A device buffer with its host image.
struct Buf {
  std::vector<uint8_t> host;
  void* dev = nullptr;
  explicit Buf(size_t bytes) : host(bytes) { CHECK_CUDA(cudaMalloc(&dev, bytes)); }
  void Up() { CHECK_CUDA(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice)); }
  void Down() { CHECK_CUDA(cudaMemcpy(host.data(), dev, host.size(), cudaMemcpyDeviceToHost)); }
};

Buf F32(size_t n, float lo, float hi) {
  Buf b(n * 4);
  std::uniform_real_distribution<float> u(lo, hi);
  for (size_t i = 0; i < n; ++i) {
    const float v = u(g_rng);
    memcpy(&b.host[i * 4], &v, 4);
  }
  b.Up();
  return b;
}
Buf Bf16(size_t n, float lo, float hi) {
  Buf b(n * 2);
  std::uniform_real_distribution<float> u(lo, hi);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t v = simgpu::nv::FloatToBf16(u(g_rng));
    memcpy(&b.host[i * 2], &v, 2);
  }
  b.Up();
  return b;
}
Buf E4m3(size_t n, float lo, float hi) {
  Buf b(n);
  std::uniform_real_distribution<float> u(lo, hi);
  for (size_t i = 0; i < n; ++i) b.host[i] = simgpu::nv::FloatToE4M3(u(g_rng));
  b.Up();
  return b;
}

cublasLtMatrixLayout_t Layout(cudaDataType t, uint64_t rows, uint64_t cols) {
  cublasLtMatrixLayout_t l;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l, t, rows, cols, static_cast<int64_t>(rows)));
  return l;
}

template <typename T>
void Set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, T v) {
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof v));
}

struct Matmul {
  cudaDataType ab, c, d;
  int64_t m, n, k;
  cublasOperation_t ta, tb;
};

}  // namespace

int main(int argc, char** argv) {
  const char* dump = nullptr;
  bool gemm_ex = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--gemm-ex")) gemm_ex = true;
  }
  if (dump == nullptr || (g_dump = fopen(dump, "wb")) == nullptr) Die("--dump", 0);
  cublasLtHandle_t lt;
  CHECK_CUBLAS(cublasLtCreate(&lt));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const float one = 1.0f, zero = 0.0f, half = 0.5f;

  {  // seq 0: FP32, A^T, beta 0.5
    const int64_t m = 24, n = 16, k = 40;
    Buf a = F32(k * m, -1, 1), b = F32(k * n, -1, 1), c = F32(m * n, -1, 1), d(m * n * 4);
    cublasLtMatmulDesc_t desc;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    Set(desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(CUBLAS_OP_T));
    auto la = Layout(CUDA_R_32F, k, m), lb = Layout(CUDA_R_32F, k, n), lc = Layout(CUDA_R_32F, m, n);
    CHECK_CUBLAS(cublasLtMatmul(lt, desc, &one, a.dev, la, b.dev, lb, &half, c.dev, lc, d.dev, lc, nullptr, nullptr,
                                0, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    d.Down();
    Dump(0, TensorSlot::kA, a.host.data(), a.host.size());
    Dump(0, TensorSlot::kB, b.host.data(), b.host.size());
    Dump(0, TensorSlot::kCIn, c.host.data(), c.host.size());
    Dump(0, TensorSlot::kCOut, d.host.data(), d.host.size());
    cublasLtMatmulDescDestroy(desc);
  }
  {  // seq 1: BF16, B^T, GELU_BIAS
    const int64_t m = 32, n = 24, k = 64;
    Buf a = Bf16(m * k, -1, 1), b = Bf16(n * k, -1, 1), bias = Bf16(m, -0.5, 0.5), d(m * n * 2);
    cublasLtMatmulDesc_t desc;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    Set(desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(CUBLAS_OP_T));
    Set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(CUBLASLT_EPILOGUE_GELU_BIAS));
    Set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias.dev));
    auto la = Layout(CUDA_R_16BF, m, k), lb = Layout(CUDA_R_16BF, n, k), lc = Layout(CUDA_R_16BF, m, n);
    CHECK_CUBLAS(cublasLtMatmul(lt, desc, &one, a.dev, la, b.dev, lb, &zero, d.dev, lc, d.dev, lc, nullptr, nullptr,
                                0, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    d.Down();
    Dump(1, TensorSlot::kA, a.host.data(), a.host.size());
    Dump(1, TensorSlot::kB, b.host.data(), b.host.size());
    Dump(1, TensorSlot::kBias, bias.host.data(), bias.host.size());
    Dump(1, TensorSlot::kCOut, d.host.data(), d.host.size());
    cublasLtMatmulDescDestroy(desc);
  }
  {  // seq 2: FP8 E4M3 TN with scales, D E4M3, amax
    const int64_t m = 32, n = 16, k = 64;
    Buf a = E4m3(k * m, -8, 8), b = E4m3(k * n, -8, 8), c = Bf16(m * n, -1, 1), d(m * n);
    const float sa_v = 0.125f, sb_v = 0.75f, sd_v = 2.5f;
    Buf sa(4), sb(4), sd(4), amax(4);
    memcpy(sa.host.data(), &sa_v, 4);
    memcpy(sb.host.data(), &sb_v, 4);
    memcpy(sd.host.data(), &sd_v, 4);
    sa.Up();
    sb.Up();
    sd.Up();
    cublasLtMatmulDesc_t desc;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    Set(desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(CUBLAS_OP_T));
    Set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(sa.dev));
    Set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(sb.dev));
    Set(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, static_cast<const void*>(sd.dev));
    Set(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, static_cast<void*>(amax.dev));
    auto la = Layout(CUDA_R_8F_E4M3, k, m), lb = Layout(CUDA_R_8F_E4M3, k, n);
    auto lc = Layout(CUDA_R_16BF, m, n), ld = Layout(CUDA_R_8F_E4M3, m, n);
    CHECK_CUBLAS(cublasLtMatmul(lt, desc, &one, a.dev, la, b.dev, lb, &zero, c.dev, lc, d.dev, ld, nullptr, nullptr,
                                0, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    d.Down();
    amax.Down();
    Dump(2, TensorSlot::kA, a.host.data(), a.host.size());
    Dump(2, TensorSlot::kB, b.host.data(), b.host.size());
    Dump(2, TensorSlot::kScaleA, sa.host.data(), 4);
    Dump(2, TensorSlot::kScaleB, sb.host.data(), 4);
    Dump(2, TensorSlot::kScaleD, sd.host.data(), 4);
    Dump(2, TensorSlot::kCOut, d.host.data(), d.host.size());
    Dump(2, TensorSlot::kAmaxD, amax.host.data(), 4);
    cublasLtMatmulDescDestroy(desc);
  }
  if (gemm_ex) {  // seq 3: one cuBLAS GEMM
    cublasHandle_t h;
    CHECK_CUBLAS(cublasCreate(&h));
    CHECK_CUBLAS(cublasSetStream(h, stream));
    Buf a = F32(64, -1, 1), b = F32(64, -1, 1), c(64 * 4);
    CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, a.dev, CUDA_R_32F, 8, b.dev, CUDA_R_32F, 8,
                              &zero, c.dev, CUDA_R_32F, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    cublasDestroy(h);
  }
  cublasLtDestroy(lt);
  fclose(g_dump);
  return 0;
}
