// The stand-in libcudnn.so.9 (status_standin.h): cudnnConvolutionForward, BackwardData and BackwardFilter and
// cudnnBackendExecute, cudnnBackendPopulateCudaGraph and cudnnBackendUpdateCudaGraph answer STANDIN_CUDNN_STATUS; handles, streams, the tensor, filter and convolution
// descriptors (which the shim reads with their getters) and backend descriptors are simgpu's, except a
// descriptor of type CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR (which no graph uses): its create, set, get, finalize and
// destroy answer STANDIN_CUDNN_STATUS too, so that each backend set-up entry point is driven through each status.
#include <cstdint>

#include "shim/testing/status_standin.h"

#define STANDIN_CUDNN_FORWARD(name, params, args)                                                                \
  extern "C" int name params {                                                                                  \
    static auto real = reinterpret_cast<int(*) params>(standin::Simgpu("libcudnn.so.9", "libcudnn.so.9", #name)); \
    return real args;                                                                                           \
  }

STANDIN_CUDNN_FORWARD(cudnnCreate, (void** handle), (handle))
STANDIN_CUDNN_FORWARD(cudnnDestroy, (void* handle), (handle))
STANDIN_CUDNN_FORWARD(cudnnSetStream, (void* handle, void* stream), (handle, stream))
STANDIN_CUDNN_FORWARD(cudnnGetStream, (void* handle, void** stream), (handle, stream))
STANDIN_CUDNN_FORWARD(cudnnCreateTensorDescriptor, (void** desc), (desc))
STANDIN_CUDNN_FORWARD(cudnnDestroyTensorDescriptor, (void* desc), (desc))
STANDIN_CUDNN_FORWARD(cudnnSetTensorNdDescriptor, (void* desc, int type, int nb, const int* dims, const int* strides),
                      (desc, type, nb, dims, strides))
STANDIN_CUDNN_FORWARD(cudnnGetTensorNdDescriptor,
                      (const void* desc, int requested, int* type, int* nb, int* dims, int* strides),
                      (desc, requested, type, nb, dims, strides))
STANDIN_CUDNN_FORWARD(cudnnCreateFilterDescriptor, (void** desc), (desc))
STANDIN_CUDNN_FORWARD(cudnnDestroyFilterDescriptor, (void* desc), (desc))
STANDIN_CUDNN_FORWARD(cudnnSetFilterNdDescriptor, (void* desc, int type, int format, int nb, const int* dims),
                      (desc, type, format, nb, dims))
STANDIN_CUDNN_FORWARD(cudnnGetFilterNdDescriptor,
                      (const void* desc, int requested, int* type, int* format, int* nb, int* dims),
                      (desc, requested, type, format, nb, dims))
STANDIN_CUDNN_FORWARD(cudnnCreateConvolutionDescriptor, (void** desc), (desc))
STANDIN_CUDNN_FORWARD(cudnnDestroyConvolutionDescriptor, (void* desc), (desc))
STANDIN_CUDNN_FORWARD(cudnnSetConvolutionNdDescriptor,
                      (void* desc, int len, const int* pad, const int* stride, const int* dilation, int mode, int type),
                      (desc, len, pad, stride, dilation, mode, type))
STANDIN_CUDNN_FORWARD(cudnnGetConvolutionNdDescriptor,
                      (const void* desc, int requested, int* len, int* pad, int* stride, int* dilation, int* mode,
                       int* type),
                      (desc, requested, len, pad, stride, dilation, mode, type))
STANDIN_CUDNN_FORWARD(cudnnGetConvolutionGroupCount, (const void* desc, int* groups), (desc, groups))
STANDIN_CUDNN_FORWARD(cudnnGetConvolutionMathType, (const void* desc, int* math), (desc, math))

#define STANDIN_CUDNN(name) STANDIN_ANSWER(name, "STANDIN_CUDNN_STATUS")
STANDIN_CUDNN(cudnnConvolutionForward)
STANDIN_CUDNN(cudnnConvolutionBackwardData)
STANDIN_CUDNN(cudnnConvolutionBackwardFilter)

// Backend descriptors: simgpu's, but for the knob-info stand-in descriptor.
namespace {
constexpr int kKnobInfoDescriptor = 8;  // CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR (cudnn_graph.h)
char g_knob;                            // the stand-in descriptor
// The stand-in descriptor, or none (its creation failed): answered with the status under test either way.
bool IsKnob(const void* desc) { return desc == &g_knob || desc == nullptr; }
int Answer() { return standin::StatusFromEnv("STANDIN_CUDNN_STATUS"); }
template <typename Fn>
Fn Real(const char* name) {
  return reinterpret_cast<Fn>(standin::Simgpu("libcudnn.so.9", "libcudnn.so.9", name));
}
}  // namespace

extern "C" int cudnnBackendCreateDescriptor(int type, void** desc) {
  if (type == kKnobInfoDescriptor) {
    const int status = Answer();
    if (status == 0) *desc = &g_knob;
    return status;
  }
  static auto real = Real<int (*)(int, void**)>("cudnnBackendCreateDescriptor");
  return real(type, desc);
}
extern "C" int cudnnBackendDestroyDescriptor(void* desc) {
  if (IsKnob(desc)) return Answer();
  static auto real = Real<int (*)(void*)>("cudnnBackendDestroyDescriptor");
  return real(desc);
}
extern "C" int cudnnBackendFinalize(void* desc) {
  if (IsKnob(desc)) return Answer();
  static auto real = Real<int (*)(void*)>("cudnnBackendFinalize");
  return real(desc);
}
extern "C" int cudnnBackendSetAttribute(void* desc, int name, int type, int64_t count, const void* values) {
  if (IsKnob(desc)) return Answer();
  static auto real = Real<int (*)(void*, int, int, int64_t, const void*)>("cudnnBackendSetAttribute");
  return real(desc, name, type, count, values);
}
extern "C" int cudnnBackendGetAttribute(const void* desc, int name, int type, int64_t requested, int64_t* count,
                                        void* values) {
  if (IsKnob(desc)) return Answer();
  static auto real = Real<int (*)(const void*, int, int, int64_t, int64_t*, void*)>("cudnnBackendGetAttribute");
  return real(desc, name, type, requested, count, values);
}
STANDIN_CUDNN(cudnnBackendExecute)
STANDIN_CUDNN(cudnnBackendPopulateCudaGraph)
STANDIN_CUDNN(cudnnBackendUpdateCudaGraph)
