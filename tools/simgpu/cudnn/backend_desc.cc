// Backend descriptor basics (backend_desc.h) and the descriptors operations copy: tensor, convolution,
// pointwise, reduction and matmul. Finalization checks are NVIDIA's as the conformance transcript records them:
// a tensor needs a data type, dimensions, strides (as many as dimensions, at most 8), a unique id and a byte
// alignment (a power of two); dimensions and strides may be 0 but not negative; a by-value tensor is a scalar
// (every dimension 1) and not virtual.
#include "tools/simgpu/cudnn/backend_desc.h"

#include <mutex>
#include <unordered_set>

namespace simgpu::cudnn {
namespace {

std::mutex registry_mu;
std::unordered_set<Descriptor*>& Registry() {
  static auto* live = new std::unordered_set<Descriptor*>;
  return *live;
}

bool KnownPointwiseMode(cudnnPointwiseMode_t mode) {
  const int m = static_cast<int>(mode);
  return (m >= 0 && m <= 23) || (m >= 100 && m <= 107) || (m >= 200 && m <= 207) || (m >= 300 && m <= 305) ||
         (m >= 400 && m <= 402) || m == 501 || m == 601;
}

}  // namespace

cudnnStatus_t Descriptor::Set(cudnnBackendAttributeName_t name, const AttrIn& in) {
  if (finalized_) return Fail(CUDNN_STATUS_BAD_PARAM, "descriptor already finalized");
  return DoSet(name, in);
}

cudnnStatus_t Descriptor::Get(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  if (!finalized_) return Fail(CUDNN_STATUS_NOT_INITIALIZED, "descriptor not finalized");
  return DoGet(name, out);
}

cudnnStatus_t Descriptor::Finalize() {
  if (finalized_) return Fail(CUDNN_STATUS_BAD_PARAM, "descriptor already finalized");
  cudnnStatus_t status = DoFinalize();
  if (status == CUDNN_STATUS_SUCCESS) finalized_ = true;
  return status;
}

void RegisterDescriptor(Descriptor* d) {
  std::lock_guard<std::mutex> lock(registry_mu);
  Registry().insert(d);
}

bool UnregisterDescriptor(Descriptor* d) {
  std::lock_guard<std::mutex> lock(registry_mu);
  return Registry().erase(d) != 0;
}

Descriptor* LiveDescriptor(cudnnBackendDescriptor_t d) {
  std::lock_guard<std::mutex> lock(registry_mu);
  auto* p = static_cast<Descriptor*>(d);
  return Registry().count(p) != 0 ? p : nullptr;
}

cudnnStatus_t ReadScale(const AttrIn& in, double* out) {
  if (in.count != 1 || in.values == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "expected one element");
  if (in.type == CUDNN_TYPE_FLOAT) {
    float f;
    std::memcpy(&f, in.values, sizeof f);
    *out = f;
  } else if (in.type == CUDNN_TYPE_DOUBLE) {
    std::memcpy(out, in.values, sizeof *out);
  } else {
    return Fail(CUDNN_STATUS_BAD_PARAM, "scaling factors are FLOAT or DOUBLE");
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t ReadAnyDescriptor(const AttrIn& in, Descriptor** out) {
  if (in.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong attribute type");
  }
  if (in.count != 1 || in.values == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "expected one descriptor");
  cudnnBackendDescriptor_t d;
  std::memcpy(&d, in.values, sizeof d);
  Descriptor* live = LiveDescriptor(d);
  if (live == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live backend descriptor");
  *out = live;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t ReadDescriptor(const AttrIn& in, cudnnBackendDescriptorType_t want, Descriptor** out) {
  Descriptor* live = nullptr;
  cudnnStatus_t st = ReadAnyDescriptor(in, &live);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  if (live->type() != want) return Fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, "wrong descriptor type");
  *out = live;
  return CUDNN_STATUS_SUCCESS;
}

// ---- tensor ----
cudnnStatus_t TensorDescriptor::DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) {
  cudnnStatus_t st;
  switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE:
      st = ReadScalar(in, CUDNN_TYPE_DATA_TYPE, &spec_.dtype);
      has_dtype_ = has_dtype_ || st == CUDNN_STATUS_SUCCESS;
      return st;
    case CUDNN_ATTR_TENSOR_DIMENSIONS:
      return ReadArray(in, CUDNN_TYPE_INT64, &spec_.dims);
    case CUDNN_ATTR_TENSOR_STRIDES:
      return ReadArray(in, CUDNN_TYPE_INT64, &spec_.strides);
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
      st = ReadScalar(in, CUDNN_TYPE_INT64, &spec_.uid);
      has_uid_ = has_uid_ || st == CUDNN_STATUS_SUCCESS;
      return st;
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
      st = ReadScalar(in, CUDNN_TYPE_INT64, &spec_.alignment);
      has_alignment_ = has_alignment_ || st == CUDNN_STATUS_SUCCESS;
      return st;
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
      return ReadScalar(in, CUDNN_TYPE_BOOLEAN, &spec_.is_virtual);
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
      return ReadScalar(in, CUDNN_TYPE_BOOLEAN, &spec_.by_value);
    case CUDNN_ATTR_TENSOR_VECTOR_COUNT:
    case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION: {
      int64_t v = 0;
      st = ReadScalar(in, CUDNN_TYPE_INT64, &v);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      const bool plain = name == CUDNN_ATTR_TENSOR_VECTOR_COUNT ? v == 1 : v == -1;
      return plain ? CUDNN_STATUS_SUCCESS : Fail(CUDNN_STATUS_NOT_SUPPORTED, "vectorized tensors");
    }
    case CUDNN_ATTR_TENSOR_REORDERING_MODE: {
      cudnnBackendTensorReordering_t mode = CUDNN_TENSOR_REORDERING_NONE;
      st = ReadScalar(in, CUDNN_TYPE_TENSOR_REORDERING_MODE, &mode);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      return mode == CUDNN_TENSOR_REORDERING_NONE ? CUDNN_STATUS_SUCCESS
                                                  : Fail(CUDNN_STATUS_NOT_SUPPORTED, "reordered tensors");
    }
    case CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC: {
      Descriptor* d = nullptr;
      st = ReadAnyDescriptor(in, &d);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      if (d->type() != CUDNN_BACKEND_TENSOR_DESCRIPTOR) {
        return Fail(CUDNN_STATUS_BAD_PARAM, "a ragged offset descriptor is a tensor descriptor");
      }
      ragged_unfinalized_ = !d->finalized();
      spec_.ragged = std::make_shared<const TensorSpec>(static_cast<TensorDescriptor*>(d)->spec());
      return CUDNN_STATUS_SUCCESS;
    }
    default:
      return Fail(CUDNN_STATUS_BAD_PARAM, "not a tensor attribute");
  }
}

void TensorDescriptor::Assign(const TensorSpec& spec) {
  spec_ = spec;
  has_dtype_ = has_uid_ = has_alignment_ = true;
  ragged_unfinalized_ = false;
  MarkFinalized();
}

cudnnStatus_t TensorDescriptor::DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE: return WriteScalar(out, CUDNN_TYPE_DATA_TYPE, spec_.dtype);
    case CUDNN_ATTR_TENSOR_DIMENSIONS: return WriteArray(out, CUDNN_TYPE_INT64, spec_.dims);
    case CUDNN_ATTR_TENSOR_STRIDES: return WriteArray(out, CUDNN_TYPE_INT64, spec_.strides);
    case CUDNN_ATTR_TENSOR_UNIQUE_ID: return WriteScalar(out, CUDNN_TYPE_INT64, spec_.uid);
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL: return WriteScalar(out, CUDNN_TYPE_BOOLEAN, spec_.is_virtual);
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE: return WriteScalar(out, CUDNN_TYPE_BOOLEAN, spec_.by_value);
    case CUDNN_ATTR_TENSOR_VECTOR_COUNT: return WriteScalar(out, CUDNN_TYPE_INT64, int64_t{1});
    case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION: return WriteScalar(out, CUDNN_TYPE_INT64, int64_t{-1});
    case CUDNN_ATTR_TENSOR_REORDERING_MODE:
      return WriteScalar(out, CUDNN_TYPE_TENSOR_REORDERING_MODE, CUDNN_TENSOR_REORDERING_NONE);
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
      return Fail(CUDNN_STATUS_NOT_SUPPORTED, "the byte alignment cannot be read back");
    case CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC: {
      if (out.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong attribute type");
      }
      if (out.requested == 0 || out.values == nullptr) {
        if (out.count != nullptr) *out.count = 1;
        return CUDNN_STATUS_SUCCESS;
      }
      if (spec_.ragged == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "the tensor has no ragged offset descriptor");
      auto* target = LiveDescriptor(static_cast<cudnnBackendDescriptor_t*>(out.values)[0]);
      if (target == nullptr || target->type() != CUDNN_BACKEND_TENSOR_DESCRIPTOR) {
        return Fail(CUDNN_STATUS_BAD_PARAM, "arrayOfElements must hold a tensor descriptor");
      }
      static_cast<TensorDescriptor*>(target)->Assign(*spec_.ragged);
      if (out.count != nullptr) *out.count = 1;
      return CUDNN_STATUS_SUCCESS;
    }
    default:
      return Fail(CUDNN_STATUS_BAD_PARAM, "not a tensor attribute");
  }
}

