// The stand-in libcudnn.so.9 (status_standin.h): cudnnConvolutionForward, BackwardData and BackwardFilter answer
// STANDIN_CUDNN_STATUS; handles, streams and the tensor, filter and convolution descriptors (which the shim reads
// with their getters) are simgpu's.
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
