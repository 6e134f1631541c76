// Internal to libcudnn.so.9 (simgpu): backend descriptors (cudnnBackendDescriptor_t is a Descriptor*).
//
// Rules shared by every descriptor, as NVIDIA's library applies them (conformance.h): a finalized descriptor
// rejects further attributes (CUDNN_STATUS_BAD_PARAM) and a second finalization (BAD_PARAM); attributes can be
// read only after finalization (CUDNN_STATUS_NOT_INITIALIZED before); an attribute of another descriptor kind
// is BAD_PARAM; a value of the wrong attribute type is CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE; a scalar attribute
// takes exactly one element (BAD_PARAM otherwise) and an array at least one. Reading an array attribute with
// requestedElementCount 0 or a null arrayOfElements returns only its length; otherwise min(requested, length)
// elements and that count.
// Descriptor-valued attributes are read into descriptors the caller created (NVIDIA's convention), which the
// library fills and finalizes.
//
// Each descriptor is used by one thread at a time, as cuDNN requires; the registry of live descriptors is locked.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_BACKEND_DESC_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_BACKEND_DESC_H_

#include <cudnn.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "tools/simgpu/cudnn/graph_model.h"
#include "tools/simgpu/cudnn/handle.h"

namespace simgpu::cudnn {

// One SetAttribute call's value.
struct AttrIn {
  cudnnBackendAttributeType_t type;
  int64_t count;
  const void* values;
};

// One GetAttribute call's destination.
struct AttrOut {
  cudnnBackendAttributeType_t type;
  int64_t requested;
  int64_t* count;
  void* values;
};

class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) : type_(type) {}
  virtual ~Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptorType_t type() const { return type_; }
  bool finalized() const { return finalized_; }

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const AttrIn& in);
  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const AttrOut& out) const;
  cudnnStatus_t Finalize();

 protected:
  virtual cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) = 0;
  virtual cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const = 0;
  virtual cudnnStatus_t DoFinalize() = 0;
  void MarkFinalized() { finalized_ = true; }

 private:
  cudnnBackendDescriptorType_t type_;
  bool finalized_ = false;
};

// Creates a descriptor of a type simgpu implements; nullptr for the others.
std::unique_ptr<Descriptor> NewDescriptor(cudnnBackendDescriptorType_t type);
// Registry of live descriptors (created and not destroyed).
void RegisterDescriptor(Descriptor* d);
bool UnregisterDescriptor(Descriptor* d);
// The live descriptor behind a handle value, or nullptr.
Descriptor* LiveDescriptor(cudnnBackendDescriptor_t d);