cudnnStatus_t TensorDescriptor::DoFinalize() {
  if (!has_dtype_ || spec_.dims.empty() || spec_.strides.empty() || !has_uid_ || !has_alignment_) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "data type, dimensions, strides, unique id and alignment are required");
  }
  if (spec_.dims.size() != spec_.strides.size() || spec_.dims.size() > CUDNN_DIM_MAX) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "as many strides as dimensions, at most CUDNN_DIM_MAX");
  }
  for (size_t i = 0; i < spec_.dims.size(); ++i) {
    if (spec_.dims[i] < 0 || spec_.strides[i] < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative dimension or stride");
  }
  if (spec_.alignment <= 0 || (spec_.alignment & (spec_.alignment - 1)) != 0) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "byte alignment must be a power of two");
  }
  if (spec_.ragged != nullptr) {
    const TensorSpec& r = *spec_.ragged;
    bool shape = !r.dims.empty() && r.dims[0] == spec_.dims[0] + 1;
    for (size_t i = 1; i < r.dims.size(); ++i) shape = shape && r.dims[i] == 1;
    if (ragged_unfinalized_ || (r.dtype != CUDNN_DATA_INT32 && r.dtype != CUDNN_DATA_INT64) || !shape) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "ragged offsets are a finalized INT32 or INT64 tensor of [n + 1, 1, ...]");
    }
  }
  if (spec_.by_value) {
    if (spec_.is_virtual) return Fail(CUDNN_STATUS_BAD_PARAM, "a by-value tensor cannot be virtual");
    for (int64_t d : spec_.dims) {
      if (d != 1) return Fail(CUDNN_STATUS_BAD_PARAM, "a by-value tensor is a scalar");
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

// ---- convolution ----
cudnnStatus_t ConvolutionDescriptor::DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) {
  cudnnStatus_t st;
  switch (name) {
    case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
      st = ReadScalar(in, CUDNN_TYPE_INT64, &params_.spatial);
      has_spatial_ = has_spatial_ || st == CUDNN_STATUS_SUCCESS;
      return st;
    case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
      st = ReadScalar(in, CUDNN_TYPE_DATA_TYPE, &params_.compute);
      has_compute_ = has_compute_ || st == CUDNN_STATUS_SUCCESS;
      return st;
    case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
      st = ReadScalar(in, CUDNN_TYPE_CONVOLUTION_MODE, &params_.mode);
      has_mode_ = has_mode_ || st == CUDNN_STATUS_SUCCESS;
      return st;
    case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS: return ReadArray(in, CUDNN_TYPE_INT64, &params_.pre);
    case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS: return ReadArray(in, CUDNN_TYPE_INT64, &params_.post);
    case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES: return ReadArray(in, CUDNN_TYPE_INT64, &params_.stride);
    case CUDNN_ATTR_CONVOLUTION_DILATIONS: return ReadArray(in, CUDNN_TYPE_INT64, &params_.dilation);
    default: return Fail(CUDNN_STATUS_BAD_PARAM, "not a convolution attribute");
  }
}

cudnnStatus_t ConvolutionDescriptor::DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  switch (name) {
    case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
      return Fail(CUDNN_STATUS_BAD_PARAM, "the spatial dimension count cannot be read back");
    case CUDNN_ATTR_CONVOLUTION_COMP_TYPE: return WriteScalar(out, CUDNN_TYPE_DATA_TYPE, params_.compute);
    case CUDNN_ATTR_CONVOLUTION_CONV_MODE: return WriteScalar(out, CUDNN_TYPE_CONVOLUTION_MODE, params_.mode);
    case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS: return WriteArray(out, CUDNN_TYPE_INT64, params_.pre);
    case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS: return WriteArray(out, CUDNN_TYPE_INT64, params_.post);
    case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES: return WriteArray(out, CUDNN_TYPE_INT64, params_.stride);
    case CUDNN_ATTR_CONVOLUTION_DILATIONS: return WriteArray(out, CUDNN_TYPE_INT64, params_.dilation);
    default: return Fail(CUDNN_STATUS_BAD_PARAM, "not a convolution attribute");
  }
}

