// shim_context_workload: four cublasSgemm calls with "launches" between them, fired through the stand-in
// libcupti's hooks (standin_cupti.cc) when the shim has loaded it: CUPTI's records of what ran between the ops.
//   GEMM 0 (the shim starts and subscribes)
//   NVTX push "forward", domain push "layer3"; 3 x vectorized_elementwise<4>, 2 x relu_kernel, 1 graph launch;
//   another thread launches 4 x other_thread_kernel (never part of this thread's context)
//   GEMM 1; pop, pop
//   GEMM 2 (nothing ran before it)
//   1 x relu_kernel; GEMM 3
// Prints "result <FNV-1a of the four outputs>" on stdout (the same with and without the shim) and, when the
// stand-in is loaded, "standin_subscribes=N" on stderr.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "shim/testing/cuda_upload.h"
#include "shim/testing/workload_util.h"

namespace {

using ttrace::shim::testing::Die;
using ttrace::shim::testing::Upload;


struct Hooks {
  void (*launch)(const char*) = nullptr;
  void (*graph_launch)() = nullptr;
  void (*range_push)(const char*) = nullptr;
  void (*domain_range_push)(const char*) = nullptr;
  void (*range_pop)() = nullptr;
  int (*subscribes)() = nullptr;
};

template <typename F>
void Find(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

int main() {
  constexpr int m = 6, n = 5, k = 4;
  std::vector<float> a(m * k), b(k * n), c(m * n, 0.f);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 5) % 9) / 4.f - 1.f;
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 3) % 7) / 2.f - 1.5f;
  float *da = Upload(a), *db = Upload(b);
  float* dc[4];
  for (float*& d : dc) d = Upload(c);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) Die("cublasCreate");
  const float one = 1.f, zero = 0.f;
  auto gemm = [&](int i) {
    if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &zero, dc[i], m) !=
        CUBLAS_STATUS_SUCCESS)
      Die("cublasSgemm");
  };
  gemm(0);
  Hooks hooks;
  if (void* lib = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_NOLOAD)) {
    Find(lib, "standin_cupti_launch", &hooks.launch);
    Find(lib, "standin_cupti_graph_launch", &hooks.graph_launch);
    Find(lib, "standin_cupti_range_push", &hooks.range_push);
    Find(lib, "standin_cupti_domain_range_push", &hooks.domain_range_push);
    Find(lib, "standin_cupti_range_pop", &hooks.range_pop);
    Find(lib, "standin_cupti_subscribes", &hooks.subscribes);
  }
  const bool fire = hooks.launch != nullptr && hooks.graph_launch != nullptr && hooks.range_push != nullptr &&
                    hooks.domain_range_push != nullptr && hooks.range_pop != nullptr && hooks.subscribes != nullptr;
  if (fire) {
    hooks.range_push("forward");
    hooks.domain_range_push("layer3");
    for (int i = 0; i < 3; ++i) hooks.launch("_Z22vectorized_elementwiseILi4EEvPf");
    hooks.launch("_Z11relu_kernelPf");
    hooks.graph_launch();
    hooks.launch("_Z11relu_kernelPf");
    std::thread other([&] {
      for (int i = 0; i < 4; ++i) hooks.launch("_Z19other_thread_kernelv");
    });
    other.join();
  }
  gemm(1);
  if (fire) {
    hooks.range_pop();
    hooks.range_pop();
  }
  gemm(2);
  if (fire) hooks.launch("_Z11relu_kernelPf");
  gemm(3);
  uint64_t hash = 1469598103934665603ull;
  for (float* d : dc) {
    std::vector<float> got(m * n);
    if (cudaMemcpy(got.data(), d, m * n * 4, cudaMemcpyDeviceToHost) != cudaSuccess) Die("download");
    const unsigned char* p = reinterpret_cast<const unsigned char*>(got.data());
    for (size_t i = 0; i < got.size() * 4; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  }
  printf("result %016llx\n", static_cast<unsigned long long>(hash));
  if (hooks.subscribes != nullptr) fprintf(stderr, "standin_subscribes=%d\n", hooks.subscribes());
  return 0;
}
