// Streams and stream capture through the driver API, on the core's streams (simgpu.h): a runtime stream is a
// driver stream, so a stream cudaStreamCreate made is usable by cuStream* calls and the other way round, and a
// capture begun by either API is seen by both. Validation and capture refusals follow cudart/streams.cc and
// cudart/capture.cc, with the driver's error codes.
//
// Context: an explicit stream carries its own context, so calls on it need none current; the special handles
// (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) name streams of the current context and need one, as does creating
// a stream (CUDA_ERROR_INVALID_CONTEXT).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/driver/driver_internal.h"

namespace simgpu::driver {

// The codes the core returns. Capture errors share their numbers across the two enumerations.
static_assert(static_cast<int>(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) == cudaErrorStreamCaptureUnsupported);
static_assert(static_cast<int>(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) == cudaErrorStreamCaptureWrongThread);
static_assert(static_cast<int>(CUDA_ERROR_CAPTURED_EVENT) == cudaErrorCapturedEvent);

CUresult ToResult(cudaError_t status) {
  switch (status) {
    case cudaSuccess:
      return CUDA_SUCCESS;
    case cudaErrorInvalidValue:
      return CUDA_ERROR_INVALID_VALUE;
    case cudaErrorMemoryAllocation:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case cudaErrorInvalidResourceHandle:
      return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorIllegalState:
      return CUDA_ERROR_ILLEGAL_STATE;
    case cudaErrorNotReady:
      return CUDA_ERROR_NOT_READY;
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorCapturedEvent:
    case cudaErrorStreamCaptureWrongThread:
      return static_cast<CUresult>(status);
    default:
      return CUDA_ERROR_UNKNOWN;
  }
}

bool SpecialStream(CUstream handle) {
  return handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD;
}

CUresult ResolveDriverStream(CUstream handle, Stream** stream) {
  if (SpecialStream(handle)) {
    if (!ContextBound()) return CUDA_ERROR_INVALID_CONTEXT;
    *stream = ResolveStream(handle);
  } else {
    *stream = LookupStream(handle);
  }
  return *stream != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

namespace {

static_assert(static_cast<int>(CU_STREAM_NON_BLOCKING) == cudaStreamNonBlocking);
static_assert(static_cast<int>(CU_STREAM_CAPTURE_MODE_RELAXED) == cudaStreamCaptureModeRelaxed);
static_assert(static_cast<int>(CU_STREAM_CAPTURE_STATUS_INVALIDATED) == cudaStreamCaptureStatusInvalidated);

// Initialized, and the stream resolved.
CUresult Resolve(CUstream handle, Stream** stream) {
  CUresult r = Ready();
  return r != CUDA_SUCCESS ? r : ResolveDriverStream(handle, stream);
}

bool ValidMode(CUstreamCaptureMode mode) {
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
         mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

CUresult BeginCapture(CUstream handle, CUstreamCaptureMode mode) {
  Stream* s = nullptr;
  CUresult r = Resolve(handle, &s);
  if (r != CUDA_SUCCESS) return r;
  if (!ValidMode(mode)) return CUDA_ERROR_INVALID_VALUE;
  return ToResult(simgpu::BeginCapture(s, static_cast<cudaStreamCaptureMode>(mode)));
}

// The capture status of a stream, as cuStreamIsCapturing and every cuStreamGetCaptureInfo ABI report it: the
// legacy stream while a blocking stream of its device captures is CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
CUresult CaptureStatus(CUstream handle, CUstreamCaptureStatus* status, cuuint64_t* id_out, CUgraph* graph_out,
                       const CUgraphNode** dependencies_out, size_t* num_out) {
  Stream* s = nullptr;
  CUresult r = Resolve(handle, &s);
  if (r != CUDA_SUCCESS) return r;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  r = ToResult(CheckLegacyQuery(s));
  if (r != CUDA_SUCCESS) return r;
  unsigned long long id = 0;
  Graph* graph = nullptr;
  const std::vector<GraphNode*>* deps = nullptr;
  *status = static_cast<CUstreamCaptureStatus>(CaptureInfo(s, &id, &graph, &deps));
  if (*status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return CUDA_SUCCESS;
  if (id_out != nullptr) *id_out = id;
  if (graph_out != nullptr) *graph_out = reinterpret_cast<CUgraph>(graph);
  if (dependencies_out != nullptr) {
    *dependencies_out = deps->empty() ? nullptr : reinterpret_cast<const CUgraphNode*>(deps->data());
  }
  if (num_out != nullptr) *num_out = deps->size();
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simgpu::driver

using simgpu::driver::Ready;
using simgpu::driver::ToResult;

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  CUresult r = simgpu::driver::ReadyContext();
  if (r != CUDA_SUCCESS) return r;
  if (phStream == nullptr || (Flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *phStream = reinterpret_cast<CUstream>(simgpu::CreateStream(Flags, 0));
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  simgpu::Stream* s = simgpu::LookupStream(hStream);  // the special streams cannot be destroyed
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  simgpu::DestroyStream(s);
  return CUDA_SUCCESS;
}

// The CUDA 2.0 ABI: the same call.
CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }

CUresult cuStreamSynchronize(CUstream hStream) {
  simgpu::Stream* s = nullptr;
  CUresult r = simgpu::driver::Resolve(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  r = ToResult(simgpu::CheckStreamWait(s));
  if (r != CUDA_SUCCESS) return r;
  simgpu::SynchronizeStream(s);
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream hStream) {
  simgpu::Stream* s = nullptr;
  CUresult r = simgpu::driver::Resolve(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  r = ToResult(simgpu::CheckStreamWait(s));
  if (r != CUDA_SUCCESS) return r;
  return simgpu::StreamIdle(s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

// A host function runs in stream order on the stream's worker (it must not call CUDA, as NVIDIA documents); on a
// capturing stream it becomes a host node of the graph and runs at each launch.
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simgpu::Stream* s = nullptr;
  CUresult r = simgpu::driver::Resolve(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  return ToResult(simgpu::Enqueue(s, [fn, userData] { fn(userData); }));
}

// The special handles answer for the current context, as NVIDIA documents (CUDA_ERROR_INVALID_CONTEXT without
// one); a created stream for the context it was created in.
CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  simgpu::Stream* s = nullptr;
  CUresult r = simgpu::driver::Resolve(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = simgpu::driver::PrimaryContext(simgpu::StreamDevice(s));
  return CUDA_SUCCESS;
}

// simgpu has no green contexts: *pGreenCtx is always NULL and *pCtx the stream's context.
CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  if (pCtx == nullptr || pGreenCtx == nullptr) {
    CUresult r = Ready();
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
  }
  CUresult r = cuStreamGetCtx(hStream, pCtx);
  if (r == CUDA_SUCCESS) *pGreenCtx = nullptr;
  return r;
}

CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device) {
  simgpu::Stream* s = nullptr;
  CUresult r = simgpu::driver::Resolve(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = simgpu::StreamDevice(s);
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  simgpu::Stream* s = nullptr;
  CUresult r = simgpu::driver::Resolve(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  if ((Flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) != 0) return CUDA_ERROR_INVALID_VALUE;
  simgpu::Event* e = simgpu::ResolveEvent(hEvent);
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return ToResult(simgpu::StreamWaitEvent(s, e));
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return simgpu::driver::BeginCapture(hStream, mode);
}

// The CUDA 10.0 ABI had no mode; it captured as global mode does.
CUresult cuStreamBeginCapture(CUstream hStream) {
  return simgpu::driver::BeginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  simgpu::Stream* s = nullptr;
  CUresult r = simgpu::driver::Resolve(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simgpu::Graph* graph = nullptr;
  cudaError_t status = simgpu::EndCapture(s, &graph);
  if (status == cudaSuccess || status == cudaErrorStreamCaptureInvalidated ||
      status == cudaErrorStreamCaptureUnjoined) {
    *phGraph = reinterpret_cast<CUgraph>(graph);
  }
  return ToResult(status);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return simgpu::driver::CaptureStatus(hStream, captureStatus, nullptr, nullptr, nullptr, nullptr);
}

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out) {
  return simgpu::driver::CaptureStatus(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr);
}

CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                   CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                   size_t* numDependencies_out) {
  return simgpu::driver::CaptureStatus(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                                       numDependencies_out);
}

// CUDA 12.3's ABI, cuda.h 13's cuStreamGetCaptureInfo. simgpu's edges carry no data: edgeData_out gets an array
// of default (zero) edge data as long as the dependency set, valid until the thread's next call.
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                   CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                   const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  if (edgeData_out != nullptr && dependencies_out == nullptr) {
    CUresult r = Ready();
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
  }
  size_t n = 0;
  CUresult r = simgpu::driver::CaptureStatus(hStream, captureStatus_out, id_out, graph_out, dependencies_out, &n);
  if (r != CUDA_SUCCESS || *captureStatus_out != CU_STREAM_CAPTURE_STATUS_ACTIVE) return r;
  if (edgeData_out != nullptr) {
    thread_local std::vector<CUgraphEdgeData> edges;
    edges.assign(n, CUgraphEdgeData{});
    *edgeData_out = edges.empty() ? nullptr : edges.data();
  }
  if (numDependencies_out != nullptr) *numDependencies_out = n;
  return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  if (mode == nullptr || !simgpu::driver::ValidMode(*mode)) return CUDA_ERROR_INVALID_VALUE;
  auto runtime_mode = static_cast<cudaStreamCaptureMode>(*mode);
  simgpu::ExchangeCaptureMode(&runtime_mode);
  *mode = static_cast<CUstreamCaptureMode>(runtime_mode);
  return CUDA_SUCCESS;
}

}  // extern "C"
