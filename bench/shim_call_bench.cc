// shim_call_bench: the host time one cuBLAS call costs the calling thread, to be compared with and without
// libttrace.so preloaded (bench/shim_call_bench.sh runs the configurations). Each thread has its own handle and
// stream and issues `calls` 2x2 Sgemms back to back (tiny, so that the call's host path dominates), then
// synchronizes once. Per call, best of `reps` runs: `ns_per_call` is the loop's wall time (the slowest thread's);
// `thread_cpu_ns` the calling threads' own CPU time (CLOCK_THREAD_CPUTIME_ID, their mean), which other processes
// and our drain thread cannot inflate by taking the core; `process_cpu_ns` the whole process's CPU time over the
// run (every thread: simgpu's stream workers, the shim's drain), divided by all calls.
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
#include <time.h>
#include <sys/resource.h>
#include <vector>

namespace {

[[noreturn]] void Die(const char* what) {
  fprintf(stderr, "shim_call_bench: %s failed\n", what);
  exit(1);
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double ProcessCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Times {
  double wall = 0, cpu = 0;
};

// Wall and thread CPU seconds for `calls` Sgemms on this thread's own handle and stream (setup and the final
// sync not timed).
Times Loop(int calls, std::atomic<int>* ready, int threads) {
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
  const double cpu_start = ThreadCpuSeconds();
  for (int i = 0; i < calls; ++i)
    if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, d + 4, 2, &zero, d + 8, 2) !=
        CUBLAS_STATUS_SUCCESS)
      Die("cublasSgemm");
  Times t;
  t.cpu = ThreadCpuSeconds() - cpu_start;
  t.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cudaStreamSynchronize(s);
  cublasDestroy(h);
  cudaStreamDestroy(s);
  cudaFree(d);
  return t;
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
  double best_wall = 1e30, best_cpu = 1e30, best_process = 1e30;
  for (int r = 0; r < reps; ++r) {
    std::atomic<int> ready{0};
    std::vector<Times> times(threads);
    std::vector<std::thread> pool;
    const double process_start = ProcessCpuSeconds();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { times[t] = Loop(calls, &ready, threads); });
    for (auto& t : pool) t.join();
    double wall = 0, cpu = 0;
    for (const Times& t : times) {
      wall = std::max(wall, t.wall);
      cpu += t.cpu / threads;
    }
    best_wall = std::min(best_wall, wall);
    best_cpu = std::min(best_cpu, cpu);
    best_process = std::min(best_process, (ProcessCpuSeconds() - process_start) / threads);
  }
  printf("threads=%d calls_per_thread=%d ns_per_call=%.0f thread_cpu_ns=%.0f process_cpu_ns=%.0f\n", threads, calls,
         best_wall * 1e9 / calls, best_cpu * 1e9 / calls, best_process * 1e9 / calls);
  return 0;
}
