// cudaGetDriverEntryPoint(ByVersion): resolved by simgpu's own libcuda.so.1, loaded from the directory this
// library was loaded from. Never by a plain dlopen("libcuda.so.1"): on a machine with a GPU that could load
// NVIDIA's driver, whose functions know nothing of simgpu's devices and memory.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

#include "tools/simgpu/cudart/cudart_internal.h"

using simgpu::cudart::Report;

namespace simgpu::cudart {
namespace {

using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

GetProcAddressFn DriverResolver() {
  static GetProcAddressFn resolver = [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&DriverResolver), &info) == 0 || info.dli_fname == nullptr) {
      return static_cast<GetProcAddressFn>(nullptr);
    }
    std::string path = info.dli_fname;
    path = path.substr(0, path.rfind('/') + 1) + "libcuda.so.1";
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return static_cast<GetProcAddressFn>(nullptr);
    return reinterpret_cast<GetProcAddressFn>(dlsym(handle, "cuGetProcAddress_v2"));
  }();
  return resolver;
}

cudaError_t Resolve(const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
                    cudaDriverEntryPointQueryResult* driverStatus) {
  constexpr unsigned long long kKnown = cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream;
  if (symbol == nullptr || funcPtr == nullptr || (flags & ~kKnown) != 0) return Report(cudaErrorInvalidValue);
  GetProcAddressFn resolve = DriverResolver();
  if (resolve == nullptr) return Report(cudaErrorNotSupported);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  // The runtime's flags and query results have the driver's values (cudaEnable* == CU_GET_PROC_ADDRESS_*).
  CUresult r = resolve(symbol, funcPtr, static_cast<int>(cudaVersion), flags, &status);
  if (r != CUDA_SUCCESS) return Report(cudaErrorInvalidValue);
  if (driverStatus != nullptr) *driverStatus = static_cast<cudaDriverEntryPointQueryResult>(status);
  return cudaSuccess;
}

static_assert(static_cast<int>(cudaDriverEntryPointSymbolNotFound) == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
static_assert(static_cast<int>(cudaDriverEntryPointVersionNotSufficent) ==
              CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
static_assert(static_cast<int>(cudaEnablePerThreadDefaultStream) == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);

}  // namespace
}  // namespace simgpu::cudart

extern "C" {

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* driverStatus) {
  return simgpu::cudart::Resolve(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* driverStatus) {
  return simgpu::cudart::Resolve(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

}  // extern "C"
