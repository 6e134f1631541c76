// Internal to libcuda.so.1 (simgpu): what the driver's source files share. Handles are the core's objects, the
// same the runtime hands out: a CUstream is a simgpu::Stream* (0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are
// cudaStreamLegacy's and cudaStreamPerThread's values), a CUevent a simgpu::Event*, a CUgraph a simgpu::Graph*,
// a CUdeviceptr the host address of the allocation as an integer, a CUcontext the primary context of a device.
#ifndef TTRACE_TOOLS_SIMGPU_DRIVER_DRIVER_INTERNAL_H_
#define TTRACE_TOOLS_SIMGPU_DRIVER_DRIVER_INTERNAL_H_

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "tools/simgpu/core/simgpu.h"

namespace simgpu::driver {

// CUDA_ERROR_NOT_INITIALIZED before cuInit (or a runtime call that initializes the driver), else CUDA_SUCCESS.
CUresult Ready();
// Ready() and a context current to the calling thread (CUDA_ERROR_INVALID_CONTEXT when none).
CUresult ReadyContext();

// The primary context of `device` (a valid ordinal), and the device of a context (-1 for a handle that is not a
// primary context).
CUcontext PrimaryContext(int device);
int ContextDevice(CUcontext ctx);

// Resolves a stream handle for a driver call, after Ready(): a stream created by cuStreamCreate or by the runtime
// needs no current context; 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the current context's streams and
// give CUDA_ERROR_INVALID_CONTEXT without one. CUDA_ERROR_INVALID_HANDLE for a handle that is no live stream.
CUresult ResolveDriverStream(CUstream handle, Stream** stream);
bool SpecialStream(CUstream handle);  // 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD

// A core status as the driver reports it (the core speaks cudaError_t; capture errors share their numbers).
CUresult ToResult(cudaError_t status);

}  // namespace simgpu::driver

#endif  // TTRACE_TOOLS_SIMGPU_DRIVER_DRIVER_INTERNAL_H_
