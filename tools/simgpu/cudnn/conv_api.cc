// Legacy convolution entry points: cudnnConvolutionForward, cudnnConvolutionBackwardData,
// cudnnConvolutionBackwardFilter, their algorithm queries and workspace sizes.
//
// Checks follow cuDNN's documentation of these functions: CUDNN_STATUS_BAD_PARAM for a null or dead handle, null
// descriptors, data pointers or scaling factors, ranks that differ or do not match the convolution's spatial
// dimensions, channels that do not match (x's C != w's C * groups, K not a multiple of the group count), data
// types that differ, or an output (input, filter) shape other than the one the convolution implies;
// CUDNN_STATUS_NOT_SUPPORTED for ranks other than 4 and 5, negative strides, data/compute type configurations
// outside FLOAT, PSEUDO_HALF, PSEUDO_BFLOAT16, TRUE_HALF and DOUBLE, or an unknown algorithm;
// CUDNN_STATUS_EXECUTION_FAILED when the handle's stream is not a live stream. The arithmetic is the same for
// every algorithm (conv_compute.h): simgpu's algorithms differ only in name, need no workspace (size 0) and are
// all deterministic; the queries list every algorithm with status SUCCESS.
//
// A call that passes its checks takes the next conv fault-site number on the host, in call order; the work runs
// on the handle's stream, alpha and beta are read from the host at the call (float, or double for FP64 data).
#include <cudnn.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudnn/conv.h"
#include "tools/simgpu/cudnn/conv_compute.h"
#include "tools/simgpu/cudnn/data_type.h"
#include "tools/simgpu/cudnn/handle.h"
#include "tools/simgpu/cudnn/legacy_desc.h"

namespace simgpu::cudnn {

bool ConvPrecision(cudnnDataType_t data, cudnnDataType_t compute, AccumPrecision* precision) {
  if (data == CUDNN_DATA_FLOAT && compute == CUDNN_DATA_FLOAT) {
    *precision = AccumPrecision::kFp32;
  } else if (data == CUDNN_DATA_HALF && compute == CUDNN_DATA_FLOAT) {
    *precision = AccumPrecision::kFp32;
  } else if (data == CUDNN_DATA_BFLOAT16 && compute == CUDNN_DATA_FLOAT) {
    *precision = AccumPrecision::kFp32;
  } else if (data == CUDNN_DATA_HALF && compute == CUDNN_DATA_HALF) {
    *precision = AccumPrecision::kFp16;
  } else if (data == CUDNN_DATA_DOUBLE && compute == CUDNN_DATA_DOUBLE) {
    *precision = AccumPrecision::kFp64;
  } else {
    return false;
  }
  return true;
}

void ApplyConvFaults(const std::vector<Fault>& faults, const ConvProblem& p) {
  const TensorView& out = ConvOutput(p);
  int64_t dims[CUDNN_DIM_MAX];
  const int rank = ConvOutputShape(p, dims);
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) count *= static_cast<uint64_t>(dims[i]);
  cudaDataType type = CUDA_R_32F;
  ToCudaDataType(out.dtype, &type);
  for (const Fault& f : faults) {
    CheckFaultElement(f, count);
    ApplyElementFault(f, ElementInMemoryOrder(out, rank, dims, static_cast<uint64_t>(f.elem)), type);
  }
}

