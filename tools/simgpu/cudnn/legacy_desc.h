// Internal to libcudnn.so.9 (simgpu): the legacy tensor, filter and convolution descriptors.
//
// Storage follows what NVIDIA's library shows through its getters (conformance.h): each descriptor keeps fixed
// arrays (8 dimensions, 6 spatial parameters) that a setter overwrites only up to the dimensions it sets, so a
// getter asked for more entries than were set returns what earlier settings left there.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_LEGACY_DESC_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_LEGACY_DESC_H_

#include <cudnn.h>

#include <cstdint>

constexpr int kSimgpuCudnnMaxDims = CUDNN_DIM_MAX;            // 8
constexpr int kSimgpuCudnnMaxSpatial = CUDNN_DIM_MAX - 2;     // 6

struct cudnnTensorStruct {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int nb_dims = 0;  // 0 until set
  int dims[kSimgpuCudnnMaxDims] = {};
  int strides[kSimgpuCudnnMaxDims] = {};
};

struct cudnnFilterStruct {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;  // NCHW: k, c, spatial...; NHWC: k, spatial..., c (c fastest)
  int nb_dims = 0;
  int dims[kSimgpuCudnnMaxDims] = {};  // always in k, c, spatial order, whatever the format
};

struct cudnnConvolutionStruct {
  int array_length = 0;  // spatial dimensions
  int pads[kSimgpuCudnnMaxSpatial] = {};
  int strides[kSimgpuCudnnMaxSpatial] = {};
  int dilations[kSimgpuCudnnMaxSpatial] = {};
  cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int groups = 1;
  cudnnReorderType_t reorder = CUDNN_DEFAULT_REORDER;
};

namespace simgpu::cudnn {

// Data types a legacy tensor descriptor accepts (FLOAT .. BFLOAT16 without the vectorized INT8x4, UINT8x4,
// INT8x32, which simgpu does not support).
bool IsLegacyDataType(cudnnDataType_t type);

// The element strides of a filter in memory (NCHW or NHWC packing of its dims).
void FilterStrides(const cudnnFilterStruct& filter, int64_t strides[kSimgpuCudnnMaxDims]);

// Forward output dimensions of x convolved with w: n, k, then one per spatial dimension of x. CUDNN_STATUS_BAD_PARAM
// when the channels do not match (x's c != w's c * groups) or a spatial output would be empty.
cudnnStatus_t ForwardOutputDims(const cudnnConvolutionStruct& conv, const cudnnTensorStruct& x,
                                const cudnnFilterStruct& w, int out[kSimgpuCudnnMaxDims]);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_LEGACY_DESC_H_
