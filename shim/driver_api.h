// The CUDA driver functions the capture engine calls, as a table of function pointers.
//
// Why the driver: every CUDA program has libcuda.so.1 in its process, whatever runtime it uses: a closed binary
// with cudart linked statically has no libcudart.so at all, and a CUDA 12 program has libcudart.so.12. A runtime
// stream is a driver stream and a runtime event a driver event, and the primary context is shared by every
// runtime in the process, so copies and events issued here land on the application's own streams. There is no
// cudart fallback: the driver is always there when a program has run a GPU library call.
//
// Resolution, once, at the first capture (never in a constructor): dlopen("libcuda.so.1") (RTLD_NOLOAD first; a
// process that called a CUDA library has it loaded on a GPU machine) and then, as NVIDIA documents for versioned
// entry points, cuGetProcAddress_v2 (cuGetProcAddress before CUDA 12) for each function with the CUDA version
// that introduced the ABI its pointer type declares (cudaTypedefs.h: PFN_cuX_vN is asked for with version N), and
// legacy default-stream semantics (the application's stream handles are passed as they came); a driver without
// cuGetProcAddress is asked with dlsym for the exported name of that ABI. libttrace.so still has no DT_NEEDED on
// libcuda: torchrun's agents and every other child process of a launcher run without a driver.
//
// Tests build their own table (fakes that copy host memory) and hand it to CaptureEngine.
#ifndef TTRACE_SHIM_DRIVER_API_H_
#define TTRACE_SHIM_DRIVER_API_H_

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace ttrace::shim {

// X(member, base name, ABI version, exported name of that ABI, required). Required ones are needed for tensor
// capture at all; optional ones (nullptr when absent): graph-capture detection, the stream's context (made
// current while we enqueue on the stream: events must belong to it), messages, the calling thread's capture mode
// (our calls run relaxed so that they never invalidate a global-mode graph capture the application has open),
// pitched copies of thin slices of wide matrices (tensor_pack.h; without it the whole region is copied), host
// nodes in CUDA graphs (without it, ops in graphs lose their payloads), pointer attributes (where a pointer array
// of a batched GEMM lives; without it, pointer-array operands are not captured), and the graph node calls of the
// snapshot nodes in cuDNN's native CUDA graphs (capture_native_graph.cc; docs/design.md, "cuDNN's native CUDA
// graphs": memcpy and host nodes, edges, clone and find-in-clone, node destruction, memset and kernel node
// parameters through the driver; without any one of them, native-graph ops are not captured; and a device
// allocation, the scratch that snapshot copies read once their op's operands are unknown).
#define TTRACE_DRIVER_FUNCTIONS(X)                                                                   \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync, 3020, "cuMemcpyDtoHAsync_v2", true)                         \
  X(MemHostAlloc, cuMemHostAlloc, 2020, "cuMemHostAlloc", true)                                      \
  X(MemFreeHost, cuMemFreeHost, 2000, "cuMemFreeHost", true)                                         \
  X(EventCreate, cuEventCreate, 2000, "cuEventCreate", true)                                         \
  X(EventRecord, cuEventRecord, 2000, "cuEventRecord", true)                                         \
  X(EventQuery, cuEventQuery, 2000, "cuEventQuery", true)                                            \
  X(EventDestroy, cuEventDestroy, 4000, "cuEventDestroy_v2", true)                                   \
  X(StreamIsCapturing, cuStreamIsCapturing, 10000, "cuStreamIsCapturing", false)                     \
  X(StreamGetCtx, cuStreamGetCtx, 9020, "cuStreamGetCtx", false)                                     \
  X(CtxGetCurrent, cuCtxGetCurrent, 4000, "cuCtxGetCurrent", false)                                  \
  X(CtxPushCurrent, cuCtxPushCurrent, 4000, "cuCtxPushCurrent_v2", false)                            \
  X(CtxPopCurrent, cuCtxPopCurrent, 4000, "cuCtxPopCurrent_v2", false)                               \
  X(GetErrorName, cuGetErrorName, 6000, "cuGetErrorName", false)                                     \
  X(ThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010,                       \
    "cuThreadExchangeStreamCaptureMode", false)                                                      \
  X(Memcpy2DAsync, cuMemcpy2DAsync, 3020, "cuMemcpy2DAsync_v2", false)                               \
  X(LaunchHostFunc, cuLaunchHostFunc, 10000, "cuLaunchHostFunc", false)                             \
  X(PointerGetAttribute, cuPointerGetAttribute, 4000, "cuPointerGetAttribute", false)                 \
  X(GraphGetNodes, cuGraphGetNodes, 10000, "cuGraphGetNodes", false)                                 \
  X(GraphGetRootNodes, cuGraphGetRootNodes, 10000, "cuGraphGetRootNodes", false)                     \
  X(GraphNodeGetDependentNodes, cuGraphNodeGetDependentNodes, 10000, "cuGraphNodeGetDependentNodes", \
    false)                                                                                           \
  X(GraphNodeGetType, cuGraphNodeGetType, 10000, "cuGraphNodeGetType", false)                        \
  X(GraphAddMemcpyNode, cuGraphAddMemcpyNode, 10000, "cuGraphAddMemcpyNode", false)                  \
  X(GraphAddHostNode, cuGraphAddHostNode, 10000, "cuGraphAddHostNode", false)                        \
  X(GraphAddDependencies, cuGraphAddDependencies, 10000, "cuGraphAddDependencies", false)            \
  X(GraphClone, cuGraphClone, 10000, "cuGraphClone", false)                                          \
  X(GraphNodeFindInClone, cuGraphNodeFindInClone, 10000, "cuGraphNodeFindInClone", false)            \
  X(GraphDestroyNode, cuGraphDestroyNode, 10000, "cuGraphDestroyNode", false)                        \
  X(GraphDestroy, cuGraphDestroy, 10000, "cuGraphDestroy", false)                                    \
  X(GraphMemcpyNodeGetParams, cuGraphMemcpyNodeGetParams, 10000, "cuGraphMemcpyNodeGetParams", false) \
  X(GraphMemcpyNodeSetParams, cuGraphMemcpyNodeSetParams, 10000, "cuGraphMemcpyNodeSetParams", false) \
  X(GraphMemsetNodeGetParams, cuGraphMemsetNodeGetParams, 10000, "cuGraphMemsetNodeGetParams", false) \
  X(GraphMemsetNodeSetParams, cuGraphMemsetNodeSetParams, 10000, "cuGraphMemsetNodeSetParams", false) \
  X(GraphHostNodeGetParams, cuGraphHostNodeGetParams, 10000, "cuGraphHostNodeGetParams", false)      \
  X(GraphKernelNodeGetParams, cuGraphKernelNodeGetParams, 12000, "cuGraphKernelNodeGetParams_v2",    \
    false)                                                                                           \
  X(GraphKernelNodeSetParams, cuGraphKernelNodeSetParams, 12000, "cuGraphKernelNodeSetParams_v2",    \
    false)                                                                                           \
  X(GraphKernelNodeCopyAttributes, cuGraphKernelNodeCopyAttributes, 11000,                           \
    "cuGraphKernelNodeCopyAttributes", false)                                                        \
  X(MemAlloc, cuMemAlloc, 3020, "cuMemAlloc_v2", false)

struct DriverApi {
#define TTRACE_DRIVER_MEMBER(member, name, version, exported, required) PFN_##name##_v##version member;
  TTRACE_DRIVER_FUNCTIONS(TTRACE_DRIVER_MEMBER)
#undef TTRACE_DRIVER_MEMBER
};

// The process's driver, resolved on the first call (thread-safe, cached, including a failure). nullptr when
// libcuda.so.1 cannot be loaded or lacks a required function; `missing` (may be null) then names what.
const DriverApi* ProcessDriver(const char** missing);

// Fills `api` through `get_proc` (a cuGetProcAddress_v2-shaped function) and `dlsym_fn` (a dlsym on the
// driver's handle; may be null): exposed for tests of the resolution order. Returns the first required
// function that is missing, or nullptr when all are there.
using GetProcAddressFn = CUresult (*)(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult* status);
const char* ResolveDriver(GetProcAddressFn get_proc, void* (*dlsym_fn)(const char* name), DriverApi* api);

// Puts the calling thread in CU_STREAM_CAPTURE_MODE_RELAXED for its lifetime and restores the previous mode: in
// global mode (CUDA's default) an allocation or wait of ours, on any thread, while the application captures a
// graph would fail and invalidate the application's capture. No-op without ThreadExchangeStreamCaptureMode.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(const DriverApi* driver)
      : exchange_(driver != nullptr ? driver->ThreadExchangeStreamCaptureMode : nullptr) {
    if (exchange_ != nullptr && exchange_(&previous_) != CUDA_SUCCESS) exchange_ = nullptr;
  }
  ~RelaxedCaptureMode() {
    if (exchange_ != nullptr) exchange_(&previous_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

// "CUDA_ERROR_INVALID_VALUE" (or "CUresult 1" without cuGetErrorName), for messages.
std::string CudaErrorText(const DriverApi* driver, CUresult error);

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_DRIVER_API_H_