namespace {

// The arguments of one legacy convolution call, in forward terms (x input, w filter, y output).
struct LegacyConv {
  cudnnHandle_t handle;
  const cudnnConvolutionStruct* conv;
  const cudnnTensorStruct* x;
  const cudnnFilterStruct* w;
  const cudnnTensorStruct* y;
};

// Checks the descriptors (see the file comment) and fills p's geometry, views (data pointers unset) and
// precision.
cudnnStatus_t CheckDescriptors(const LegacyConv& a, ConvProblem* p) {
  if (a.conv == nullptr || a.x == nullptr || a.w == nullptr || a.y == nullptr) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null descriptor");
  }
  const cudnnTensorStruct& x = *a.x;
  const cudnnFilterStruct& w = *a.w;
  const cudnnTensorStruct& y = *a.y;
  const cudnnConvolutionStruct& conv = *a.conv;
  if (x.nb_dims < 3 || y.nb_dims != x.nb_dims || w.nb_dims != x.nb_dims) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "tensor, filter and output ranks differ");
  }
  if (conv.array_length + 2 != x.nb_dims) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "rank != convolution spatial dimensions + 2");
  }
  if (x.dims[1] != w.dims[1] * conv.groups || w.dims[0] % conv.groups != 0) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "channels do not match the filter and group count");
  }
  if (x.dtype != w.dtype || x.dtype != y.dtype) return Fail(CUDNN_STATUS_BAD_PARAM, "data types differ");
  int out[kSimgpuCudnnMaxDims];
  cudnnStatus_t status = ForwardOutputDims(conv, x, w, out);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  if (!std::equal(out, out + x.nb_dims, y.dims)) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "output dimensions differ from the convolution's");
  }
  if (x.nb_dims != 4 && x.nb_dims != 5) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "only 4-d and 5-d tensors");
  for (int i = 0; i < x.nb_dims; ++i) {
    if (x.strides[i] < 0 || y.strides[i] < 0) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "negative strides");
  }
  if (!ConvPrecision(x.dtype, conv.compute, &p->precision)) {
    return Fail(CUDNN_STATUS_NOT_SUPPORTED, "unsupported data and compute type configuration");
  }
  ConvGeometry& g = p->geometry;
  g.spatial = x.nb_dims - 2;
  g.n = x.dims[0];
  g.c = x.dims[1];
  g.k = w.dims[0];
  g.groups = conv.groups;
  for (int d = 0; d < g.spatial; ++d) {
    g.in[d] = x.dims[2 + d];
    g.filter[d] = w.dims[2 + d];
    g.out[d] = y.dims[2 + d];
    g.pad[d] = conv.pads[d];
    g.stride[d] = conv.strides[d];
    g.dilation[d] = conv.dilations[d];
  }
  g.flip = conv.mode == CUDNN_CONVOLUTION;
  p->x.dtype = x.dtype;
  p->w.dtype = w.dtype;
  p->y.dtype = y.dtype;
  int64_t wstrides[kSimgpuCudnnMaxDims];
  FilterStrides(w, wstrides);
  for (int i = 0; i < x.nb_dims; ++i) {
    p->x.strides[i] = x.strides[i];
    p->w.strides[i] = wstrides[i];
    p->y.strides[i] = y.strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CheckCall(const LegacyConv& a, ConvProblem* p) {
  if (!IsLiveHandle(a.handle)) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live cudnnHandle_t");
  return CheckDescriptors(a, p);
}

int AlgoCount(ConvKind kind) {
  switch (kind) {
    case ConvKind::kForward: return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    case ConvKind::kBackwardData: return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    case ConvKind::kBackwardFilter: return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  }
  return 0;
}

bool ValidAlgo(ConvKind kind, int algo) {
  if (algo < 0 || algo >= AlgoCount(kind)) return false;
  // NVIDIA's header marks this one "not implemented".
  return !(kind == ConvKind::kBackwardFilter && algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD);
}

cudnnStatus_t Convolve(const LegacyConv& a, ConvKind kind, int algo, const void* alpha, const void* beta,
                       const void* x, const void* w, const void* y) {
  ConvProblem p;
  p.kind = kind;
  cudnnStatus_t status = CheckCall(a, &p);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  if (x == nullptr || w == nullptr || y == nullptr || alpha == nullptr || beta == nullptr) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null data pointer or scaling factor");
  }
  if (!ValidAlgo(kind, algo)) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "unknown algorithm");
  Stream* stream = HandleStream(a.handle);
  if (stream == nullptr) return Fail(CUDNN_STATUS_EXECUTION_FAILED, "the handle's stream is not a live stream");
  p.x.data = const_cast<void*>(x);
  p.w.data = const_cast<void*>(w);
  p.y.data = const_cast<void*>(y);
  double alpha_v, beta_v;
  if (p.precision == AccumPrecision::kFp64) {
    std::memcpy(&alpha_v, alpha, sizeof alpha_v);
    std::memcpy(&beta_v, beta, sizeof beta_v);
  } else {
    float af, bf;
    std::memcpy(&af, alpha, sizeof af);
    std::memcpy(&bf, beta, sizeof bf);
    alpha_v = af;
    beta_v = bf;
  }
  p.call = NextCallIndex(FaultSite::kConv);
  std::vector<Fault> faults = MatchingFaults(FaultSite::kConv, p.call);
  Enqueue(stream, [p, alpha_v, beta_v, faults = std::move(faults)] {
    RunConvolution(p, alpha_v, beta_v);
    if (!faults.empty()) ApplyConvFaults(faults, p);
  });
  return CUDNN_STATUS_SUCCESS;
}

