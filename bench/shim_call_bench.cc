// shim_call_bench: the host time one cuBLAS call costs the calling thread, to be compared with and without
// libttrace.so preloaded (bench/shim_call_bench.sh runs the configurations). Each thread has its own handle and
// stream and issues `calls` 2x2 Sgemms back to back (tiny, so that the call's host path dominates), then
// synchronizes once; the time is the loop's, per call, best of `reps` runs.
//
//   shim_call_bench [--calls N] [--threads T] [--reps R]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void Die(const char* what) {
  fprintf(stderr, "shim_call_bench: %s failed\n", what);
  exit(1);
}

// Seconds for `calls` Sgemms on this thread's own handle and stream (setup and the final sync not timed).
double Loop(int calls, std::atomic<int>* ready, int threads) {
  cudaStream_t s;
  cublasHandle_t h;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) Die("cudaStreamCreate");
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS)
    Die("cublasCreate");
  float* d = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&d), 12 * sizeof(float)) != cudaSuccess) Die("cudaMalloc");
  cudaMemset(d, 0, 12 * sizeof(float));
  cudaDeviceSynchronize();
  const float one = 1, zero = 0;
  ++*ready;
  while (ready->load() < threads) {
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, d + 4, 2, &zero, d + 8, 2) !=
        CUBLAS_STATUS_SUCCESS)
      Die("cublasSgemm");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cudaStreamSynchronize(s);
  cublasDestroy(h);
  cudaStreamDestroy(s);
  cudaFree(d);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 20000, threads = 1, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    const int v = atoi(argv[i + 1]);
    if (arg == "--calls") calls = v;
    else if (arg == "--threads") threads = v;
    else if (arg == "--reps") reps = v;
    else Die(("unknown flag " + arg).c_str());
  }
  if (calls < 1 || threads < 1 || reps < 1) Die("arguments");
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    std::atomic<int> ready{0};
    std::vector<double> seconds(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { seconds[t] = Loop(calls, &ready, threads); });
    for (auto& t : pool) t.join();
    best = std::min(best, *std::max_element(seconds.begin(), seconds.end()));
  }
  printf("threads=%d calls_per_thread=%d ns_per_call=%.0f\n", threads, calls, best * 1e9 / calls);
  return 0;
}
