// The table is filled once under a function-local static (thread-safe initialization).
#include "shim/driver_api.h"

#include <dlfcn.h>

#include <string>

namespace ttrace::shim {
namespace {

constexpr const char* kSoname = "libcuda.so.1";

void* g_driver_handle = nullptr;  // set once, before the table is resolved

void* DlsymDriver(const char* name) { return dlsym(g_driver_handle, name); }

struct Resolved {
  DriverApi api{};
  const char* missing = nullptr;
  bool ok = false;
};

Resolved Resolve() {
  Resolved r;
  void* handle = dlopen(kSoname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(kSoname, RTLD_LAZY);
  if (handle == nullptr) {
    r.missing = kSoname;
    return r;
  }
  g_driver_handle = handle;  // never closed: the table points into it
  GetProcAddressFn get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(handle, "cuGetProcAddress_v2"));
  using OldGetProc = CUresult (*)(const char*, void**, int, cuuint64_t);
  static OldGetProc old_get_proc = nullptr;
  if (get_proc == nullptr) {
    old_get_proc = reinterpret_cast<OldGetProc>(dlsym(handle, "cuGetProcAddress"));
    if (old_get_proc != nullptr) {
      get_proc = [](const char* symbol, void** pfn, int version, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* status) {
        if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return old_get_proc(symbol, pfn, version, flags);
      };
    }
  }
  r.missing = ResolveDriver(get_proc, &DlsymDriver, &r.api);
  r.ok = r.missing == nullptr;
  return r;
}

}  // namespace

const char* ResolveDriver(GetProcAddressFn get_proc, void* (*dlsym_fn)(const char* name), DriverApi* api) {
  const char* missing = nullptr;
  auto find = [&](const char* name, int version, const char* exported) -> void* {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc != nullptr &&
        (get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS ||
         status != CU_GET_PROC_ADDRESS_SUCCESS))
      fn = nullptr;
    if (fn == nullptr && dlsym_fn != nullptr) fn = dlsym_fn(exported);
    return fn;
  };
#define TTRACE_DRIVER_BIND(member, name, version, exported, required)                     \
  api->member = reinterpret_cast<PFN_##name##_v##version>(find(#name, version, exported)); \
  if (required && api->member == nullptr && missing == nullptr) missing = #name;
  TTRACE_DRIVER_FUNCTIONS(TTRACE_DRIVER_BIND)
#undef TTRACE_DRIVER_BIND
  return missing;
}

const DriverApi* ProcessDriver(const char** missing) {
  static const Resolved* resolved = new Resolved(Resolve());
  if (missing != nullptr) *missing = resolved->missing;
  return resolved->ok ? &resolved->api : nullptr;
}

std::string CudaErrorText(const DriverApi* driver, CUresult error) {
  const char* name = nullptr;
  if (driver != nullptr && driver->GetErrorName != nullptr && driver->GetErrorName(error, &name) != CUDA_SUCCESS)
    name = nullptr;
  return name != nullptr ? std::string(name) : "CUresult " + std::to_string(static_cast<int>(error));
}

}  // namespace ttrace::shim
