// cuDNN legacy convolution interceptors. This file includes cudnn.h so that an interceptor whose signature drifts
// from the vendor's declaration does not compile.
//
// A convolution carries its problem in descriptors the application may change or destroy as soon as the call
// returns: the record is filled at the call through cuDNN's own getters (cudnnGetTensorNdDescriptor,
// cudnnGetFilterNdDescriptor, cudnnGetConvolutionNdDescriptor, group count, math type), host-side, and stored in
// forward terms (format.h: ConvRecord): backward data reads dy and w and writes dx, backward filter reads x and dy
// and writes dw. When a getter fails the record says so (kConvDescUnreadable) and nothing is captured.
//
// Operands, on the handle's stream (cudnnGetStream): the two inputs and, when beta != 0, the output before the
// call; the output after it. A strided tensor is copied as the span of memory its elements occupy (format.h,
// kConvX). Only calls whose descriptors agree (same rank, channels, the output shape the convolution implies) are
// captured: cuDNN rejects the others and the record alone says what was asked.
#include <cudnn.h>

#include <cstring>

#include "shim/capture_engine.h"
#include "shim/interception.h"
#include "shim/runtime.h"
#include "shim/tensor_pack.h"

#define TTRACE_LIBRARY kCudnn
#define TTRACE_UNRESOLVED_STATUS CUDNN_STATUS_NOT_INITIALIZED

