// Legacy tensor and filter descriptors. Validation order and results follow NVIDIA's library as the conformance
// transcript records them (conformance.h): dimensions must be positive, strides non-zero (negative strides are
// accepted), and a tensor whose extent exceeds 2^31 - 1 elements is CUDNN_STATUS_NOT_SUPPORTED.
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "tools/simgpu/cudnn/data_type.h"
#include "tools/simgpu/cudnn/handle.h"
#include "tools/simgpu/cudnn/legacy_desc.h"

namespace simgpu::cudnn {
namespace {

constexpr int64_t kMaxExtent = 2147483647;

// Elements spanned by a strided tensor: 1 + sum of (dim - 1) * |stride|.
int64_t Extent(int nb, const int* dims, const int* strides) {
  int64_t extent = 1;
  for (int i = 0; i < nb; ++i) extent += static_cast<int64_t>(dims[i] - 1) * std::llabs(strides[i]);
  return extent;
}

// Packed strides of dims in NCHW (row-major) or NHWC (channel dimension 1 fastest) order.
void PackedStrides(cudnnTensorFormat_t format, int nb, const int* dims, int* strides) {
  if (format == CUDNN_TENSOR_NCHW || nb < 3) {
    int64_t s = 1;
    for (int i = nb - 1; i >= 0; --i) {
      strides[i] = static_cast<int>(s);
      s *= dims[i];
    }
    return;
  }
  int64_t s = dims[1];
  strides[1] = 1;
  for (int i = nb - 1; i >= 2; --i) {
    strides[i] = static_cast<int>(s);
    s *= dims[i];
  }
  strides[0] = static_cast<int>(s);
}

bool ValidFormat(cudnnTensorFormat_t format) {
  return format == CUDNN_TENSOR_NCHW || format == CUDNN_TENSOR_NHWC;
}

cudnnStatus_t SetTensor(cudnnTensorStruct* t, cudnnDataType_t dtype, int nb, const int* dims, const int* strides) {
  if (!IsLegacyDataType(dtype)) return Fail(CUDNN_STATUS_BAD_PARAM, "unsupported data type");
  for (int i = 0; i < nb; ++i) {
    if (dims[i] <= 0) return Fail(CUDNN_STATUS_BAD_PARAM, "dimensions must be positive");
    if (strides[i] == 0) return Fail(CUDNN_STATUS_BAD_PARAM, "strides must be non-zero");
  }
  if (Extent(nb, dims, strides) > kMaxExtent) {
    return Fail(CUDNN_STATUS_NOT_SUPPORTED, "tensor spans more than 2^31 - 1 elements");
  }
  t->dtype = dtype;
  t->nb_dims = nb;
  std::copy(dims, dims + nb, t->dims);
  std::copy(strides, strides + nb, t->strides);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t SetTensorFormat(cudnnTensorStruct* t, cudnnTensorFormat_t format, cudnnDataType_t dtype, int nb,
                              const int* dims) {
  if (!ValidFormat(format)) return Fail(CUDNN_STATUS_BAD_PARAM, "unsupported tensor format");
  for (int i = 0; i < nb; ++i) {
    if (dims[i] <= 0) return Fail(CUDNN_STATUS_BAD_PARAM, "dimensions must be positive");
  }
  int strides[kSimgpuCudnnMaxDims];
  PackedStrides(format, nb, dims, strides);
  return SetTensor(t, dtype, nb, dims, strides);
}

}  // namespace

bool IsLegacyDataType(cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BFLOAT16:
      return true;
    default:
      return false;
  }
}

void FilterStrides(const cudnnFilterStruct& filter, int64_t strides[kSimgpuCudnnMaxDims]) {
  int packed[kSimgpuCudnnMaxDims];
  PackedStrides(filter.format, filter.nb_dims, filter.dims, packed);
  for (int i = 0; i < filter.nb_dims; ++i) strides[i] = packed[i];
}

}  // namespace simgpu::cudnn

using simgpu::cudnn::Fail;

extern "C" {

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "tensorDesc is null");
  *desc = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                         cudnnDataType_t dtype, int n, int c, int h, int w) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "tensorDesc is null");
  const int dims[4] = {n, c, h, w};
  return simgpu::cudnn::SetTensorFormat(desc, format, dtype, 4, dims);
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc, cudnnDataType_t dtype, int n, int c,
                                           int h, int w, int n_stride, int c_stride, int h_stride, int w_stride) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "tensorDesc is null");
  const int dims[4] = {n, c, h, w}, strides[4] = {n_stride, c_stride, h_stride, w_stride};
  return simgpu::cudnn::SetTensor(desc, dtype, 4, dims, strides);
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc, cudnnDataType_t dtype, int nb_dims,
                                         const int dims[], const int strides[]) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "tensorDesc is null");
  if (nb_dims > kSimgpuCudnnMaxDims) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "more than CUDNN_DIM_MAX dimensions");
  if (nb_dims < 2) return Fail(CUDNN_STATUS_BAD_PARAM, "fewer than 2 dimensions");
  if (dims == nullptr || strides == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "dimA or strideA is null");
  return simgpu::cudnn::SetTensor(desc, dtype, nb_dims, dims, strides);
}

cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                           cudnnDataType_t dtype, int nb_dims, const int dims[]) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "tensorDesc is null");
  if (nb_dims > kSimgpuCudnnMaxDims) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "more than CUDNN_DIM_MAX dimensions");
  if (nb_dims < 2) return Fail(CUDNN_STATUS_BAD_PARAM, "fewer than 2 dimensions");
  if (dims == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "dimA is null");
  return simgpu::cudnn::SetTensorFormat(desc, format, dtype, nb_dims, dims);
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t desc, cudnnDataType_t* dtype, int* n,
                                         int* c, int* h, int* w, int* n_stride, int* c_stride, int* h_stride,
                                         int* w_stride) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "tensorDesc is null");
  if (!dtype || !n || !c || !h || !w || !n_stride || !c_stride || !h_stride || !w_stride) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null output pointer");
  }
  *dtype = desc->dtype;
  *n = desc->dims[0];
  *c = desc->dims[1];
  *h = desc->dims[2];
  *w = desc->dims[3];
  *n_stride = desc->strides[0];
  *c_stride = desc->strides[1];
  *h_stride = desc->strides[2];
  *w_stride = desc->strides[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t desc, int nb_dims_requested,
                                         cudnnDataType_t* dtype, int* nb_dims, int dims[], int strides[]) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "tensorDesc is null");
  if (dtype == nullptr || nb_dims == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null output pointer");
  const int n = std::min(nb_dims_requested, desc->nb_dims);
  if (n > 0 && (dims == nullptr || strides == nullptr)) return Fail(CUDNN_STATUS_BAD_PARAM, "null output array");
  *dtype = desc->dtype;
  *nb_dims = desc->nb_dims;
  for (int i = 0; i < n; ++i) {
    dims[i] = desc->dims[i];
    strides[i] = desc->strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t desc, size_t* size) {
  if (desc == nullptr || size == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null argument");
  *size = desc->nb_dims == 0 ? 0
                             : static_cast<size_t>(simgpu::cudnn::Extent(desc->nb_dims, desc->dims, desc->strides)) *
                                   simgpu::cudnn::ElementBytes(desc->dtype);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "filterDesc is null");
  *desc = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t dtype,
                                         cudnnTensorFormat_t format, int nb_dims, const int dims[]) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "filterDesc is null");
  if (nb_dims > kSimgpuCudnnMaxDims) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "more than CUDNN_DIM_MAX dimensions");
  if (nb_dims < 3) return Fail(CUDNN_STATUS_BAD_PARAM, "fewer than 3 dimensions");
  if (dims == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "filterDimA is null");
  if (!simgpu::cudnn::IsLegacyDataType(dtype) || dtype == CUDNN_DATA_INT32) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "unsupported filter data type");
  }
  if (!simgpu::cudnn::ValidFormat(format)) return Fail(CUDNN_STATUS_BAD_PARAM, "unsupported filter format");
  for (int i = 0; i < nb_dims; ++i) {
    if (dims[i] <= 0) return Fail(CUDNN_STATUS_BAD_PARAM, "dimensions must be positive");
  }
  desc->dtype = dtype;
  desc->format = format;
  desc->nb_dims = nb_dims;
  std::copy(dims, dims + nb_dims, desc->dims);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t dtype,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  const int dims[4] = {k, c, h, w};
  return cudnnSetFilterNdDescriptor(desc, dtype, format, 4, dims);
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t desc, cudnnDataType_t* dtype,
                                         cudnnTensorFormat_t* format, int* k, int* c, int* h, int* w) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "filterDesc is null");
  if (!dtype || !format || !k || !c || !h || !w) return Fail(CUDNN_STATUS_BAD_PARAM, "null output pointer");
  *dtype = desc->dtype;
  *format = desc->format;
  *k = desc->dims[0];
  *c = desc->dims[1];
  *h = desc->dims[2];
  *w = desc->dims[3];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t desc, int nb_dims_requested,
                                         cudnnDataType_t* dtype, cudnnTensorFormat_t* format, int* nb_dims,
                                         int dims[]) {
  if (desc == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "filterDesc is null");
  if (nb_dims_requested <= 0) return Fail(CUDNN_STATUS_BAD_PARAM, "nbDimsRequested must be positive");
  if (nb_dims_requested > kSimgpuCudnnMaxDims) {
    return Fail(CUDNN_STATUS_NOT_SUPPORTED, "nbDimsRequested above CUDNN_DIM_MAX");
  }
  if (!dtype || !format || !nb_dims || !dims) return Fail(CUDNN_STATUS_BAD_PARAM, "null output pointer");
  *dtype = desc->dtype;
  *format = desc->format;
  *nb_dims = desc->nb_dims;
  std::copy(desc->dims, desc->dims + nb_dims_requested, dims);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t desc, size_t* size) {
  if (desc == nullptr || size == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null argument");
  size_t elems = desc->nb_dims == 0 ? 0 : 1;
  for (int i = 0; i < desc->nb_dims; ++i) elems *= static_cast<size_t>(desc->dims[i]);
  *size = elems * simgpu::cudnn::ElementBytes(desc->dtype);
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
