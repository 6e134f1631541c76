// Symbol resolution for interceptors and for the vendor helpers the shim calls (cublasGetStream_v2, ...).
// Resolution happens on first use only: a constructor must not touch CUDA libraries (every child process of a
// launcher inherits LD_PRELOAD, and most of them never load CUDA).
#include "shim/interception.h"

#include <dlfcn.h>

#include <string>

#include "shim/log.h"

// glibc's dlsym, once RealDlsym has resolved it: a plain C name, since dlsym_interposer.cc's assembly jumps
// through it.
extern "C" {
__attribute__((visibility("hidden"))) void* ttrace_real_dlsym_slot = nullptr;
}

namespace ttrace::shim {
namespace {

// NCCL's ncclX are weak aliases of the strong pncclX (DESIGN.md §5): asking for the strong one finds NCCL's
// definition, never an interposer's.
const char* Prefix(format::Library library) { return library == format::Library::kNccl ? "p" : ""; }

void* Lookup(void* handle, const char* name, const char* version_node) {
  return version_node != nullptr ? dlvsym(handle, name, version_node) : RealDlsym(handle, name);
}

// The library's sonames, the caller's version first.
int Sonames(format::Library library, int version, const char* out[kMaxVendorVersions]) {
  int n = 0;
  if (const char* own = VendorSoname(library, version)) out[n++] = own;
  for (int i = 0; i < kMaxVendorVersions; ++i) {
    const char* s = VendorSoname(library, i);
    if (i != version && s != nullptr) out[n++] = s;
  }
  return n;
}

// cuDNN 9's sub-libraries, which define libcudnn.so.9's functions again under their own version nodes (soname =
// node); asked last, when no libcudnn.so.9 is loaded (a program linked to a sub-library directly).
constexpr const char* kCudnnSublibs[] = {"libcudnn_graph.so.9", "libcudnn_cnn.so.9", "libcudnn_ops.so.9"};

void* ResolveInCudnnSublibs(const char* name) {
  for (const char* soname : kCudnnSublibs) {
    if (void* fn = dlvsym(RTLD_NEXT, name, soname)) return fn;
    void* handle = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* fn = dlvsym(handle, name, soname);
    dlclose(handle);
    if (fn != nullptr) return fn;
  }
  return nullptr;
}

// initial-exec: a direct %fs-relative access instead of a __tls_get_addr call on every intercepted call (the
// variable is 4 bytes of the static TLS surplus glibc keeps for libraries loaded later, so dlopen still works).
__attribute__((tls_model("initial-exec"))) thread_local int t_interceptor_depth = 0;

}  // namespace

using DlsymFn = void* (*)(void*, const char*);

void* RealDlsym(void* handle, const char* name) {
  auto real = reinterpret_cast<DlsymFn>(__atomic_load_n(&ttrace_real_dlsym_slot, __ATOMIC_ACQUIRE));
  if (real == nullptr) {
    // glibc's own, whichever version this glibc has (dlvsym is not interposed; RTLD_NEXT from here is libc).
    real = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (real == nullptr) real = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    __atomic_store_n(&ttrace_real_dlsym_slot, reinterpret_cast<void*>(real), __ATOMIC_RELEASE);
  }
  return real != nullptr ? real(handle, name) : nullptr;
}

void* ResolveVendorSymbol(format::Library library, const char* symbol, int version) {
  if (version < 0 || version >= kMaxVendorVersions) return nullptr;
  const char* sonames[kMaxVendorVersions];
  const int n = Sonames(library, version, sonames);
  if (n == 0) return nullptr;
  const bool versioned = VendorVersioned(library);
  const std::string name = std::string(Prefix(library)) + symbol;
  if (versioned) {
    for (int i = 0; i < n; ++i)
      if (void* fn = Lookup(RTLD_NEXT, name.c_str(), sonames[i])) return fn;
  }
  if (void* fn = Lookup(RTLD_NEXT, name.c_str(), nullptr)) return fn;
  for (int i = 0; i < n; ++i) {
    void* handle = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* fn = versioned ? Lookup(handle, name.c_str(), sonames[i]) : nullptr;
    if (fn == nullptr) fn = Lookup(handle, name.c_str(), nullptr);
    dlclose(handle);  // drops the reference RTLD_NOLOAD added; the library stays loaded by its owner
    if (fn != nullptr) return fn;
  }
  return library == format::Library::kCudnn ? ResolveInCudnnSublibs(name.c_str()) : nullptr;
}

void ReportUnresolved(const char* symbol) {
  static std::atomic<bool> reported[sizeof(format::kApis) / sizeof(format::kApis[0])];
  const int index = ApiIndex(symbol);
  if (index >= 0 && reported[index].exchange(true)) return;
  Log("cannot find the real %s (is its library loaded?); returning the library's not-initialized error",
      symbol);
}

InterceptorScope::InterceptorScope(int api_index)
    : capturing_(t_interceptor_depth++ == 0 && CaptureEnabled(api_index)) {}

InterceptorScope::~InterceptorScope() { --t_interceptor_depth; }

bool InsideInterceptor() { return t_interceptor_depth > 0; }

}  // namespace ttrace::shim
