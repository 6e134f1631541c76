// The one interceptor pattern of libttrace.so, after llvm compiler-rt's interception.h.
//
// How to add an interceptor
//   1. List the exported symbol in include/ttrace/apis.inc (a new id at the end; never renumber). The version
//      script, the export test and the docs follow that list.
//   2. In the vendor library's file (cublas_interceptors.cc, nccl_interceptors.cc), which includes the vendor
//      header so that a signature that drifts is a compile error ("conflicting declaration of C function"):
//
//        TTRACE_INTERCEPTOR(cublasStatus_t, cublasFoo, cublasHandle_t handle, int n) {
//          TTRACE_ENTER(cublasFoo, CUBLAS_STATUS_NOT_INITIALIZED, handle, n);
//          ... record / capture, then call REAL(cublasFoo)(handle, n) exactly once and return its status ...
//        }
//
// TTRACE_ENTER resolves REAL(func) (lazily, on the first call, never in a constructor) and returns
// `unresolved_status` if the vendor library does not define it (saying so once on stderr). It then passes the
// call straight through to the vendor when capture is disabled (TTRACE_DISABLE, a fatal internal error, a forked
// child) or when the thread is already inside an interceptor (a vendor library calling its own exported API, or
// the shim's capture code calling the vendor): only the outermost call is recorded.
//
// Resolution (DESIGN.md §5): dlvsym(RTLD_NEXT, name, version node) / dlsym(RTLD_NEXT, name); when the library was
// loaded RTLD_LOCAL (Python), dlopen(soname, RTLD_NOLOAD) + dlvsym. NCCL calls resolve to the strong pnccl* alias.
#ifndef TTRACE_SHIM_INTERCEPTION_H_
#define TTRACE_SHIM_INTERCEPTION_H_

#include <atomic>
#include <cstring>

#include "shim/runtime.h"
#include "ttrace/format.h"

namespace ttrace::shim {

// The library that defines `symbol` according to apis.inc, at compile time.
constexpr bool SymbolEquals(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}
constexpr int ApiIndex(const char* symbol) {
  for (size_t i = 0; i < sizeof(format::kApis) / sizeof(format::kApis[0]); ++i)
    if (SymbolEquals(format::kApis[i].symbol, symbol)) return static_cast<int>(i);
  return -1;
}
constexpr format::Library ApiLibrary(const char* symbol) { return format::kApis[ApiIndex(symbol)].library; }

// Where the vendor's definition of `symbol` lives (see the header comment); nullptr when it is not loaded.
// NCCL symbols are looked up as "p" + symbol. Any thread.
void* ResolveVendorSymbol(format::Library library, const char* symbol);

// A vendor function resolved on first use and cached. Constant-initialized: usable from static storage without
// a constructor. Get() is thread-safe; concurrent first calls may resolve twice, to the same address.
class LazySymbol {
 public:
  constexpr LazySymbol(format::Library library, const char* symbol) : library_(library), symbol_(symbol) {}
  void* Get() {
    void* fn = fn_.load(std::memory_order_acquire);
    if (fn != nullptr) return fn;
    fn = ResolveVendorSymbol(library_, symbol_);
    if (fn != nullptr) fn_.store(fn, std::memory_order_release);
    return fn;
  }
  const char* symbol() const { return symbol_; }

 private:
  format::Library library_;
  const char* symbol_;
  std::atomic<void*> fn_{nullptr};
};

// Says once per process that `symbol` could not be resolved; returns nothing (the interceptor returns the
// vendor's "not initialized" / internal error code).
void ReportUnresolved(const char* symbol);

// Marks the calling thread as inside an interceptor for its lifetime. capturing(): this is the outermost
// interceptor on the thread and capture is enabled.
class InterceptorScope {
 public:
  InterceptorScope();
  ~InterceptorScope();
  InterceptorScope(const InterceptorScope&) = delete;
  InterceptorScope& operator=(const InterceptorScope&) = delete;
  bool capturing() const { return capturing_; }

 private:
  bool capturing_;
};

}  // namespace ttrace::shim

#define TTRACE_INTERCEPTOR(ret, func, ...)                                                                \
  namespace ttrace_real {                                                                                 \
  using func##_type = ret (*)(__VA_ARGS__);                                                               \
  static_assert(::ttrace::shim::ApiIndex(#func) >= 0, #func " is not listed in include/ttrace/apis.inc"); \
  static ::ttrace::shim::LazySymbol func##_symbol(::ttrace::shim::ApiLibrary(#func), #func);              \
  }                                                                                                       \
  extern "C" __attribute__((visibility("default"))) ret func(__VA_ARGS__)

// The vendor's definition of an intercepted function (nullptr when unresolved; TTRACE_ENTER checked that).
#define REAL(func) (reinterpret_cast<ttrace_real::func##_type>(ttrace_real::func##_symbol.Get()))

#define TTRACE_ENTER(func, unresolved_status, ...)             \
  if (REAL(func) == nullptr) {                                 \
    ::ttrace::shim::ReportUnresolved(#func);                   \
    return unresolved_status;                                  \
  }                                                            \
  ::ttrace::shim::InterceptorScope ttrace_scope_;              \
  if (!ttrace_scope_.capturing()) return REAL(func)(__VA_ARGS__)

#endif  // TTRACE_SHIM_INTERCEPTION_H_
