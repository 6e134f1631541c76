// batched_workload: pointer-array batched GEMMs, built against the real headers and linked to libcublas.so like any
// application, and a dump of every operand as the program uploaded or downloaded it (operands.h), batch after
// batch, each batch dense column-major:
//   seq 0  cublasSgemmBatched        FP32, 3 batches, op(B) = B^T, lda > m (padding), beta 0.5 (C read)
//   seq 1  cublasGemmBatchedEx       BF16 in and out, FP32 compute, k = 2048, 4 batches, batches 0 and 2 share A
//   seq 2  cublasHgemmBatched_64     FP16, 2 batches, op(A) = A^T
//   seq 3  cublasDgemmBatched        FP64, 2 batches
// with the pointer arrays in pinned host memory (cudaMallocHost), the batches' matrices in separate allocations in
// no address order; then, unless --host-arrays-only:
//   seq 4  cublasGemmBatchedEx       FP32, the arrays in device memory (cudaMalloc): nothing can be captured
//   seq 5  cublasSgemmBatched        FP32, pinned arrays that a copy queued on the stream rewrites before the GEMM
//                                    runs (the stream is held by a host function until the call has returned):
//                                    at the call the host sees the old addresses, the GEMM the new ones
// Nothing of seq 4 and 5 is dumped. The outputs of every op are checked here against the program's own FP64
// product (a sanity check of the program, not of the shim; --no-verify when a fault is injected).
//   batched_workload --dump FILE [--host-arrays-only] [--no-verify]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "shim/testing/workload_util.h"
#include "kernels/dtype.h"
#include "ttrace/format.h"

namespace {

using ttrace::shim::testing::Die;
using ttrace::shim::testing::WriteOperand;
using ttrace::format::TensorSlot;

FILE* g_dump = nullptr;
std::mt19937 g_rng(7);

void Dump(uint64_t seq, TensorSlot slot, const std::vector<uint8_t>& bytes) {
  WriteOperand(g_dump, seq, static_cast<uint8_t>(slot), bytes.data(), bytes.size());
}

enum class T { kF32, kF64, kF16, kBf16 };
size_t Size(T t) { return t == T::kF64 ? 8 : t == T::kF32 ? 4 : 2; }
double Load(T t, const uint8_t* p) {
  switch (t) {
    case T::kF32: { float v; memcpy(&v, p, 4); return v; }
    case T::kF64: { double v; memcpy(&v, p, 8); return v; }
    case T::kF16: { uint16_t v; memcpy(&v, p, 2); return ttrace::kernels::HalfToFloat(v); }
    case T::kBf16: { uint16_t v; memcpy(&v, p, 2); return ttrace::kernels::Bf16ToFloat(v); }
  }
  return 0;
}
void Store(T t, double x, uint8_t* p) {
  switch (t) {
    case T::kF32: { const float v = static_cast<float>(x); memcpy(p, &v, 4); return; }
    case T::kF64: memcpy(p, &x, 8); return;
    case T::kF16: { const uint16_t v = ttrace::kernels::FloatToHalf(static_cast<float>(x)); memcpy(p, &v, 2); return; }
    case T::kBf16: { const uint16_t v = ttrace::kernels::FloatToBf16(static_cast<float>(x)); memcpy(p, &v, 2); return; }
  }
}

// One matrix of rows x cols with leading dimension ld in its own device allocation, and its host image (ld x cols).
struct Mat {
  T type;
  int64_t rows, cols, ld;
  std::vector<uint8_t> host;
  void* dev = nullptr;
  Mat(T t, int64_t r, int64_t c, int64_t l) : type(t), rows(r), cols(c), ld(l), host(l * c * Size(t)) {
    CHECK_CUDA(cudaMalloc(&dev, host.size()));
  }
  void Fill(double lo, double hi) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t i = 0; i < ld * cols; ++i) Store(type, u(g_rng), &host[i * Size(type)]);
    CHECK_CUDA(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  void Down() { CHECK_CUDA(cudaMemcpy(host.data(), dev, host.size(), cudaMemcpyDeviceToHost)); }
  double At(int64_t i, int64_t j) const { return Load(type, &host[(i + j * ld) * Size(type)]); }
  std::vector<uint8_t> Dense() const {
    std::vector<uint8_t> out;
    const size_t col = rows * Size(type);
    for (int64_t j = 0; j < cols; ++j)
      out.insert(out.end(), host.begin() + j * ld * Size(type), host.begin() + j * ld * Size(type) + col);
    return out;
  }
};

// A pointer array in pinned host memory (or device memory), filled with `ptrs`.
void** Array(const std::vector<void*>& ptrs, bool device) {
  void** a = nullptr;
  const size_t bytes = ptrs.size() * sizeof(void*);
  if (device) {
    CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&a), bytes));
    CHECK_CUDA(cudaMemcpy(a, ptrs.data(), bytes, cudaMemcpyHostToDevice));
  } else {
    CHECK_CUDA(cudaMallocHost(reinterpret_cast<void**>(&a), bytes));
    memcpy(a, ptrs.data(), bytes);
  }
  return a;
}

