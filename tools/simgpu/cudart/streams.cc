// Streams and events: handle validation and CUDA's documented error codes in front of the simgpu core. Status
// codes like cudaErrorNotReady are recorded as the last error too, as NVIDIA's runtime does (callers such as
// PyTorch clear it with cudaGetLastError after a query). Capture refusals come from the core (simgpu.h, "stream
// capture"); the capture and graph entry points are in capture.cc.
#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudart/cudart_internal.h"

using simgpu::cudart::Report;

namespace simgpu::cudart {
namespace {

cudaError_t CreateStream(cudaStream_t* stream, unsigned flags, int priority) {
  if (stream == nullptr) return Report(cudaErrorInvalidValue);
  if ((flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) != 0) return Report(cudaErrorInvalidValue);
  if (ValidCurrentDevice() < 0) return Report(cudaErrorInvalidDevice);
  int least = 0, greatest = 0;
  cudaDeviceGetStreamPriorityRange(&least, &greatest);
  // Out-of-range priorities are clamped, as cudaStreamCreateWithPriority documents.
  if (priority > least) priority = least;
  if (priority < greatest) priority = greatest;
  *stream = reinterpret_cast<cudaStream_t>(simgpu::CreateStream(flags, priority));
  return cudaSuccess;
}

}  // namespace
}  // namespace simgpu::cudart

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return simgpu::cudart::CreateStream(pStream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return simgpu::cudart::CreateStream(pStream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  return simgpu::cudart::CreateStream(pStream, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    return Report(cudaErrorInvalidResourceHandle);
  }
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  simgpu::DestroyStream(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t refused = simgpu::CheckStreamWait(s);
  if (refused != cudaSuccess) return Report(refused);
  simgpu::SynchronizeStream(s);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t refused = simgpu::CheckStreamWait(s);
  if (refused != cudaSuccess) return Report(refused);
  return simgpu::StreamIdle(s) ? cudaSuccess : Report(cudaErrorNotReady);
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  if (flags == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(hStream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  *flags = simgpu::StreamFlags(s);
  return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  if (priority == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(hStream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  *priority = simgpu::StreamPriority(s);
  return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int* device) {
  if (device == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(hStream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  *device = simgpu::StreamDevice(s);
  return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long* streamId) {
  if (streamId == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(hStream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  *streamId = simgpu::StreamId(s);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if ((flags & ~static_cast<unsigned>(cudaEventWaitExternal)) != 0) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  simgpu::Event* e = simgpu::ResolveEvent(event);
  if (s == nullptr || e == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t status = simgpu::StreamWaitEvent(s, e);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (fn == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t status = simgpu::Enqueue(s, [fn, userData] { fn(userData); });
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  constexpr unsigned kKnown = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (event == nullptr || (flags & ~kKnown) != 0) return Report(cudaErrorInvalidValue);
  // An interprocess event must not record timing, as cudaEventCreateWithFlags documents.
  if ((flags & cudaEventInterprocess) != 0 && (flags & cudaEventDisableTiming) == 0) {
    return Report(cudaErrorInvalidValue);
  }
  *event = reinterpret_cast<cudaEvent_t>(simgpu::CreateEvent(flags));
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  simgpu::Event* e = simgpu::ResolveEvent(event);
  if (e == nullptr) return Report(event == nullptr ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle);
  simgpu::DestroyEvent(e);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  simgpu::Event* e = simgpu::ResolveEvent(event);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (e == nullptr || s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t status = simgpu::RecordEvent(e, s);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  simgpu::Event* e = simgpu::ResolveEvent(event);
  if (e == nullptr) return Report(cudaErrorInvalidResourceHandle);
  if (simgpu::EventInCapture(e)) return Report(cudaErrorCapturedEvent);
  simgpu::SynchronizeEvent(e);
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  simgpu::Event* e = simgpu::ResolveEvent(event);
  if (e == nullptr) return Report(cudaErrorInvalidResourceHandle);
  if (simgpu::EventInCapture(e)) return Report(cudaErrorCapturedEvent);
  return simgpu::EventDone(e) ? cudaSuccess : Report(cudaErrorNotReady);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Event* a = simgpu::ResolveEvent(start);
  simgpu::Event* b = simgpu::ResolveEvent(end);
  if (a == nullptr || b == nullptr) return Report(cudaErrorInvalidResourceHandle);
  if (((simgpu::EventFlags(a) | simgpu::EventFlags(b)) & cudaEventDisableTiming) != 0) {
    return Report(cudaErrorInvalidResourceHandle);
  }
  if (!simgpu::EventRecorded(a) || !simgpu::EventRecorded(b)) return Report(cudaErrorInvalidResourceHandle);
  if (!simgpu::EventDone(a) || !simgpu::EventDone(b)) return Report(cudaErrorNotReady);
  *ms = simgpu::ElapsedMs(a, b);
  return cudaSuccess;
}

}  // extern "C"