cudnnStatus_t ConvolutionDescriptor::DoFinalize() {
  const size_t n = static_cast<size_t>(params_.spatial);
  if (!has_spatial_ || !has_compute_ || !has_mode_ || params_.spatial < 1 ||
      params_.spatial > CUDNN_DIM_MAX - 2 || params_.pre.size() != n || params_.post.size() != n ||
      params_.stride.size() != n || params_.dilation.size() != n) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "spatial dimensions, compute type, mode and per-dimension parameters");
  }
  if (params_.mode != CUDNN_CONVOLUTION && params_.mode != CUDNN_CROSS_CORRELATION) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "unknown convolution mode");
  }
  for (size_t i = 0; i < n; ++i) {
    if (params_.pre[i] < 0 || params_.post[i] < 0 || params_.stride[i] < 1 || params_.dilation[i] < 1) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "paddings >= 0, strides and dilations >= 1");
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

// ---- pointwise ----
cudnnStatus_t PointwiseDescriptor::DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) {
  switch (name) {
    case CUDNN_ATTR_POINTWISE_MODE: {
      cudnnStatus_t st = ReadScalar(in, CUDNN_TYPE_POINTWISE_MODE, &params_.mode);
      has_mode_ = has_mode_ || st == CUDNN_STATUS_SUCCESS;
      return st;
    }
    case CUDNN_ATTR_POINTWISE_MATH_PREC: return ReadScalar(in, CUDNN_TYPE_DATA_TYPE, &params_.math);
    case CUDNN_ATTR_POINTWISE_NAN_PROPAGATION: {
      cudnnNanPropagation_t nan;
      return ReadScalar(in, CUDNN_TYPE_NAN_PROPOGATION, &nan);
    }
    case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP: return ReadScale(in, &params_.relu_lower);
    case CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP: return ReadScale(in, &params_.relu_upper);
    case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE: return ReadScale(in, &params_.relu_slope);
    case CUDNN_ATTR_POINTWISE_ELU_ALPHA: return ReadScale(in, &params_.elu_alpha);
    case CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA: return ReadScale(in, &params_.softplus_beta);
    case CUDNN_ATTR_POINTWISE_SWISH_BETA: return ReadScale(in, &params_.swish_beta);
    case CUDNN_ATTR_POINTWISE_AXIS: return ReadScalar(in, CUDNN_TYPE_INT64, &params_.axis);
    default: return Fail(CUDNN_STATUS_BAD_PARAM, "not a pointwise attribute");
  }
}