// One batched problem: per batch A (as stored), B (as stored), C, op flags, scalars.
struct Problem {
  int64_t m, n, k;
  cublasOperation_t ta, tb;
  double alpha, beta;
  std::vector<Mat*> a, b, c;  // a[i] may repeat
  double tolerance;           // relative to sum |a||b| + |beta c|, for the program's own sanity check
};

bool g_verify = true;

// C as the program expects it, before the call (C0) is in c_in.
void Verify(const Problem& p, const std::vector<std::vector<double>>& c_in, const char* what) {
  if (!g_verify) return;
  for (size_t bt = 0; bt < p.c.size(); ++bt) {
    for (int64_t j = 0; j < p.n; ++j)
      for (int64_t i = 0; i < p.m; ++i) {
        double ref = 0, mag = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          const double x = p.ta == CUBLAS_OP_N ? p.a[bt]->At(i, l) : p.a[bt]->At(l, i);
          const double y = p.tb == CUBLAS_OP_N ? p.b[bt]->At(l, j) : p.b[bt]->At(j, l);
          ref += x * y;
          mag += std::fabs(x * y);
        }
        ref = p.alpha * ref + p.beta * c_in[bt][i + j * p.m];
        mag = std::fabs(p.alpha) * mag + std::fabs(p.beta * c_in[bt][i + j * p.m]);
        if (std::fabs(p.c[bt]->At(i, j) - ref) > p.tolerance * mag + 1e-30)
          Die(what, static_cast<long>(bt * 1000000 + j * 1000 + i));
      }
  }
}

std::vector<std::vector<double>> Values(const std::vector<Mat*>& c) {
  std::vector<std::vector<double>> out;
  for (const Mat* x : c) {
    std::vector<double> v;
    for (int64_t j = 0; j < x->cols; ++j)
      for (int64_t i = 0; i < x->rows; ++i) v.push_back(x->At(i, j));
    out.push_back(v);
  }
  return out;
}

std::vector<void*> Ptrs(const std::vector<Mat*>& v) {
  std::vector<void*> p;
  for (Mat* x : v) p.push_back(x->dev);
  return p;
}

// Dumps A, B (each batch dense, as stored), C before when beta != 0, C after.
void DumpProblem(uint64_t seq, const Problem& p, const std::vector<std::vector<uint8_t>>& c_before) {
  auto cat = [](const std::vector<Mat*>& v) {
    std::vector<uint8_t> out;
    for (const Mat* x : v) {
      const std::vector<uint8_t> d = x->Dense();
      out.insert(out.end(), d.begin(), d.end());
    }
    return out;
  };
  Dump(seq, TensorSlot::kA, cat(p.a));
  Dump(seq, TensorSlot::kB, cat(p.b));
  if (p.beta != 0) {
    std::vector<uint8_t> out;
    for (const auto& d : c_before) out.insert(out.end(), d.begin(), d.end());
    Dump(seq, TensorSlot::kCIn, out);
  }
  Dump(seq, TensorSlot::kCOut, cat(p.c));
}

std::vector<Mat*> Mats(int count, T t, int64_t rows, int64_t cols, int64_t ld, double lo, double hi) {
  std::vector<Mat*> v;
  for (int i = 0; i < count; ++i) {
    v.push_back(new Mat(t, rows, cols, ld));
    v.back()->Fill(lo, hi);
  }
  return v;
}

std::vector<std::vector<uint8_t>> DenseAll(const std::vector<Mat*>& v) {
  std::vector<std::vector<uint8_t>> out;
  for (const Mat* x : v) out.push_back(x->Dense());
  return out;
}

