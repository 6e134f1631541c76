// The table is filled once under a function-local static (thread-safe initialization); cudart is never loaded
// by us, only found: loading it would create a CUDA dependency in processes that have none.
#include "shim/cudart_api.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace ttrace::shim {
namespace {

// Unevaluated: checks the table's types against cuda_runtime_api.h without referencing the symbols.
#define TTRACE_CHECK_CUDART_TYPE(member, symbol)                                         \
  static_assert(std::is_same_v<decltype(CudartApi::member), decltype(&::symbol)>,        \
                #symbol " changed its signature")
TTRACE_CHECK_CUDART_TYPE(MemcpyAsync, cudaMemcpyAsync);
TTRACE_CHECK_CUDART_TYPE(HostAlloc, cudaHostAlloc);
TTRACE_CHECK_CUDART_TYPE(FreeHost, cudaFreeHost);
TTRACE_CHECK_CUDART_TYPE(EventCreateWithFlags, cudaEventCreateWithFlags);
TTRACE_CHECK_CUDART_TYPE(EventRecord, cudaEventRecord);
TTRACE_CHECK_CUDART_TYPE(EventQuery, cudaEventQuery);
TTRACE_CHECK_CUDART_TYPE(EventDestroy, cudaEventDestroy);
TTRACE_CHECK_CUDART_TYPE(GetLastError, cudaGetLastError);
TTRACE_CHECK_CUDART_TYPE(PeekAtLastError, cudaPeekAtLastError);
TTRACE_CHECK_CUDART_TYPE(StreamIsCapturing, cudaStreamIsCapturing);
TTRACE_CHECK_CUDART_TYPE(StreamGetDevice, cudaStreamGetDevice);
TTRACE_CHECK_CUDART_TYPE(GetDevice, cudaGetDevice);
TTRACE_CHECK_CUDART_TYPE(SetDevice, cudaSetDevice);
TTRACE_CHECK_CUDART_TYPE(GetErrorName, cudaGetErrorName);
TTRACE_CHECK_CUDART_TYPE(ThreadExchangeStreamCaptureMode, cudaThreadExchangeStreamCaptureMode);
TTRACE_CHECK_CUDART_TYPE(Memcpy2DAsync, cudaMemcpy2DAsync);
#undef TTRACE_CHECK_CUDART_TYPE

constexpr const char* kSoname = "libcudart.so.13";

void* Find(const char* name) {
  if (void* fn = dlvsym(RTLD_NEXT, name, kSoname)) return fn;
  void* handle = dlopen(kSoname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* fn = dlvsym(handle, name, kSoname);
  dlclose(handle);
  return fn;
}

template <typename Fn>
bool Bind(Fn* slot, const char* name, const char** missing) {
  *slot = reinterpret_cast<Fn>(Find(name));
  if (*slot == nullptr && missing != nullptr && *missing == nullptr) *missing = name;
  return *slot != nullptr;
}

struct Resolved {
  CudartApi api{};
  const char* missing = nullptr;
  bool ok = false;
};

Resolved Resolve() {
  Resolved r;
  bool ok = true;
  ok &= Bind(&r.api.MemcpyAsync, "cudaMemcpyAsync", &r.missing);
  ok &= Bind(&r.api.HostAlloc, "cudaHostAlloc", &r.missing);
  ok &= Bind(&r.api.FreeHost, "cudaFreeHost", &r.missing);
  ok &= Bind(&r.api.EventCreateWithFlags, "cudaEventCreateWithFlags", &r.missing);
  ok &= Bind(&r.api.EventRecord, "cudaEventRecord", &r.missing);
  ok &= Bind(&r.api.EventQuery, "cudaEventQuery", &r.missing);
  ok &= Bind(&r.api.EventDestroy, "cudaEventDestroy", &r.missing);
  ok &= Bind(&r.api.GetLastError, "cudaGetLastError", &r.missing);
  ok &= Bind(&r.api.PeekAtLastError, "cudaPeekAtLastError", &r.missing);
  Bind(&r.api.StreamIsCapturing, "cudaStreamIsCapturing", nullptr);
  Bind(&r.api.StreamGetDevice, "cudaStreamGetDevice", nullptr);
  Bind(&r.api.GetDevice, "cudaGetDevice", nullptr);
  Bind(&r.api.SetDevice, "cudaSetDevice", nullptr);
  Bind(&r.api.GetErrorName, "cudaGetErrorName", nullptr);
  Bind(&r.api.ThreadExchangeStreamCaptureMode, "cudaThreadExchangeStreamCaptureMode", nullptr);
  Bind(&r.api.Memcpy2DAsync, "cudaMemcpy2DAsync", nullptr);
  r.ok = ok;
  return r;
}

}  // namespace

const CudartApi* ApplicationCudart(const char** missing) {
  static const Resolved* resolved = new Resolved(Resolve());
  if (missing != nullptr) *missing = resolved->missing;
  return resolved->ok ? &resolved->api : nullptr;
}

std::string CudaErrorText(const CudartApi* cudart, cudaError_t error) {
  const char* name = cudart != nullptr && cudart->GetErrorName != nullptr ? cudart->GetErrorName(error) : nullptr;
  return name != nullptr ? std::string(name) : "cudaError " + std::to_string(static_cast<int>(error));
}

}  // namespace ttrace::shim
