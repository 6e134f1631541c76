// Events through the driver API, on the core's events (simgpu.h): a CUevent is the simgpu::Event* the runtime
// hands out as a cudaEvent_t, so either API may record, wait on, query or destroy an event the other created.
// Semantics and refusals follow cudart/streams.cc: an event never recorded is complete (cuEventQuery and
// cuEventSynchronize succeed at once, as NVIDIA documents); one whose latest record was made in a capture still
// in progress gives CUDA_ERROR_CAPTURED_EVENT. Creating an event needs a current context; the other calls take
// the event's.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/driver/driver_internal.h"

namespace simgpu::driver {
namespace {

static_assert(static_cast<int>(CU_EVENT_BLOCKING_SYNC) == cudaEventBlockingSync);
static_assert(static_cast<int>(CU_EVENT_DISABLE_TIMING) == cudaEventDisableTiming);
static_assert(static_cast<int>(CU_EVENT_INTERPROCESS) == cudaEventInterprocess);

// Initialized, and the event live (CUDA_ERROR_INVALID_HANDLE for a destroyed or foreign handle).
CUresult ResolveDriverEvent(CUevent handle, Event** event) {
  CUresult r = Ready();
  if (r != CUDA_SUCCESS) return r;
  *event = ResolveEvent(handle);
  return *event != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult ElapsedTime(float* ms, CUevent start, CUevent end) {
  Event* a = nullptr;
  Event* b = nullptr;
  CUresult r = ResolveDriverEvent(start, &a);
  if (r == CUDA_SUCCESS) r = ResolveDriverEvent(end, &b);
  if (r != CUDA_SUCCESS) return r;
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (((EventFlags(a) | EventFlags(b)) & cudaEventDisableTiming) != 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!EventRecorded(a) || !EventRecorded(b)) return CUDA_ERROR_INVALID_HANDLE;
  if (!EventDone(a) || !EventDone(b)) return CUDA_ERROR_NOT_READY;
  *ms = ElapsedMs(a, b);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simgpu::driver

using simgpu::driver::ResolveDriverEvent;

extern "C" {

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  CUresult r = simgpu::driver::ReadyContext();
  if (r != CUDA_SUCCESS) return r;
  constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (phEvent == nullptr || (Flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  // An interprocess event must not record timing, as cuEventCreate documents.
  if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *phEvent = reinterpret_cast<CUevent>(simgpu::CreateEvent(Flags));
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  simgpu::Event* e = nullptr;
  CUresult r = ResolveDriverEvent(hEvent, &e);
  if (r != CUDA_SUCCESS) return r;
  simgpu::Stream* s = nullptr;
  r = simgpu::driver::ResolveDriverStream(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  return simgpu::driver::ToResult(simgpu::RecordEvent(e, s));
}

CUresult cuEventQuery(CUevent hEvent) {
  simgpu::Event* e = nullptr;
  CUresult r = ResolveDriverEvent(hEvent, &e);
  if (r != CUDA_SUCCESS) return r;
  if (simgpu::EventInCapture(e)) return CUDA_ERROR_CAPTURED_EVENT;
  return simgpu::EventDone(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  simgpu::Event* e = nullptr;
  CUresult r = ResolveDriverEvent(hEvent, &e);
  if (r != CUDA_SUCCESS) return r;
  if (simgpu::EventInCapture(e)) return CUDA_ERROR_CAPTURED_EVENT;
  simgpu::SynchronizeEvent(e);
  return CUDA_SUCCESS;
}

// A record still pending completes all the same (the core shares its marker with the stream).
CUresult cuEventDestroy_v2(CUevent hEvent) {
  simgpu::Event* e = nullptr;
  CUresult r = ResolveDriverEvent(hEvent, &e);
  if (r != CUDA_SUCCESS) return r;
  simgpu::DestroyEvent(e);
  return CUDA_SUCCESS;
}

// The CUDA 2.0 ABI: the same call.
CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }

// cuEventElapsedTime_v2 (CUDA 12.8, cuda.h 13's cuEventElapsedTime) and the CUDA 2.0 ABI measure alike here:
// CUDA_ERROR_INVALID_HANDLE for an event created with CU_EVENT_DISABLE_TIMING or never recorded,
// CUDA_ERROR_NOT_READY while either record is pending.
CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return simgpu::driver::ElapsedTime(pMilliseconds, hStart, hEnd);
}

CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return simgpu::driver::ElapsedTime(pMilliseconds, hStart, hEnd);
}

}  // extern "C"