cudnnStatus_t PointwiseDescriptor::DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  switch (name) {
    case CUDNN_ATTR_POINTWISE_MODE: return WriteScalar(out, CUDNN_TYPE_POINTWISE_MODE, params_.mode);
    case CUDNN_ATTR_POINTWISE_MATH_PREC: return WriteScalar(out, CUDNN_TYPE_DATA_TYPE, params_.math);
    case CUDNN_ATTR_POINTWISE_AXIS: return WriteScalar(out, CUDNN_TYPE_INT64, params_.axis);
    default: return Fail(CUDNN_STATUS_NOT_SUPPORTED, "simgpu reads back mode, precision and axis only");
  }
}

cudnnStatus_t PointwiseDescriptor::DoFinalize() {
  if (!has_mode_) return Fail(CUDNN_STATUS_BAD_PARAM, "the pointwise mode is required");
  if (!KnownPointwiseMode(params_.mode)) return Fail(CUDNN_STATUS_BAD_PARAM, "unknown pointwise mode");
  return CUDNN_STATUS_SUCCESS;
}

// ---- reduction and matmul ----
cudnnStatus_t ComputeDescriptor::DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) {
  const bool reduction = type() == CUDNN_BACKEND_REDUCTION_DESCRIPTOR;
  if (reduction && name == CUDNN_ATTR_REDUCTION_OPERATOR) {
    cudnnStatus_t st = ReadScalar(in, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &reduce_);
    has_reduce_ = has_reduce_ || st == CUDNN_STATUS_SUCCESS;
    return st;
  }
  if (reduction && name == CUDNN_ATTR_REDUCTION_COMP_TYPE) return ReadScalar(in, CUDNN_TYPE_DATA_TYPE, &compute_);
  if (reduction && name == CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC) {
    bool deterministic;
    return ReadScalar(in, CUDNN_TYPE_BOOLEAN, &deterministic);
  }
  if (!reduction && name == CUDNN_ATTR_MATMUL_COMP_TYPE) return ReadScalar(in, CUDNN_TYPE_DATA_TYPE, &compute_);
  if (!reduction && name == CUDNN_ATTR_MATMUL_PADDING_VALUE) {
    cudnnStatus_t st = ReadScale(in, &padding_);
    has_padding_ = has_padding_ || st == CUDNN_STATUS_SUCCESS;
    return st;
  }
  return Fail(CUDNN_STATUS_BAD_PARAM, reduction ? "not a reduction attribute" : "not a matmul attribute");
}

