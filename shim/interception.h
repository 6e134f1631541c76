// The one interceptor pattern of libttrace.so, after llvm compiler-rt's interception.h.
//
// How to add an interceptor
//   1. List the exported symbol in include/ttrace/apis.inc (a new id at the end; never renumber). The version
//      script, the export test and the docs follow that list.
//   2. In the vendor library's file (cublas_interceptors.cc, nccl_interceptors.cc), which includes the vendor
//      header and defines TTRACE_LIBRARY (the format::Library it intercepts) and TTRACE_UNRESOLVED_STATUS (what
//      a call returns when the vendor's function cannot be found at all), write the parameters and the
//      arguments once each:
//
//        TTRACE_INTERCEPTOR(cublasStatus_t, cublasFoo, (cublasHandle_t handle, int n), (handle, n)) {
//          ... record / capture, then call REAL(cublasFoo)(handle, n) exactly once and return its status ...
//        }
//
//      A signature that drifts from the vendor header's declaration is a compile error.
//
// Versions. For each version node of the library (vendor_libraries.inc) the macro exports one entry point:
// cuBLAS's cublasFoo is exported as cublasFoo@@libcublas.so.13 and cublasFoo@libcublas.so.12, so the dynamic
// loader binds a caller linked against cuBLAS 12 to the second and one linked against cuBLAS 13 to the first
// (unversioned references, dlsym included, get the default @@ one); a caller bound to a version the shim does not
// know (cuBLAS 14) reaches the vendor directly, uncaptured but unharmed. cuDNN 9 has one node, libcudnn.so.9;
// NCCL has none and gets one export under the shim's own node TTRACE, which unversioned references bind to. The body is written once, as a template over `vendor_version` (the index
// of the caller's version node): REAL(func) is that version's function, and helpers that must reach the same
// library (cublasGetStream_v2 for a cuBLAS 12 handle) pass vendor_version to LazySymbol::Get.
//
// Each export resolves REAL(func) (lazily, on the first call, never in a constructor) and, if no vendor
// definition can be found by any means, says so once on stderr and returns TTRACE_UNRESOLVED_STATUS. It then
// passes the call straight through to the vendor when capture is disabled (TTRACE_DISABLE, a fatal internal
// error, a forked child), when TTRACE_OPS filters the call out, or when the thread is already inside an interceptor (a vendor library calling its own
// exported API, or the shim's capture code calling the vendor): only the outermost call is recorded.
//
// Resolution (DESIGN.md §5), for version node v of a library: dlvsym(RTLD_NEXT, name, node) for v and then for
// the library's other nodes, dlsym(RTLD_NEXT, name) (the default version, or an unversioned definition); when
// the library was loaded RTLD_LOCAL (Python), the same through dlopen(soname, RTLD_NOLOAD) of each soname. The
// caller's own version comes first, so two majors loaded in one process are each called through their own
// exports. NCCL calls resolve to the strong pnccl* alias. cuDNN 9's libcudnn.so.9 is a thin front whose functions
// are also exported by its sub-libraries (the backend API and cudnnCreate/SetStream by libcudnn_graph.so.9,
// convolutions by libcudnn_cnn.so.9, tensor descriptors by libcudnn_ops.so.9), each under its own node: when no
// libcudnn.so.9 definition is found, the sub-libraries loaded in the process are asked, under their nodes.
#ifndef TTRACE_SHIM_INTERCEPTION_H_
#define TTRACE_SHIM_INTERCEPTION_H_

#include <atomic>
#include <cstring>
#include <type_traits>

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

