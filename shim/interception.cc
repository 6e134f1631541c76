// Symbol resolution for interceptors and for the vendor helpers the shim calls (cublasGetStream_v2, ...).
// Resolution happens on first use only: a constructor must not touch CUDA libraries (every child process of a
// launcher inherits LD_PRELOAD, and most of them never load CUDA).
#include "shim/interception.h"

#include <dlfcn.h>

#include <string>

#include "shim/log.h"

namespace ttrace::shim {
namespace {

struct VendorLibrary {
  const char* soname;
  const char* version_node;  // nullptr: the library's symbols are unversioned
  const char* prefix;        // NCCL: the strong pnccl* alias
};

VendorLibrary Vendor(format::Library library) {
  switch (library) {
    case format::Library::kCublas:
      return {"libcublas.so.13", "libcublas.so.13", ""};
    case format::Library::kCublasLt:
      return {"libcublasLt.so.13", "libcublasLt.so.13", ""};
    case format::Library::kCudnn:
      return {"libcudnn.so.9", nullptr, ""};
    case format::Library::kNccl:
      return {"libnccl.so.2", nullptr, "p"};
  }
  return {nullptr, nullptr, ""};
}

// A versioned library is asked for its own version node only, so that another major version loaded in the same
// process (libcublas.so.12 beside .13) is never called through a wrapper written for this one.
void* Lookup(void* handle, const std::string& name, const char* version_node) {
  if (version_node != nullptr) return dlvsym(handle, name.c_str(), version_node);
  return dlsym(handle, name.c_str());
}

thread_local int t_interceptor_depth = 0;

}  // namespace

void* ResolveVendorSymbol(format::Library library, const char* symbol) {
  const VendorLibrary v = Vendor(library);
  if (v.soname == nullptr) return nullptr;
  const std::string name = std::string(v.prefix) + symbol;
  if (void* fn = Lookup(RTLD_NEXT, name, v.version_node)) return fn;
  void* handle = dlopen(v.soname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* fn = Lookup(handle, name, v.version_node);
  dlclose(handle);  // drops the reference RTLD_NOLOAD added; the library stays loaded by its owner
  return fn;
}

void ReportUnresolved(const char* symbol) {
  static std::atomic<bool> reported[sizeof(format::kApis) / sizeof(format::kApis[0])];
  const int index = ApiIndex(symbol);
  if (index >= 0 && reported[index].exchange(true)) return;
  Log("cannot find the real %s (is its library loaded?); returning the library's not-initialized error",
      symbol);
}

InterceptorScope::InterceptorScope() : capturing_(t_interceptor_depth++ == 0 && CaptureEnabled()) {}

InterceptorScope::~InterceptorScope() { --t_interceptor_depth; }

}  // namespace ttrace::shim