std::atomic<bool> g_release{false};
void CUDART_CB HoldStream(void*) {
  while (!g_release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

int main(int argc, char** argv) {
  const char* dump = nullptr;
  bool host_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--host-arrays-only")) host_only = true;
    else if (!strcmp(argv[i], "--no-verify")) g_verify = false;
  }
  if (dump == nullptr || (g_dump = fopen(dump, "wb")) == nullptr) Die("--dump", 0);
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUBLAS(cublasSetStream(h, stream));

  {  // seq 0: cublasSgemmBatched FP32, B^T, lda 7 > m 5, beta 0.5
    Problem p{5, 4, 6, CUBLAS_OP_N, CUBLAS_OP_T, 1.0, 0.5, {}, {}, {}, 1e-5};
    std::vector<Mat*> a = Mats(3, T::kF32, 5, 6, 7, -1, 1), b = Mats(3, T::kF32, 4, 6, 4, -1, 1),
                      c = Mats(3, T::kF32, 5, 4, 5, -1, 1);
    p.a = {a[2], a[0], a[1]};  // arrays in no address order
    p.b = {b[1], b[2], b[0]};
    p.c = {c[0], c[2], c[1]};
    const auto before = Values(p.c);
    const auto before_bytes = DenseAll(p.c);
    void** A = Array(Ptrs(p.a), false);
    void** B = Array(Ptrs(p.b), false);
    void** C = Array(Ptrs(p.c), false);
    const float alpha = 1.0f, beta = 0.5f;
    CHECK_CUBLAS(cublasSgemmBatched(h, p.ta, p.tb, 5, 4, 6, &alpha, reinterpret_cast<const float* const*>(A), 7,
                                    reinterpret_cast<const float* const*>(B), 4, &beta,
                                    reinterpret_cast<float* const*>(C), 5, 3));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (Mat* x : p.c) x->Down();
    Verify(p, before, "seq 0");
    DumpProblem(0, p, before_bytes);
  }
  {  // seq 1: cublasGemmBatchedEx BF16 -> BF16, FP32 compute, a long inner dimension, batches 0 and 2 share A
    Problem p{16, 8, 2048, CUBLAS_OP_N, CUBLAS_OP_N, 1.0, 0.0, {}, {}, {}, 1e-2};
    std::vector<Mat*> a = Mats(3, T::kBf16, 16, 2048, 16, -1, 1);
    p.a = {a[0], a[1], a[0], a[2]};
    p.b = Mats(4, T::kBf16, 2048, 8, 2048, -1, 1);
    p.c = Mats(4, T::kBf16, 16, 8, 16, 0, 0);
    void** A = Array(Ptrs(p.a), false);
    void** B = Array(Ptrs(p.b), false);
    void** C = Array(Ptrs(p.c), false);
    const float alpha = 1.0f, beta = 0.0f;
    CHECK_CUBLAS(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 8, 2048, &alpha, A, CUDA_R_16BF, 16, B,
                                     CUDA_R_16BF, 2048, &beta, C, CUDA_R_16BF, 16, 4, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (Mat* x : p.c) x->Down();
    Verify(p, Values(p.c) /* beta 0: unused */, "seq 1");
    DumpProblem(1, p, {});
  }
  {  // seq 2: cublasHgemmBatched_64 FP16, A^T
    Problem p{8, 8, 16, CUBLAS_OP_T, CUBLAS_OP_N, 1.0, 0.0, {}, {}, {}, 2e-2};
    p.a = Mats(2, T::kF16, 16, 8, 16, -1, 1);
    p.b = Mats(2, T::kF16, 16, 8, 16, -1, 1);
    p.c = Mats(2, T::kF16, 8, 8, 8, 0, 0);
    void** A = Array(Ptrs(p.a), false);
    void** B = Array(Ptrs(p.b), false);
    void** C = Array(Ptrs(p.c), false);
    const __half alpha = __float2half(1.0f), beta = __float2half(0.0f);
    CHECK_CUBLAS(cublasHgemmBatched_64(h, CUBLAS_OP_T, CUBLAS_OP_N, 8, 8, 16, &alpha,
                                       reinterpret_cast<const __half* const*>(A), 16,
                                       reinterpret_cast<const __half* const*>(B), 16, &beta,
                                       reinterpret_cast<__half* const*>(C), 8, 2));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (Mat* x : p.c) x->Down();
    Verify(p, Values(p.c), "seq 2");
    DumpProblem(2, p, {});
  }
  {  // seq 3: cublasDgemmBatched FP64
    Problem p{4, 4, 4, CUBLAS_OP_N, CUBLAS_OP_N, 2.0, 0.0, {}, {}, {}, 1e-14};
    p.a = Mats(2, T::kF64, 4, 4, 4, -1, 1);
    p.b = Mats(2, T::kF64, 4, 4, 4, -1, 1);
    p.c = Mats(2, T::kF64, 4, 4, 4, 0, 0);
    void** A = Array(Ptrs(p.a), false);
    void** B = Array(Ptrs(p.b), false);
    void** C = Array(Ptrs(p.c), false);
    const double alpha = 2.0, beta = 0.0;
    CHECK_CUBLAS(cublasDgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha,
                                    reinterpret_cast<const double* const*>(A), 4,
                                    reinterpret_cast<const double* const*>(B), 4, &beta,
                                    reinterpret_cast<double* const*>(C), 4, 2));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (Mat* x : p.c) x->Down();
    Verify(p, Values(p.c), "seq 3");
    DumpProblem(3, p, {});
  }
  if (!host_only) {
    {  // seq 4: arrays in device memory
      Problem p{6, 6, 6, CUBLAS_OP_N, CUBLAS_OP_N, 1.0, 0.0, {}, {}, {}, 1e-5};
      p.a = Mats(2, T::kF32, 6, 6, 6, -1, 1);
      p.b = Mats(2, T::kF32, 6, 6, 6, -1, 1);
      p.c = Mats(2, T::kF32, 6, 6, 6, 0, 0);
      void** A = Array(Ptrs(p.a), true);
      void** B = Array(Ptrs(p.b), true);
      void** C = Array(Ptrs(p.c), true);
      const float alpha = 1.0f, beta = 0.0f;
      CHECK_CUBLAS(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 6, 6, 6, &alpha, A, CUDA_R_32F, 6, B, CUDA_R_32F,
                                       6, &beta, C, CUDA_R_32F, 6, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      for (Mat* x : p.c) x->Down();
      Verify(p, Values(p.c), "seq 4");
    }
    {  // seq 5: the stream rewrites the arrays after the call
      Problem p{6, 6, 6, CUBLAS_OP_N, CUBLAS_OP_N, 1.0, 0.0, {}, {}, {}, 1e-5};
      p.a = Mats(2, T::kF32, 6, 6, 6, -1, 1);
      p.b = Mats(2, T::kF32, 6, 6, 6, -1, 1);
      p.c = Mats(2, T::kF32, 6, 6, 6, 0, 0);
      const std::vector<Mat*> old_a = Mats(2, T::kF32, 6, 6, 6, -1, 1), old_b = Mats(2, T::kF32, 6, 6, 6, -1, 1),
                              old_c = Mats(2, T::kF32, 6, 6, 6, 0, 0);
      void** A = Array(Ptrs(old_a), false);
      void** B = Array(Ptrs(old_b), false);
      void** C = Array(Ptrs(old_c), false);
      void** new_a = Array(Ptrs(p.a), false);
      void** new_b = Array(Ptrs(p.b), false);
      void** new_c = Array(Ptrs(p.c), false);
      CHECK_CUDA(cudaLaunchHostFunc(stream, HoldStream, nullptr));
      CHECK_CUDA(cudaMemcpyAsync(A, new_a, 2 * sizeof(void*), cudaMemcpyHostToHost, stream));
      CHECK_CUDA(cudaMemcpyAsync(B, new_b, 2 * sizeof(void*), cudaMemcpyHostToHost, stream));
      CHECK_CUDA(cudaMemcpyAsync(C, new_c, 2 * sizeof(void*), cudaMemcpyHostToHost, stream));
      const float alpha = 1.0f, beta = 0.0f;
      CHECK_CUBLAS(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 6, 6, 6, &alpha,
                                      reinterpret_cast<const float* const*>(A), 6,
                                      reinterpret_cast<const float* const*>(B), 6, &beta,
                                      reinterpret_cast<float* const*>(C), 6, 2));
      g_release.store(true);
      CHECK_CUDA(cudaStreamSynchronize(stream));
      for (Mat* x : p.c) x->Down();
      Verify(p, Values(p.c), "seq 5");
    }
  }
  cublasDestroy(h);
  fclose(g_dump);
  return 0;
}