// vendor_libraries.inc as a table.
struct VendorNode {
  format::Library library;
  int index;
  const char* soname;
  bool versioned;
};
inline constexpr VendorNode kVendorNodes[] = {
#define TTRACE_VENDOR_NODE(library, index, soname, versioned) {format::Library::library, index, soname, versioned},
#include "shim/vendor_libraries.inc"
#undef TTRACE_VENDOR_NODE
};
constexpr int kMaxVendorVersions = 2;
// The soname (and version node) of `library`'s version `index`; nullptr when there is none.
constexpr const char* VendorSoname(format::Library library, int index) {
  for (const VendorNode& n : kVendorNodes)
    if (n.library == library && n.index == index) return n.soname;
  return nullptr;
}
constexpr bool VendorVersioned(format::Library library) {
  for (const VendorNode& n : kVendorNodes)
    if (n.library == library) return n.versioned;
  return false;
}

// Where the vendor's definition of `symbol` for the caller's version `version` lives (see the header comment);
// nullptr when no loaded library defines it. NCCL symbols are looked up as "p" + symbol. Any thread.
void* ResolveVendorSymbol(format::Library library, const char* symbol, int version = 0);

// A vendor function resolved on first use and cached, one slot per version of its library. Constant-initialized:
// usable from static storage without a constructor. Get() is thread-safe; concurrent first calls may resolve
// twice, to the same address.
class LazySymbol {
 public:
  constexpr LazySymbol(format::Library library, const char* symbol) : library_(library), symbol_(symbol) {}
  void* Get(int version = 0) {
    if (version < 0 || version >= kMaxVendorVersions) return nullptr;
    void* fn = fn_[version].load(std::memory_order_acquire);
    if (fn != nullptr) return fn;
    fn = ResolveVendorSymbol(library_, symbol_, version);
    if (fn != nullptr) fn_[version].store(fn, std::memory_order_release);
    return fn;
  }
  const char* symbol() const { return symbol_; }

 private:
  format::Library library_;
  const char* symbol_;
  std::atomic<void*> fn_[kMaxVendorVersions] = {};
};

// glibc's dlsym, never the shim's interposer of it (dlsym_interposer.cc): the shim's own lookups.
void* RealDlsym(void* handle, const char* name);

// Says once per process that `symbol` could not be resolved; returns nothing (the export returns the vendor's
// "not initialized" / internal error code).
void ReportUnresolved(const char* symbol);

// Marks the calling thread as inside an interceptor for its lifetime. capturing(): this is the outermost
// interceptor on the thread, capture is enabled and TTRACE_OPS selects the call (format::kApis[api_index]). A call
// filtered out still counts as the outermost: what the vendor calls inside it is not recorded either.
// True while the calling thread is inside an intercepted call (any InterceptorScope alive on it). Any thread.
bool InsideInterceptor();

class InterceptorScope {
 public:
  explicit InterceptorScope(int api_index);
  ~InterceptorScope();
  InterceptorScope(const InterceptorScope&) = delete;
  InterceptorScope& operator=(const InterceptorScope&) = delete;
  bool capturing() const { return capturing_; }

 private:
  bool capturing_;
};

}  // namespace ttrace::shim

