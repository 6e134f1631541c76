// cuGetProcAddress: resolves a base name and a CUDA version to the exported function of the newest ABI not newer
// than that version (entry_points.inc), as NVIDIA documents: an unknown name, or one whose oldest ABI is newer
// than the version asked for, gives CUDA_SUCCESS with a null pointer and the reason in symbolStatus. simgpu
// implements no per-thread-stream variants (_ptsz, _ptds), so the per-thread flag resolves to the same functions,
// in which stream 0 still names the legacy stream: a caller that wants the per-thread stream passes
// CU_STREAM_PER_THREAD.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstring>

namespace simgpu::driver {
namespace {

constexpr int kDriverVersion = 13000;

struct Entry {
  const char* name;
  int version;
  void* function;
};

const Entry kEntries[] = {
#define SIMGPU_DRIVER_ENTRY(name, version, function) {#name, version, reinterpret_cast<void*>(&function)},
#include "tools/simgpu/driver/entry_points.inc"
#undef SIMGPU_DRIVER_ENTRY
};

CUresult Resolve(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                 CUdriverProcAddressQueryResult* status) {
  constexpr cuuint64_t kKnown = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if (symbol == nullptr || pfn == nullptr || (flags & ~kKnown) != 0 || cudaVersion > kDriverVersion) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const Entry* best = nullptr;
  bool known = false;
  for (const Entry& e : kEntries) {
    if (strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version <= cudaVersion && (best == nullptr || e.version > best->version)) best = &e;
  }
  *pfn = best != nullptr ? best->function : nullptr;
  if (status != nullptr) {
    *status = best != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
              : known         ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                              : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simgpu::driver

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  return simgpu::driver::Resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return simgpu::driver::Resolve(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