namespace ttrace::shim {
namespace {

using format::ConvRecord;
using format::DType;
using format::TensorSlot;

LazySymbol g_get_stream(format::Library::kCudnn, "cudnnGetStream");
LazySymbol g_get_tensor(format::Library::kCudnn, "cudnnGetTensorNdDescriptor");
LazySymbol g_get_filter(format::Library::kCudnn, "cudnnGetFilterNdDescriptor");
LazySymbol g_get_conv(format::Library::kCudnn, "cudnnGetConvolutionNdDescriptor");
LazySymbol g_get_groups(format::Library::kCudnn, "cudnnGetConvolutionGroupCount");
LazySymbol g_get_math(format::Library::kCudnn, "cudnnGetConvolutionMathType");

template <typename Fn>
Fn* Getter(LazySymbol& s) {
  return reinterpret_cast<Fn*>(s.Get());
}

bool ReadTensor(cudnnTensorDescriptor_t desc, int32_t* type, int* rank, int64_t dims[], int64_t strides[]) {
  auto get = Getter<decltype(::cudnnGetTensorNdDescriptor)>(g_get_tensor);
  int d[format::kConvMaxDims], s[format::kConvMaxDims];
  cudnnDataType_t t;
  if (get == nullptr || desc == nullptr || get(desc, format::kConvMaxDims, &t, rank, d, s) != CUDNN_STATUS_SUCCESS ||
      *rank < 3 || *rank > format::kConvMaxDims)
    return false;
  *type = t;
  for (int i = 0; i < *rank; ++i) dims[i] = d[i], strides[i] = s[i];
  return true;
}

// The filter's strides follow from its format: packed NCHW (K, C, spatial...) or NHWC (K, spatial..., C).
bool ReadFilter(cudnnFilterDescriptor_t desc, ConvRecord* r, int* rank) {
  auto get = Getter<decltype(::cudnnGetFilterNdDescriptor)>(g_get_filter);
  int d[format::kConvMaxDims];
  cudnnDataType_t t;
  cudnnTensorFormat_t f;
  if (get == nullptr || desc == nullptr || get(desc, format::kConvMaxDims, &t, &f, rank, d) != CUDNN_STATUS_SUCCESS ||
      *rank < 3 || *rank > format::kConvMaxDims)
    return false;
  r->w_type = t;
  r->w_format = f;
  for (int i = 0; i < *rank; ++i) r->w_dims[i] = d[i];
  int64_t s = 1;
  if (f == CUDNN_TENSOR_NHWC) {
    r->w_strides[1] = s;
    s *= d[1];
    for (int i = *rank - 1; i >= 2; --i) r->w_strides[i] = s, s *= d[i];
    r->w_strides[0] = s;
  } else {
    for (int i = *rank - 1; i >= 0; --i) r->w_strides[i] = s, s *= d[i];
  }
  return f == CUDNN_TENSOR_NCHW || f == CUDNN_TENSOR_NHWC;
}

bool ReadConv(cudnnConvolutionDescriptor_t desc, int spatial, ConvRecord* r) {
  auto get = Getter<decltype(::cudnnGetConvolutionNdDescriptor)>(g_get_conv);
  int n = 0, pad[format::kConvMaxSpatial], stride[format::kConvMaxSpatial], dil[format::kConvMaxSpatial];
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  if (get == nullptr || desc == nullptr ||
      get(desc, format::kConvMaxSpatial, &n, pad, stride, dil, &mode, &compute) != CUDNN_STATUS_SUCCESS ||
      n != spatial)
    return false;
  for (int i = 0; i < n; ++i) r->pad[i] = pad[i], r->stride[i] = stride[i], r->dilation[i] = dil[i];
  r->mode = static_cast<uint8_t>(mode);
  r->compute_type = compute;
  int groups = 1;
  auto get_groups = Getter<decltype(::cudnnGetConvolutionGroupCount)>(g_get_groups);
  if (get_groups == nullptr || get_groups(desc, &groups) != CUDNN_STATUS_SUCCESS) return false;
  r->groups = groups;
  cudnnMathType_t math;
  auto get_math = Getter<decltype(::cudnnGetConvolutionMathType)>(g_get_math);
  r->math_type = get_math != nullptr && get_math(desc, &math) == CUDNN_STATUS_SUCCESS ? math : -1;
  return true;
}

struct ConvDescs {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
};

// Fills the descriptor fields of `r` (see the file comment).
void ReadDescriptors(const ConvDescs& d, ConvRecord* r) {
  int xr = 0, yr = 0, wr = 0;
  bool ok = ReadTensor(d.x, &r->x_type, &xr, r->x_dims, r->x_strides) &&
            ReadTensor(d.y, &r->y_type, &yr, r->y_dims, r->y_strides) && ReadFilter(d.w, r, &wr) && xr == yr &&
            xr == wr && ReadConv(d.conv, xr - 2, r);
  r->nb_dims = static_cast<uint8_t>(ok ? xr : 0);
  if (!ok) r->flags |= format::kConvDescUnreadable;
}

// The output shape the convolution implies, and channel counts that agree (cuDNN's own checks).
bool Consistent(const ConvRecord& r) {
  if (r.flags & format::kConvDescUnreadable) return false;
  const int64_t g = r.groups;
  if (g < 1 || r.x_dims[0] != r.y_dims[0] || r.w_dims[0] != r.y_dims[1] || r.x_dims[1] != r.w_dims[1] * g ||
      r.w_dims[0] % g != 0)
    return false;
  for (int i = 0; i < r.nb_dims; ++i) {
    if (r.x_dims[i] < 1 || r.y_dims[i] < 1 || r.w_dims[i] < 1 || r.x_strides[i] < 0 || r.y_strides[i] < 0)
      return false;
  }
  for (int d = 0; d + 2 < r.nb_dims; ++d) {
    if (r.stride[d] < 1 || r.dilation[d] < 1 || r.pad[d] < 0) return false;
    const int64_t span = (r.w_dims[2 + d] - 1) * r.dilation[d] + 1;
    const int64_t out = (r.x_dims[2 + d] + 2 * int64_t{r.pad[d]} - span) / r.stride[d] + 1;
    if (out != r.y_dims[2 + d]) return false;
  }
  return true;
}

// A strided tensor as the span of memory it occupies (format.h: kConvX).
TensorSpec SpanSpec(TensorSlot slot, const void* ptr, int32_t cudnn_type, int rank, const int64_t dims[],
                    const int64_t strides[]) {
  TensorSpec t;
  t.slot = slot;
  t.ptr = ptr;
  int64_t span = 1;
  for (int i = 0; i < rank; ++i) span += (dims[i] - 1) * strides[i];
  t.rows = t.ld = span;
  t.cols = 1;
  t.dtype = DTypeFromCudnn(cudnn_type);
  return t;
}

enum class Role { kX, kW, kY };
TensorSpec RoleSpec(const ConvRecord& r, Role role, TensorSlot slot, const void* ptr) {
  switch (role) {
    case Role::kX: return SpanSpec(slot, ptr, r.x_type, r.nb_dims, r.x_dims, r.x_strides);
    case Role::kW: return SpanSpec(slot, ptr, r.w_type, r.nb_dims, r.w_dims, r.w_strides);
    case Role::kY: break;
  }
  return SpanSpec(slot, ptr, r.y_type, r.nb_dims, r.y_dims, r.y_strides);
}

void Capture(TensorGroup* group, const TensorSpec& t) {
  if (t.dtype == DType::kInvalid) {
    group->engine()->Drop(group->seq(), format::DropReason::kUnsupported, "cuDNN tensor type has no ttrace dtype");
    return;
  }
  group->Add(t);
}

// One call: which roles it reads and which it writes, with their device pointers.
struct ConvCall {
  ConvRecord rec;
  Role in0, in1, out;
  const void* in0_ptr;
  const void* in1_ptr;
  void* out_ptr;
  const void* alpha;
  const void* beta;
};

template <typename Real>
cudnnStatus_t TraceConv(ConvCall* c, cudnnHandle_t handle, const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  ConvRecord& r = c->rec;
  cudaStream_t stream = nullptr;
  auto get_stream = Getter<decltype(::cudnnGetStream)>(g_get_stream);
  if (get_stream == nullptr || get_stream(handle, &stream) != CUDNN_STATUS_SUCCESS) stream = nullptr;
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/true);
  r.seq = slot.seq;
  r.t_ns = MonotonicNs();
  r.handle = reinterpret_cast<uint64_t>(handle);
  r.stream = reinterpret_cast<uint64_t>(stream);
  if (c->alpha != nullptr && c->beta != nullptr && !(r.flags & format::kConvDescUnreadable)) {
    if (r.x_type == CUDNN_DATA_DOUBLE) {
      memcpy(&r.alpha, c->alpha, sizeof r.alpha);
      memcpy(&r.beta, c->beta, sizeof r.beta);
    } else {
      float a, b;
      memcpy(&a, c->alpha, sizeof a);
      memcpy(&b, c->beta, sizeof b);
      r.alpha = a;
      r.beta = b;
    }
  } else {
    r.flags |= format::kConvScalarsUnknown;
  }
  const bool capture = engine->capturing_tensors() && Consistent(r) && !(r.flags & format::kConvScalarsUnknown) &&
                       c->in0_ptr != nullptr && c->in1_ptr != nullptr && c->out_ptr != nullptr;
  if (capture) {  // the inputs: one group (one event)
    TensorGroup g(engine, r.seq, stream);
    auto slot_of = [](Role role) {
      return role == Role::kX ? TensorSlot::kConvX : role == Role::kW ? TensorSlot::kConvW : TensorSlot::kConvY;
    };
    Capture(&g, RoleSpec(r, c->in0, slot_of(c->in0), c->in0_ptr));
    Capture(&g, RoleSpec(r, c->in1, slot_of(c->in1), c->in1_ptr));
    if (r.beta != 0) Capture(&g, RoleSpec(r, c->out, TensorSlot::kCIn, c->out_ptr));
  }
  const cudnnStatus_t status = real();
  if (capture && status == CUDNN_STATUS_SUCCESS) {
    TensorGroup g(engine, r.seq, stream);
    Capture(&g, RoleSpec(r, c->out, TensorSlot::kCOut, c->out_ptr));
  }
  r.status = status;
  engine->Publish(slot, format::RecordType::kConv, r);
  return status;
}

ConvCall NewCall(format::ApiId api, int algo, const void* alpha, const void* beta, const ConvDescs& d) {
  ConvCall c;
  memset(&c, 0, sizeof c);
  c.rec.api = static_cast<uint16_t>(api);
  c.rec.algo = algo;
  c.alpha = alpha;
  c.beta = beta;
  ReadDescriptors(d, &c.rec);
  return c;
}

}  // namespace
}  // namespace ttrace::shim