#define TTRACE_INTERCEPTOR(ret, func, params, args)                                                           \
  namespace ttrace_real {                                                                                     \
  using func##_type = ret(*) params;                                                                          \
  static_assert(::ttrace::shim::ApiIndex(#func) >= 0, #func " is not listed in include/ttrace/apis.inc");     \
  static_assert(::ttrace::shim::ApiLibrary(#func) == ::ttrace::format::Library::TTRACE_LIBRARY,               \
                #func " belongs to another library's file (apis.inc)");                                       \
  /* the vendor's declaration with exactly these parameters (C++ overloads of it aside): else a compile error */  \
  using func##_declared = decltype(static_cast<func##_type>(&::func));                                        \
  static ::ttrace::shim::LazySymbol func##_symbol(::ttrace::shim::ApiLibrary(#func), #func);                  \
  }                                                                                                           \
  template <int vendor_version>                                                                               \
  static ret ttrace_intercept_##func params;                                                                  \
  TTRACE_EXPORTS_(TTRACE_LIBRARY, ret, func, params, args)                                                    \
  template <int vendor_version>                                                                               \
  static ret ttrace_intercept_##func params

// The vendor's definition of an intercepted function for the caller's version (never null inside a body).
#define REAL(func) (reinterpret_cast<ttrace_real::func##_type>(ttrace_real::func##_symbol.Get(vendor_version)))

// ---- exports, one per version node (vendor_libraries.inc) ---------------------------------------------------
#define TTRACE_EXPORTS_(library, ret, func, params, args) TTRACE_EXPORTS_EXPAND_(library, ret, func, params, args)
#define TTRACE_EXPORTS_EXPAND_(library, ret, func, params, args) TTRACE_EXPORTS_##library(ret, func, params, args)

#define TTRACE_EXPORTS_kCublas(ret, func, params, args)                                              \
  TTRACE_VERSIONED_EXPORT_(kCublas, ret, func, params, args, 0, #func "@@libcublas.so.13", "libcublas.so.13") \
  TTRACE_VERSIONED_EXPORT_(kCublas, ret, func, params, args, 1, #func "@libcublas.so.12", "libcublas.so.12")
#define TTRACE_EXPORTS_kCublasLt(ret, func, params, args)                                                 \
  TTRACE_VERSIONED_EXPORT_(kCublasLt, ret, func, params, args, 0, #func "@@libcublasLt.so.13",            \
                           "libcublasLt.so.13")                                                           \
  TTRACE_VERSIONED_EXPORT_(kCublasLt, ret, func, params, args, 1, #func "@libcublasLt.so.12", "libcublasLt.so.12")
#define TTRACE_EXPORTS_kNccl(ret, func, params, args) TTRACE_PLAIN_EXPORT_(kNccl, ret, func, params, args)
#define TTRACE_EXPORTS_kCudnn(ret, func, params, args) \
  TTRACE_VERSIONED_EXPORT_(kCudnn, ret, func, params, args, 0, #func "@@libcudnn.so.9", "libcudnn.so.9")

#define TTRACE_EXPORT_BODY_(ret, func, args, index)                                        \
  {                                                                                        \
    auto real = reinterpret_cast<ttrace_real::func##_type>(ttrace_real::func##_symbol.Get(index)); \
    if (real == nullptr) {                                                                 \
      ::ttrace::shim::ReportUnresolved(#func);                                             \
      return TTRACE_UNRESOLVED_STATUS;                                                     \
    }                                                                                      \
    constexpr int ttrace_api_index_ = ::ttrace::shim::ApiIndex(#func);                     \
    ::ttrace::shim::InterceptorScope ttrace_scope_(ttrace_api_index_);                     \
    if (!ttrace_scope_.capturing()) return real args;                                      \
    return ttrace_intercept_##func<index> args;                                            \
  }

#define TTRACE_VERSIONED_EXPORT_(library, ret, func, params, args, index, versioned_name, node)               \
  static_assert(::ttrace::shim::VendorVersioned(::ttrace::format::Library::library) &&                     \
                    ::ttrace::shim::SymbolEquals(                                                          \
                        ::ttrace::shim::VendorSoname(::ttrace::format::Library::library, index), node),    \
                "interception.h and vendor_libraries.inc disagree on " node);                              \
  extern "C" __attribute__((visibility("default"), symver(versioned_name))) ret ttrace_##func##_##index params \
      TTRACE_EXPORT_BODY_(ret, func, args, index)

#define TTRACE_PLAIN_EXPORT_(library, ret, func, params, args)                                         \
  static_assert(!::ttrace::shim::VendorVersioned(::ttrace::format::Library::library),                  \
                "vendor_libraries.inc says this library has version nodes: export it per node");      \
  extern "C" __attribute__((visibility("default"))) ret func params TTRACE_EXPORT_BODY_(ret, func, args, 0)

#endif  // TTRACE_SHIM_INTERCEPTION_H_
