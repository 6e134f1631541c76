// shim_threads_workload: T threads, each on its own cuBLAS handle and stream, issue GEMMs concurrently (Sgemm,
// then GemmEx BF16 with beta 0.5, alternating), each feeding its output into its chain's next B, so that any
// disturbance of one call shows in every later result. At the end each thread prints its handle and the FNV-1a
// hash of its final output bytes:  "thread T handle H gemms N hash X". Deterministic for a given T and N. Every
// handle lives until all threads are done, so the handles are distinct.
//
//   shim_threads_workload [--threads T] [--gemms N]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shim/testing/workload_util.h"

namespace {

using ttrace::shim::testing::Die;

constexpr int kM = 24, kN = 16, kK = 20;

template <typename T>
T* DeviceAlloc(size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) Die("cudaMalloc");
  return static_cast<T*>(p);
}

uint64_t Fnv1a(const void* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

struct Thread {
  std::string line;
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
};

void Run(int t, int gemms, Thread* out) {
  cudaStream_t& s = out->stream;
  cublasHandle_t& h = out->handle;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) Die("cudaStreamCreate");
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) Die("cublas");
  // Row counts chosen so that B (k x n) and C (m x n) swap roles through a k x n slice of C.
  std::vector<float> a(kM * kK), b(kK * kN), c(kM * kN, 0.f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7 + t * 13) % 17) / 8.f - 1.f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5 + t * 3) % 11) / 4.f - 1.25f;
  std::vector<__nv_bfloat16> a16(a.size()), b16(b.size()), c16(c.size());
  for (size_t i = 0; i < a.size(); ++i) a16[i] = __float2bfloat16(a[i] / 4);
  for (size_t i = 0; i < b.size(); ++i) b16[i] = __float2bfloat16(b[i]);
  for (size_t i = 0; i < c.size(); ++i) c16[i] = __float2bfloat16(0.25f);
  float *da = DeviceAlloc<float>(a.size()), *db = DeviceAlloc<float>(b.size()), *dc = DeviceAlloc<float>(c.size());
  __nv_bfloat16 *da16 = DeviceAlloc<__nv_bfloat16>(a.size()), *db16 = DeviceAlloc<__nv_bfloat16>(b.size()),
                *dc16 = DeviceAlloc<__nv_bfloat16>(c.size());
  cudaMemcpyAsync(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(da16, a16.data(), a16.size() * 2, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(db16, b16.data(), b16.size() * 2, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(dc16, c16.data(), c16.size() * 2, cudaMemcpyHostToDevice, s);
  const float one = 1.f, zero = 0.f, half = 0.5f, scale = 0.125f;
  for (int i = 0; i < gemms; ++i) {
    cublasStatus_t st;
    if (i % 2 == 0) {
      // C = A * B / 8 (FP32), then B = C's first k rows, through a device-to-device copy on the stream.
      st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &scale, da, kM, db, kK, &zero, dc, kM);
      cudaMemcpy2DAsync(db, kK * 4, dc, kM * 4, kK * 4, kN, cudaMemcpyDeviceToDevice, s);
    } else {
      // C16 = A16 * B16 + 0.5 C16 (BF16 in and out, FP32 compute), then B16 = C16's first k rows.
      st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, kK, &one, da16, CUDA_R_16BF, kM, db16,
                        CUDA_R_16BF, kK, &half, dc16, CUDA_R_16BF, kM, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      cudaMemcpy2DAsync(db16, kK * 2, dc16, kM * 2, kK * 2, kN, cudaMemcpyDeviceToDevice, s);
    }
    if (st != CUBLAS_STATUS_SUCCESS) Die("gemm");
  }
  cudaMemcpyAsync(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost, s);
  cudaMemcpyAsync(c16.data(), dc16, c16.size() * 2, cudaMemcpyDeviceToHost, s);
  if (cudaStreamSynchronize(s) != cudaSuccess) Die("cudaStreamSynchronize");
  const uint64_t hash = Fnv1a(c.data(), c.size() * 4) ^ Fnv1a(c16.data(), c16.size() * 2);
  char buf[160];
  snprintf(buf, sizeof buf, "thread %d handle %llu gemms %d hash %016llx\n", t,
           static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(h)), gemms,
           static_cast<unsigned long long>(hash));
  out->line = buf;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 4, gemms = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--gemms")) gemms = atoi(argv[i + 1]);
    else Die(argv[i]);
  }
  std::vector<Thread> out(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(Run, t, gemms, &out[t]);
  for (std::thread& t : pool) t.join();
  // Handles are destroyed only once every thread is done: a thread that finished early and freed its handle
  // could otherwise see a later thread's cublasCreate return the same address, and the handles would no longer
  // tell the threads apart.
  for (const Thread& t : out) {
    fputs(t.line.c_str(), stdout);
    cublasDestroy(t.handle);
    cudaStreamDestroy(t.stream);
  }
  return 0;
}