template <typename Perf, typename Algo>
cudnnStatus_t ListAlgorithms(const LegacyConv& a, ConvKind kind, int requested, int* returned, Perf* perf) {
  ConvProblem p;
  p.kind = kind;
  if (returned == nullptr || perf == nullptr || requested <= 0) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "null result pointer or requestedAlgoCount <= 0");
  }
  cudnnStatus_t status = CheckCall(a, &p);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  int n = 0;
  for (int algo = 0; algo < AlgoCount(kind) && n < requested; ++algo) {
    if (!ValidAlgo(kind, algo)) continue;
    Perf entry{};
    entry.algo = static_cast<Algo>(algo);
    entry.status = CUDNN_STATUS_SUCCESS;
    entry.time = 0.0f;
    entry.memory = 0;
    entry.determinism = CUDNN_DETERMINISTIC;
    entry.mathType = a.conv->math;
    perf[n++] = entry;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t WorkspaceSize(const LegacyConv& a, ConvKind kind, int algo, size_t* size) {
  ConvProblem p;
  p.kind = kind;
  if (size == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "sizeInBytes is null");
  cudnnStatus_t status = CheckCall(a, &p);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  if (!ValidAlgo(kind, algo)) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "unknown algorithm");
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t MaxCount(cudnnHandle_t handle, ConvKind kind, int* count) {
  if (!IsLiveHandle(handle) || count == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "null or dead argument");
  *count = AlgoCount(kind);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace simgpu::cudnn

using simgpu::cudnn::ConvKind;
using simgpu::cudnn::LegacyConv;

extern "C" {

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                      const void* x, const cudnnFilterDescriptor_t wDesc, const void* w,
                                      const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                      void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
                                      const cudnnTensorDescriptor_t yDesc, void* y) {
  return simgpu::cudnn::Convolve({handle, convDesc, xDesc, wDesc, yDesc}, ConvKind::kForward, algo, alpha, beta, x,
                                 w, y);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void* w,
                                           const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workSpace,
                                           size_t workSpaceSizeInBytes, const void* beta,
                                           const cudnnTensorDescriptor_t dxDesc, void* dx) {
  return simgpu::cudnn::Convolve({handle, convDesc, dxDesc, wDesc, dyDesc}, ConvKind::kBackwardData, algo, alpha,
                                 beta, dx, w, dy);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void* x,
                                             const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                             const cudnnConvolutionDescriptor_t convDesc,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace,
                                             size_t workSpaceSizeInBytes, const void* beta,
                                             const cudnnFilterDescriptor_t dwDesc, void* dw) {
  return simgpu::cudnn::Convolve({handle, convDesc, xDesc, dwDesc, dyDesc}, ConvKind::kBackwardFilter, algo, alpha,
                                 beta, x, dw, dy);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  return simgpu::cudnn::MaxCount(handle, ConvKind::kForward, count);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  return simgpu::cudnn::MaxCount(handle, ConvKind::kBackwardData, count);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  return simgpu::cudnn::MaxCount(handle, ConvKind::kBackwardFilter, count);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
                                                     const cudnnFilterDescriptor_t filterDesc,
                                                     const cudnnConvolutionDescriptor_t convDesc,
                                                     const cudnnTensorDescriptor_t destDesc,
                                                     const int requestedAlgoCount, int* returnedAlgoCount,
                                                     cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  return simgpu::cudnn::ListAlgorithms<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      {handle, convDesc, srcDesc, filterDesc, destDesc}, ConvKind::kForward, requestedAlgoCount, returnedAlgoCount,
      perfResults);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                   const cudnnFilterDescriptor_t wDesc,
                                                   const cudnnConvolutionDescriptor_t convDesc,
                                                   const cudnnTensorDescriptor_t yDesc,
                                                   const int requestedAlgoCount, int* returnedAlgoCount,
                                                   cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  return cudnnGetConvolutionForwardAlgorithm_v7(handle, xDesc, wDesc, convDesc, yDesc, requestedAlgoCount,
                                                returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnFilterDescriptor_t wDesc,
    const void* w, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc, void* y,
    const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults,
    void* workSpace, size_t workSpaceSizeInBytes) {
  if (x == nullptr || w == nullptr || y == nullptr) {
    return simgpu::cudnn::Fail(CUDNN_STATUS_BAD_PARAM, "null data pointer");
  }
  return cudnnGetConvolutionForwardAlgorithm_v7(handle, xDesc, wDesc, convDesc, yDesc, requestedAlgoCount,
                                                returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle,
                                                          const cudnnFilterDescriptor_t filterDesc,
                                                          const cudnnTensorDescriptor_t diffDesc,
                                                          const cudnnConvolutionDescriptor_t convDesc,
                                                          const cudnnTensorDescriptor_t gradDesc,
                                                          const int requestedAlgoCount, int* returnedAlgoCount,
                                                          cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  return simgpu::cudnn::ListAlgorithms<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      {handle, convDesc, gradDesc, filterDesc, diffDesc}, ConvKind::kBackwardData, requestedAlgoCount,
      returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
                                                        const cudnnTensorDescriptor_t dyDesc,
                                                        const cudnnConvolutionDescriptor_t convDesc,
                                                        const cudnnTensorDescriptor_t dxDesc,
                                                        const int requestedAlgoCount, int* returnedAlgoCount,
                                                        cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, wDesc, dyDesc, convDesc, dxDesc, requestedAlgoCount,
                                                     returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnTensorDescriptor_t dyDesc,
    const void* dy, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void* dx,
    const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults,
    void* workSpace, size_t workSpaceSizeInBytes) {
  if (w == nullptr || dy == nullptr || dx == nullptr) {
    return simgpu::cudnn::Fail(CUDNN_STATUS_BAD_PARAM, "null data pointer");
  }
  return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, wDesc, dyDesc, convDesc, dxDesc, requestedAlgoCount,
                                                     returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle,
                                                            const cudnnTensorDescriptor_t srcDesc,
                                                            const cudnnTensorDescriptor_t diffDesc,
                                                            const cudnnConvolutionDescriptor_t convDesc,
                                                            const cudnnFilterDescriptor_t gradDesc,
                                                            const int requestedAlgoCount, int* returnedAlgoCount,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t* perfResults) {
  return simgpu::cudnn::ListAlgorithms<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      {handle, convDesc, srcDesc, gradDesc, diffDesc}, ConvKind::kBackwardFilter, requestedAlgoCount,
      returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                          const cudnnTensorDescriptor_t dyDesc,
                                                          const cudnnConvolutionDescriptor_t convDesc,
                                                          const cudnnFilterDescriptor_t dwDesc,
                                                          const int requestedAlgoCount, int* returnedAlgoCount,
                                                          cudnnConvolutionBwdFilterAlgoPerf_t* perfResults) {
  return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, xDesc, dyDesc, convDesc, dwDesc, requestedAlgoCount,
                                                       returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t dyDesc,
    const void* y, const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void* dw,
    const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults,
    void* workSpace, size_t workSpaceSizeInBytes) {
  if (x == nullptr || y == nullptr || dw == nullptr) {
    return simgpu::cudnn::Fail(CUDNN_STATUS_BAD_PARAM, "null data pointer");
  }
  return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, xDesc, dyDesc, convDesc, dwDesc, requestedAlgoCount,
                                                       returnedAlgoCount, perfResults);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
                                                      const cudnnFilterDescriptor_t wDesc,
                                                      const cudnnConvolutionDescriptor_t convDesc,
                                                      const cudnnTensorDescriptor_t yDesc,
                                                      cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  return simgpu::cudnn::WorkspaceSize({handle, convDesc, xDesc, wDesc, yDesc}, ConvKind::kForward, algo,
                                      sizeInBytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
                                                           const cudnnTensorDescriptor_t dyDesc,
                                                           const cudnnConvolutionDescriptor_t convDesc,
                                                           const cudnnTensorDescriptor_t dxDesc,
                                                           cudnnConvolutionBwdDataAlgo_t algo,
                                                           size_t* sizeInBytes) {
  return simgpu::cudnn::WorkspaceSize({handle, convDesc, dxDesc, wDesc, dyDesc}, ConvKind::kBackwardData, algo,
                                      sizeInBytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle,
                                                             const cudnnTensorDescriptor_t xDesc,
                                                             const cudnnTensorDescriptor_t dyDesc,
                                                             const cudnnConvolutionDescriptor_t convDesc,
                                                             const cudnnFilterDescriptor_t gradDesc,
                                                             cudnnConvolutionBwdFilterAlgo_t algo,
                                                             size_t* sizeInBytes) {
  return simgpu::cudnn::WorkspaceSize({handle, convDesc, xDesc, gradDesc, dyDesc}, ConvKind::kBackwardFilter, algo,
                                      sizeInBytes);
}

}  // extern "C"
