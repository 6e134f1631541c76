// Legacy convolution descriptors and forward output dimensions. NVIDIA's setters validate the mode and compute
// type first, then write the spatial parameters one dimension at a time, checking each after writing it; a
// rejected dimension leaves the earlier ones (and itself) written. simgpu does the same, so that the getters
// agree with NVIDIA's after any sequence of calls (conformance.h).
#include <cudnn.h>

#include <algorithm>

#include "tools/simgpu/cudnn/handle.h"
#include "tools/simgpu/cudnn/legacy_desc.h"

namespace simgpu::cudnn {
namespace {

bool ValidComputeType(cudnnDataType_t type) {
  return type == CUDNN_DATA_FLOAT || type == CUDNN_DATA_DOUBLE || type == CUDNN_DATA_HALF ||
         type == CUDNN_DATA_INT32;
}

cudnnStatus_t SetConvolution(cudnnConvolutionStruct* conv, int length, const int* pads, const int* strides,
                             const int* dilations, cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  if (conv == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "convDesc is null");
  if (length < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative arrayLength");
  if (length > kSimgpuCudnnMaxSpatial) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "arrayLength above CUDNN_DIM_MAX - 2");
  if (length > 0 && (pads == nullptr || strides == nullptr || dilations == nullptr)) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null parameter array");
  }
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "unknown convolution mode");
  }
  if (!ValidComputeType(compute)) return Fail(CUDNN_STATUS_BAD_PARAM, "unsupported compute type");
  conv->mode = mode;
  conv->compute = compute;
  conv->array_length = length;
  for (int i = 0; i < length; ++i) {
    conv->pads[i] = pads[i];
    conv->strides[i] = strides[i];
    conv->dilations[i] = dilations[i];
    if (pads[i] < 0 || strides[i] <= 0 || dilations[i] <= 0) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "padding must be >= 0, stride and dilation > 0");
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t ForwardOutputDims(const cudnnConvolutionStruct& conv, const cudnnTensorStruct& x,
                                const cudnnFilterStruct& w, int out[kSimgpuCudnnMaxDims]) {
  if (x.nb_dims < 3 || w.nb_dims != x.nb_dims) return Fail(CUDNN_STATUS_BAD_PARAM, "tensor and filter ranks differ");
  if (x.dims[1] != w.dims[1] * conv.groups) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "input channels != filter channels * group count");
  }
  out[0] = x.dims[0];
  out[1] = w.dims[0];
  for (int i = 2; i < x.nb_dims; ++i) {
    const int s = i - 2;
    if (s >= conv.array_length || conv.strides[s] <= 0) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "convolution has fewer spatial dimensions than the tensor");
    }
    const long long span = static_cast<long long>(w.dims[i] - 1) * conv.dilations[s] + 1;
    const long long room = static_cast<long long>(x.dims[i]) + 2LL * conv.pads[s] - span;
    if (room < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "filter larger than the padded input");
    out[i] = static_cast<int>(room / conv.strides[s] + 1);
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace simgpu::cudnn

using simgpu::cudnn::Fail;

extern "C" {

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "convDesc is null");
  *desc = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  const int pads[2] = {pad_h, pad_w}, strides[2] = {u, v}, dilations[2] = {dilation_h, dilation_w};
  return simgpu::cudnn::SetConvolution(desc, 2, pads, strides, dilations, mode, compute);
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t desc, int length, const int pads[],
                                              const int strides[], const int dilations[],
                                              cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  return simgpu::cudnn::SetConvolution(desc, length, pads, strides, dilations, mode, compute);
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t desc, int* pad_h, int* pad_w,
                                              int* u, int* v, int* dilation_h, int* dilation_w,
                                              cudnnConvolutionMode_t* mode, cudnnDataType_t* compute) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "convDesc is null");
  if (!pad_h || !pad_w || !u || !v || !dilation_h || !dilation_w || !mode || !compute) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null output pointer");
  }
  *pad_h = desc->pads[0];
  *pad_w = desc->pads[1];
  *u = desc->strides[0];
  *v = desc->strides[1];
  *dilation_h = desc->dilations[0];
  *dilation_w = desc->dilations[1];
  *mode = desc->mode;
  *compute = desc->compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t desc, int requested, int* length,
                                              int pads[], int strides[], int dilations[],
                                              cudnnConvolutionMode_t* mode, cudnnDataType_t* compute) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "convDesc is null");
  if (requested < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative arrayLengthRequested");
  if (requested > kSimgpuCudnnMaxSpatial) {
    return Fail(CUDNN_STATUS_NOT_SUPPORTED, "arrayLengthRequested above CUDNN_DIM_MAX - 2");
  }
  if (!length || !mode || !compute) return Fail(CUDNN_STATUS_BAD_PARAM, "null output pointer");
  if (requested > 0 && (!pads || !strides || !dilations)) return Fail(CUDNN_STATUS_BAD_PARAM, "null output array");
  *length = desc->array_length;
  *mode = desc->mode;
  *compute = desc->compute;
  std::copy(desc->pads, desc->pads + requested, pads);
  std::copy(desc->strides, desc->strides + requested, strides);
  std::copy(desc->dilations, desc->dilations + requested, dilations);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "convDesc is null");
  if (math < CUDNN_DEFAULT_MATH || math > CUDNN_FMA_MATH) return Fail(CUDNN_STATUS_BAD_PARAM, "unknown math type");
  desc->math = math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t* math) {
  if (desc == nullptr || math == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null argument");
  *math = desc->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "convDesc is null");
  if (groups < 1) return Fail(CUDNN_STATUS_BAD_PARAM, "group count must be positive");
  desc->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int* groups) {
  if (desc == nullptr || groups == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null argument");
  *groups = desc->groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t desc, cudnnReorderType_t reorder) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "convDesc is null");
  if (reorder != CUDNN_DEFAULT_REORDER && reorder != CUDNN_NO_REORDER) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "unknown reorder type");
  }
  desc->reorder = reorder;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t desc, cudnnReorderType_t* reorder) {
  if (desc == nullptr || reorder == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null argument");
  *reorder = desc->reorder;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int* n, int* c, int* h,
                                                    int* wo) {
  if (conv == nullptr || x == nullptr || w == nullptr || !n || !c || !h || !wo) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null argument");
  }
  *n = *c = *h = *wo = 0;
  int out[kSimgpuCudnnMaxDims] = {};
  cudnnStatus_t status = simgpu::cudnn::ForwardOutputDims(*conv, *x, *w, out);
  *n = out[0];
  *c = out[1];
  *h = out[2];
  *wo = out[3];
  return status;
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int nb_dims, int out_dims[]) {
  if (conv == nullptr || x == nullptr || w == nullptr || out_dims == nullptr) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null argument");
  }
  if (nb_dims < 1 || nb_dims > x->nb_dims) return Fail(CUDNN_STATUS_BAD_PARAM, "nbDims above the tensor's rank");
  if (x->nb_dims < 3 || w->nb_dims != x->nb_dims || x->dims[1] != w->dims[1] * conv->groups) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "input channels != filter channels * group count");
  }
  int out[kSimgpuCudnnMaxDims] = {};
  cudnnStatus_t status = simgpu::cudnn::ForwardOutputDims(*conv, *x, *w, out);
  // NVIDIA's writes n and k, then each spatial size it could compute, stopping at the first empty one.
  int written = 2;
  if (status == CUDNN_STATUS_SUCCESS) {
    written = nb_dims;
  } else {
    while (written < nb_dims && out[written] > 0) ++written;
  }
  std::copy(out, out + std::min(written, nb_dims), out_dims);
  return status;
}

}  // extern "C"