// ---- attribute value helpers (status as described at the top) ----
template <typename T>
cudnnStatus_t ReadScalar(const AttrIn& in, cudnnBackendAttributeType_t type, T* out) {
  if (in.type != type) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong attribute type");
  if (in.count != 1 || in.values == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "expected one element");
  std::memcpy(out, in.values, sizeof(T));
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t ReadArray(const AttrIn& in, cudnnBackendAttributeType_t type, std::vector<T>* out) {
  if (in.type != type) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong attribute type");
  if (in.count < 1 || in.values == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "expected at least one element");
  out->resize(static_cast<size_t>(in.count));
  std::memcpy(out->data(), in.values, sizeof(T) * out->size());
  return CUDNN_STATUS_SUCCESS;
}

// A float or double scaling factor (operation alpha and beta attributes): any other type is BAD_PARAM.
cudnnStatus_t ReadScale(const AttrIn& in, double* out);

// A descriptor-valued attribute: one live descriptor (of any type), or of type `want`.
cudnnStatus_t ReadAnyDescriptor(const AttrIn& in, Descriptor** out);
cudnnStatus_t ReadDescriptor(const AttrIn& in, cudnnBackendDescriptorType_t want, Descriptor** out);

template <typename T>
cudnnStatus_t WriteScalar(const AttrOut& out, cudnnBackendAttributeType_t type, const T& value) {
  if (out.type != type) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong attribute type");
  if (out.requested != 1) return Fail(CUDNN_STATUS_BAD_PARAM, "expected one element");
  if (out.values == nullptr) {
    if (out.count != nullptr) *out.count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  std::memcpy(out.values, &value, sizeof(T));
  if (out.count != nullptr) *out.count = 1;
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t WriteArray(const AttrOut& out, cudnnBackendAttributeType_t type, const std::vector<T>& values) {
  if (out.type != type) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong attribute type");
  if (out.requested < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative requestedElementCount");
  const int64_t n = static_cast<int64_t>(values.size());
  if (out.requested == 0 || out.values == nullptr) {
    if (out.count != nullptr) *out.count = n;
    return CUDNN_STATUS_SUCCESS;
  }
  const int64_t copied = out.requested < n ? out.requested : n;
  if (copied > 0) std::memcpy(out.values, values.data(), sizeof(T) * static_cast<size_t>(copied));
  if (out.count != nullptr) *out.count = copied;
  return CUDNN_STATUS_SUCCESS;
}

// ---- descriptor kinds other files need to see ----
// A tensor. CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC (graph_model.h) takes a tensor descriptor, copied when set; the
// tensor's finalization fails (BAD_PARAM), as NVIDIA's does, when that descriptor was not finalized, is not INT32
// or INT64, or is not [n + 1, 1, ...] for this tensor's first dimension n. Reading the attribute with no
// destination answers count 1 with or without offsets, as NVIDIA's library does; reading it into a tensor
// descriptor fills and finalizes that descriptor (BAD_PARAM for a dense tensor), where NVIDIA's 9.19 crashes.
// Setting a descriptor of another type is BAD_PARAM (NVIDIA's library throws std::bad_alloc).
class TensorDescriptor : public Descriptor {
 public:
  TensorDescriptor() : Descriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR) {}
  const TensorSpec& spec() const { return spec_; }
  // Makes this descriptor a finalized copy of `spec` (attribute reads that return a tensor descriptor).
  void Assign(const TensorSpec& spec);

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override;
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override;
  cudnnStatus_t DoFinalize() override;

 private:
  TensorSpec spec_;
  bool has_dtype_ = false, has_uid_ = false, has_alignment_ = false;
  bool ragged_unfinalized_ = false;  // the ragged offset descriptor was set before its finalization
};

// The operation descriptors share one implementation, parameterized by their type's attribute table.
class OperationDescriptor : public Descriptor {
 public:
  explicit OperationDescriptor(cudnnBackendDescriptorType_t type);
  const OpSpec& spec() const { return spec_; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override;
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override;
  cudnnStatus_t DoFinalize() override;

 private:
  OpSpec spec_;
  bool has_desc_ = false;       // the convolution, pointwise, reduction or matmul descriptor
  bool bad_reference_ = false;  // a referenced descriptor of the wrong type or not finalized
};

// Descriptors whose content operations copy (convolution, pointwise, reduction, matmul).
class ConvolutionDescriptor : public Descriptor {
 public:
  ConvolutionDescriptor() : Descriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) {}
  const ConvParams& params() const { return params_; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override;
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override;
  cudnnStatus_t DoFinalize() override;

 private:
  ConvParams params_;
  bool has_spatial_ = false, has_compute_ = false, has_mode_ = false;
};

class PointwiseDescriptor : public Descriptor {
 public:
  PointwiseDescriptor() : Descriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR) {}
  const PointwiseParams& params() const { return params_; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override;
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override;
  cudnnStatus_t DoFinalize() override;

 private:
  PointwiseParams params_;
  bool has_mode_ = false;
};

// Reduction and matmul descriptors: an operator (reduction only) and a compute type.
class ComputeDescriptor : public Descriptor {
 public:
  explicit ComputeDescriptor(cudnnBackendDescriptorType_t type) : Descriptor(type) {}
  cudnnReduceTensorOp_t reduce() const { return reduce_; }
  cudnnDataType_t compute() const { return compute_; }
  bool has_padding() const { return has_padding_; }
  double padding() const { return padding_; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override;
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override;
  cudnnStatus_t DoFinalize() override;

 private:
  cudnnReduceTensorOp_t reduce_ = CUDNN_REDUCE_TENSOR_ADD;
  cudnnDataType_t compute_ = CUDNN_DATA_FLOAT;
  bool has_reduce_ = false;
  bool has_padding_ = false;  // matmul: CUDNN_ATTR_MATMUL_PADDING_VALUE was set
  double padding_ = 0.0;
};

// The RNG distribution descriptor (rng.cc): BERNOULLI, UNIFORM or NORMAL with their parameters.
class RngDescriptor : public Descriptor {
 public:
  RngDescriptor() : Descriptor(CUDNN_BACKEND_RNG_DESCRIPTOR) {}
  const RngParams& params() const { return params_; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override;
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override;
  cudnnStatus_t DoFinalize() override;

 private:
  RngParams params_;
};

// ---- the graph, engine and plan descriptors (backend_plan.cc) ----
class OperationGraphDescriptor;
class ExecutionPlanDescriptor;
class VariantPackDescriptor;

// For cudnnBackendExecute: the model of a finalized plan, and a finalized variant pack's bindings.
std::shared_ptr<const GraphModel> PlanModel(const Descriptor& plan);
struct VariantPackData {
  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  void* workspace = nullptr;
};
const VariantPackData& PackData(const Descriptor& pack);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_BACKEND_DESC_H_