cudnnStatus_t ComputeDescriptor::DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  const bool reduction = type() == CUDNN_BACKEND_REDUCTION_DESCRIPTOR;
  if (reduction && name == CUDNN_ATTR_REDUCTION_OPERATOR) {
    return WriteScalar(out, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, reduce_);
  }
  if ((reduction && name == CUDNN_ATTR_REDUCTION_COMP_TYPE) || (!reduction && name == CUDNN_ATTR_MATMUL_COMP_TYPE)) {
    return WriteScalar(out, CUDNN_TYPE_DATA_TYPE, compute_);
  }
  return Fail(CUDNN_STATUS_BAD_PARAM, "attribute not readable here");
}

cudnnStatus_t ComputeDescriptor::DoFinalize() {
  if (type() != CUDNN_BACKEND_REDUCTION_DESCRIPTOR) return CUDNN_STATUS_SUCCESS;
  if (!has_reduce_) return Fail(CUDNN_STATUS_BAD_PARAM, "the reduction operator is required");
  switch (reduce_) {
    case CUDNN_REDUCE_TENSOR_ADD:
    case CUDNN_REDUCE_TENSOR_MUL:
    case CUDNN_REDUCE_TENSOR_MIN:
    case CUDNN_REDUCE_TENSOR_MAX:
    case CUDNN_REDUCE_TENSOR_AMAX:
      return CUDNN_STATUS_SUCCESS;
    default:
      return Fail(CUDNN_STATUS_NOT_SUPPORTED, "reduction operator not supported");
  }
}

}  // namespace simgpu::cudnn
