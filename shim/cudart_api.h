// The CUDA runtime functions the capture engine calls, as a table of function pointers.
//
// libttrace.so has no DT_NEEDED on any CUDA library: it uses the application's own cudart (so its copies run in
// the application's contexts and streams), found at the first capture with dlvsym(RTLD_NEXT, ..., "libcudart.so.13")
// or dlopen("libcudart.so.13", RTLD_NOLOAD). Without it (cudart linked statically into the application, or not
// loaded), capture degrades to call records only.
//
// Tests build their own table (fakes that copy host memory) and hand it to CaptureEngine.
#ifndef TTRACE_SHIM_CUDART_API_H_
#define TTRACE_SHIM_CUDART_API_H_

#include <cuda_runtime_api.h>

#include <string>

namespace ttrace::shim {

struct CudartApi {
  // Required for tensor capture. cudart_api.cc checks each type against the header's declaration.
  cudaError_t (*MemcpyAsync)(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream);
  cudaError_t (*HostAlloc)(void** ptr, size_t size, unsigned int flags);
  cudaError_t (*FreeHost)(void* ptr);
  cudaError_t (*EventCreateWithFlags)(cudaEvent_t* event, unsigned int flags);
  cudaError_t (*EventRecord)(cudaEvent_t event, cudaStream_t stream);
  cudaError_t (*EventQuery)(cudaEvent_t event);
  cudaError_t (*EventDestroy)(cudaEvent_t event);
  cudaError_t (*GetLastError)();
  cudaError_t (*PeekAtLastError)();
  // Optional (nullptr when absent): graph-capture detection, the stream's device (events and copies are issued
  // with it current), per-device event pooling, messages, the calling thread's capture mode (the shim's calls run
  // relaxed so that they never invalidate a global-mode graph capture the application has open).
  cudaError_t (*StreamIsCapturing)(cudaStream_t stream, cudaStreamCaptureStatus* status);
  cudaError_t (*StreamGetDevice)(cudaStream_t stream, int* device);
  cudaError_t (*GetDevice)(int* device);
  cudaError_t (*SetDevice)(int device);
  const char* (*GetErrorName)(cudaError_t error);
  cudaError_t (*ThreadExchangeStreamCaptureMode)(cudaStreamCaptureMode* mode);
  // Pitched copies of thin slices of wide matrices (tensor_pack.h); without it the whole region is copied.
  cudaError_t (*Memcpy2DAsync)(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                               size_t height, cudaMemcpyKind kind, cudaStream_t stream);
};

// The application's cudart, resolved on the first call (thread-safe, cached, including a failure).
// nullptr when cudart is not loaded or lacks a required function; `missing` (may be null) then names what.
const CudartApi* ApplicationCudart(const char** missing);

// Puts the calling thread in cudaStreamCaptureModeRelaxed for its lifetime and restores the previous mode: in
// global mode (CUDA's default) an allocation or wait of ours, on any thread, while the application captures a
// graph would fail and invalidate the application's capture. No-op without ThreadExchangeStreamCaptureMode.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(const CudartApi* cudart)
      : exchange_(cudart != nullptr ? cudart->ThreadExchangeStreamCaptureMode : nullptr) {
    if (exchange_ != nullptr && exchange_(&previous_) != cudaSuccess) exchange_ = nullptr;
  }
  ~RelaxedCaptureMode() {
    if (exchange_ != nullptr) exchange_(&previous_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaError_t (*exchange_)(cudaStreamCaptureMode* mode);
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};

// "cudaErrorInvalidValue" (or "cudaError 1" without cudaGetErrorName), for messages.
std::string CudaErrorText(const CudartApi* cudart, cudaError_t error);

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_CUDART_API_H_