using ttrace::format::ApiId;
using ttrace::shim::ConvCall;
using ttrace::shim::ConvDescs;
using ttrace::shim::NewCall;
using Role = ttrace::shim::Role;

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnConvolutionForward,
                   (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
                    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
                    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
                    const cudnnTensorDescriptor_t yDesc, void* y),
                   (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, yDesc,
                    y)) {
  ConvCall c = NewCall(ApiId::kCudnnConvolutionForward, algo, alpha, beta, ConvDescs{xDesc, yDesc, wDesc, convDesc});
  c.rec.x_ptr = reinterpret_cast<uint64_t>(x);
  c.rec.w_ptr = reinterpret_cast<uint64_t>(w);
  c.rec.y_ptr = reinterpret_cast<uint64_t>(y);
  c.in0 = Role::kX, c.in0_ptr = x, c.in1 = Role::kW, c.in1_ptr = w, c.out = Role::kY, c.out_ptr = y;
  return ttrace::shim::TraceConv(&c, handle, [&] {
    return REAL(cudnnConvolutionForward)(handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace,
                                         workSpaceSizeInBytes, beta, yDesc, y);
  });
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnConvolutionBackwardData,
                   (cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc, const void* w,
                    const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnConvolutionDescriptor_t convDesc,
                    cudnnConvolutionBwdDataAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes,
                    const void* beta, const cudnnTensorDescriptor_t dxDesc, void* dx),
                   (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dxDesc,
                    dx)) {
  ConvCall c =
      NewCall(ApiId::kCudnnConvolutionBackwardData, algo, alpha, beta, ConvDescs{dxDesc, dyDesc, wDesc, convDesc});
  c.rec.x_ptr = reinterpret_cast<uint64_t>(dx);
  c.rec.w_ptr = reinterpret_cast<uint64_t>(w);
  c.rec.y_ptr = reinterpret_cast<uint64_t>(dy);
  c.in0 = Role::kW, c.in0_ptr = w, c.in1 = Role::kY, c.in1_ptr = dy, c.out = Role::kX, c.out_ptr = dx;
  return ttrace::shim::TraceConv(&c, handle, [&] {
    return REAL(cudnnConvolutionBackwardData)(handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace,
                                              workSpaceSizeInBytes, beta, dxDesc, dx);
  });
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnConvolutionBackwardFilter,
                   (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
                    const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnConvolutionDescriptor_t convDesc,
                    cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes,
                    const void* beta, const cudnnFilterDescriptor_t dwDesc, void* dw),
                   (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dwDesc,
                    dw)) {
  ConvCall c =
      NewCall(ApiId::kCudnnConvolutionBackwardFilter, algo, alpha, beta, ConvDescs{xDesc, dyDesc, dwDesc, convDesc});
  c.rec.x_ptr = reinterpret_cast<uint64_t>(x);
  c.rec.w_ptr = reinterpret_cast<uint64_t>(dw);
  c.rec.y_ptr = reinterpret_cast<uint64_t>(dy);
  c.in0 = Role::kX, c.in0_ptr = x, c.in1 = Role::kY, c.in1_ptr = dy, c.out = Role::kW, c.out_ptr = dw;
  return ttrace::shim::TraceConv(&c, handle, [&] {
    return REAL(cudnnConvolutionBackwardFilter)(handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace,
                                                workSpaceSizeInBytes, beta, dwDesc, dw);
  });
}
