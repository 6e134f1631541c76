// A program's own interposer (libshim_dlnext_interposer.so, linked before libcudart): its cudaMalloc finds the
// real one with dlsym(RTLD_NEXT), as interposing tools do. If RTLD_NEXT were resolved relative to anything but
// this library (a dlsym interposer that calls glibc instead of jumping to it), it would find this very function
// and the program would abort here.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {
std::atomic<long> g_calls{0};
}

extern "C" cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  using Fn = cudaError_t (*)(void**, size_t);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "cudaMalloc"));
  if (real == nullptr || real == &cudaMalloc) {
    fprintf(stderr, "dlnext_interposer: dlsym(RTLD_NEXT, \"cudaMalloc\") gave %s\n",
            real == nullptr ? "nothing" : "this interposer itself");
    abort();
  }
  ++g_calls;
  return real(ptr, bytes);
}

extern "C" long dlnext_interposer_calls() { return g_calls.load(); }
