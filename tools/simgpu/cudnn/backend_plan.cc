// Operation graphs, engine heuristics, engines, engine configurations, execution plans and variant packs.
//
// simgpu has one engine (global index 0), which runs any graph GraphModel says it can execute on the stream's
// worker thread; it needs no workspace and has no knobs, numerical or behavior notes. Heuristics, in every mode,
// return that engine's configuration for a graph it can execute and none otherwise. As on NVIDIA's library,
// the variant pack's unique ids and data pointers cannot be read back (CUDNN_STATUS_NOT_SUPPORTED; DESIGN.md
// section 5), nor can an operation graph's operations.
#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "tools/simgpu/cudnn/backend_desc.h"
#include "tools/simgpu/cudnn/graph_build.h"

namespace simgpu::cudnn {
namespace {

// What engines, engine configurations and plans carry: the graph's model and the engine index.
struct EngineState {
  std::shared_ptr<const GraphModel> model;
  int64_t index = 0;
};

class OperationGraph : public Descriptor {
 public:
  OperationGraph() : Descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) {}
  std::shared_ptr<const GraphModel> model() const { return model_; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override {
    if (name == CUDNN_ATTR_OPERATIONGRAPH_HANDLE) return ReadScalar(in, CUDNN_TYPE_HANDLE, &handle_);
    if (name == CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED) return ReadScalar(in, CUDNN_TYPE_BOOLEAN, &dynamic_);
    if (name != CUDNN_ATTR_OPERATIONGRAPH_OPS) return Fail(CUDNN_STATUS_BAD_PARAM, "not an operation graph attribute");
    if (in.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong type");
    if (in.count < 0 || (in.count > 0 && in.values == nullptr)) return Fail(CUDNN_STATUS_BAD_PARAM, "no operations");
    std::vector<OpSpec> ops;
    std::vector<const void*> seen;
    duplicate_ = unfinalized_ = false;
    for (int64_t i = 0; i < in.count; ++i) {
      cudnnBackendDescriptor_t d = static_cast<const cudnnBackendDescriptor_t*>(in.values)[i];
      Descriptor* live = LiveDescriptor(d);
      auto* op = dynamic_cast<OperationDescriptor*>(live);
      if (op == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "not an operation descriptor");
      duplicate_ = duplicate_ || std::find(seen.begin(), seen.end(), d) != seen.end();
      unfinalized_ = unfinalized_ || !op->finalized();
      seen.push_back(d);
      ops.push_back(op->spec());
    }
    ops_ = std::move(ops);
    return CUDNN_STATUS_SUCCESS;
  }
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override {
    if (name == CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT) return WriteScalar(out, CUDNN_TYPE_INT64, int64_t{1});
    if (name == CUDNN_ATTR_OPERATIONGRAPH_HANDLE) return WriteScalar(out, CUDNN_TYPE_HANDLE, handle_);
    if (name == CUDNN_ATTR_OPERATIONGRAPH_OPS) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "operations cannot be read");
    return Fail(CUDNN_STATUS_BAD_PARAM, "not an operation graph attribute");
  }
  cudnnStatus_t DoFinalize() override {
    if (ops_.empty() || duplicate_ || unfinalized_) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "an operation graph needs distinct finalized operations");
    }
    std::shared_ptr<GraphModel> model;
    cudnnStatus_t st = BuildGraphModel(ops_, &model);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (dynamic_ && model->unsupported.empty()) model->unsupported = "dynamic shapes";
    model_ = std::move(model);
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  std::vector<OpSpec> ops_;
  std::shared_ptr<const GraphModel> model_;
  cudnnHandle_t handle_ = nullptr;
  bool dynamic_ = false, duplicate_ = false, unfinalized_ = false;
};

class Engine : public Descriptor {
 public:
  Engine() : Descriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR) {}
  const EngineState& state() const { return state_; }
  void Assign(const EngineState& s) {
    state_ = s;
    has_index_ = true;
    MarkFinalized();
  }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override {
    switch (name) {
      case CUDNN_ATTR_ENGINE_OPERATION_GRAPH: {
        Descriptor* d = nullptr;
        cudnnStatus_t st = ReadDescriptor(in, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &d);
        if (st == CUDNN_STATUS_SUCCESS) state_.model = static_cast<OperationGraph*>(d)->model();
        return st;
      }
      case CUDNN_ATTR_ENGINE_GLOBAL_INDEX: {
        cudnnStatus_t st = ReadScalar(in, CUDNN_TYPE_INT64, &state_.index);
        has_index_ = has_index_ || st == CUDNN_STATUS_SUCCESS;
        return st;
      }
      case CUDNN_ATTR_ENGINE_SM_COUNT_TARGET: {
        int32_t sms;
        return ReadScalar(in, CUDNN_TYPE_INT32, &sms);
      }
      default: return Fail(CUDNN_STATUS_BAD_PARAM, "not an engine attribute");
    }
  }
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override {
    switch (name) {
      case CUDNN_ATTR_ENGINE_GLOBAL_INDEX: return WriteScalar(out, CUDNN_TYPE_INT64, state_.index);
      case CUDNN_ATTR_ENGINE_KNOB_INFO: return WriteArray(out, CUDNN_TYPE_BACKEND_DESCRIPTOR, std::vector<void*>{});
      case CUDNN_ATTR_ENGINE_LAYOUT_INFO: return WriteArray(out, CUDNN_TYPE_BACKEND_DESCRIPTOR, std::vector<void*>{});
      case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
        return WriteArray(out, CUDNN_TYPE_NUMERICAL_NOTE, std::vector<cudnnBackendNumericalNote_t>{});
      case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE:  // every graph simgpu executes can be put into a CUDA graph
        return WriteArray(out, CUDNN_TYPE_BEHAVIOR_NOTE,
                          std::vector<cudnnBackendBehaviorNote_t>{CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API});
      default: return Fail(CUDNN_STATUS_NOT_SUPPORTED, "attribute not readable from simgpu's engine");
    }
  }
  cudnnStatus_t DoFinalize() override {
    if (state_.model == nullptr || !has_index_) return Fail(CUDNN_STATUS_BAD_PARAM, "operation graph and index");
    if (state_.index != 0) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "simgpu has one engine, index 0");
    if (!state_.model->unsupported.empty()) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "graph not executable by simgpu");
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  EngineState state_;
  bool has_index_ = false;
};

class EngineConfig : public Descriptor {
 public:
  EngineConfig() : Descriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) {}
  const EngineState& state() const { return state_; }
  void Assign(const EngineState& s) {
    state_ = s;
    MarkFinalized();
  }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override {
    if (name == CUDNN_ATTR_ENGINECFG_ENGINE) {
      Descriptor* d = nullptr;
      cudnnStatus_t st = ReadDescriptor(in, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &d);
      if (st != CUDNN_STATUS_SUCCESS) return st;
      if (!d->finalized()) return Fail(CUDNN_STATUS_BAD_PARAM, "engine not finalized");
      state_ = static_cast<Engine*>(d)->state();
      return CUDNN_STATUS_SUCCESS;
    }
    if (name == CUDNN_ATTR_ENGINECFG_KNOB_CHOICES || name == CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO) {
      if (in.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong type");
      return in.count == 0 ? CUDNN_STATUS_SUCCESS : Fail(CUDNN_STATUS_NOT_SUPPORTED, "simgpu's engine has no knobs");
    }
    return Fail(CUDNN_STATUS_BAD_PARAM, "not an engine configuration attribute");
  }
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override;
  cudnnStatus_t DoFinalize() override {
    return state_.model != nullptr ? CUDNN_STATUS_SUCCESS : Fail(CUDNN_STATUS_BAD_PARAM, "engine is required");
  }

 private:
  EngineState state_;
};

// Fills the caller's descriptors in out.values (of type `want`) with `fill`; count 1.
template <typename T, typename Fill>
cudnnStatus_t WriteOneDescriptor(const AttrOut& out, cudnnBackendDescriptorType_t want, Fill fill) {
  if (out.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong type");
  if (out.requested < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative requestedElementCount");
  if (out.requested == 0) {
    if (out.count != nullptr) *out.count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  if (out.values == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "arrayOfElements is null");
  auto* target = dynamic_cast<T*>(LiveDescriptor(static_cast<cudnnBackendDescriptor_t*>(out.values)[0]));
  if (target == nullptr || target->type() != want) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "arrayOfElements must hold descriptors of the attribute's kind");
  }
  fill(target);
  if (out.count != nullptr) *out.count = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t EngineConfig::DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  switch (name) {
    case CUDNN_ATTR_ENGINECFG_ENGINE:
      return WriteOneDescriptor<Engine>(out, CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                                        [this](Engine* e) { e->Assign(state_); });
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
      return WriteScalar(out, CUDNN_TYPE_INT64, int64_t{0});
    case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED:
      return WriteScalar(out, CUDNN_TYPE_INT32, int32_t{0});
    case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
    case CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO:
      return WriteArray(out, CUDNN_TYPE_BACKEND_DESCRIPTOR, std::vector<void*>{});
    default:
      return Fail(CUDNN_STATUS_BAD_PARAM, "not an engine configuration attribute");
  }
}

class EngineHeuristics : public Descriptor {
 public:
  EngineHeuristics() : Descriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) {}

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override {
    switch (name) {
      case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH: {
        Descriptor* d = nullptr;
        cudnnStatus_t st = ReadDescriptor(in, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &d);
        if (st == CUDNN_STATUS_SUCCESS) model_ = static_cast<OperationGraph*>(d)->model();
        return st;
      }
      case CUDNN_ATTR_ENGINEHEUR_MODE: {
        cudnnStatus_t st = ReadScalar(in, CUDNN_TYPE_HEUR_MODE, &mode_);
        has_mode_ = has_mode_ || st == CUDNN_STATUS_SUCCESS;
        return st;
      }
      case CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET: {
        int32_t sms;
        return ReadScalar(in, CUDNN_TYPE_INT32, &sms);
      }
      case CUDNN_ATTR_ENGINEHEUR_DEVICEPROP:
        return in.type == CUDNN_TYPE_BACKEND_DESCRIPTOR ? CUDNN_STATUS_SUCCESS
                                                        : Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong type");
      default:
        return Fail(CUDNN_STATUS_BAD_PARAM, "not an engine heuristics attribute");
    }
  }
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override {
    if (name == CUDNN_ATTR_ENGINEHEUR_MODE) return WriteScalar(out, CUDNN_TYPE_HEUR_MODE, mode_);
    if (name != CUDNN_ATTR_ENGINEHEUR_RESULTS) return Fail(CUDNN_STATUS_BAD_PARAM, "not a heuristics attribute");
    if (!model_->unsupported.empty()) {
      if (out.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong type");
      if (out.count != nullptr) *out.count = 0;
      return CUDNN_STATUS_SUCCESS;
    }
    const EngineState state{model_, 0};
    return WriteOneDescriptor<EngineConfig>(out, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                            [&state](EngineConfig* c) { c->Assign(state); });
  }
  cudnnStatus_t DoFinalize() override {
    if (model_ == nullptr || !has_mode_) return Fail(CUDNN_STATUS_BAD_PARAM, "operation graph and mode required");
    if (mode_ < CUDNN_HEUR_MODE_INSTANT || mode_ >= CUDNN_HEUR_MODES_COUNT) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "unknown heuristics mode");
    }
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  std::shared_ptr<const GraphModel> model_;
  cudnnBackendHeurMode_t mode_ = CUDNN_HEUR_MODE_INSTANT;
  bool has_mode_ = false;
};

class ExecutionPlan : public Descriptor {
 public:
  ExecutionPlan() : Descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {}
  std::shared_ptr<const GraphModel> model() const { return state_.model; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override {
    switch (name) {
      case CUDNN_ATTR_EXECUTION_PLAN_HANDLE: {
        cudnnHandle_t handle = nullptr;
        cudnnStatus_t st = ReadScalar(in, CUDNN_TYPE_HANDLE, &handle);
        if (st != CUDNN_STATUS_SUCCESS) return st;
        return IsLiveHandle(handle) ? CUDNN_STATUS_SUCCESS : Fail(CUDNN_STATUS_BAD_PARAM, "not a live handle");
      }
      case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG: {
        Descriptor* d = nullptr;
        cudnnStatus_t st = ReadDescriptor(in, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &d);
        if (st != CUDNN_STATUS_SUCCESS) return st;
        if (!d->finalized()) return Fail(CUDNN_STATUS_BAD_PARAM, "engine configuration not finalized");
        state_ = static_cast<EngineConfig*>(d)->state();
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS:
        return ReadArray(in, CUDNN_TYPE_INT64, &run_only_);
      case CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE:
      case CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP:
        return in.type == CUDNN_TYPE_BACKEND_DESCRIPTOR ? CUDNN_STATUS_SUCCESS
                                                        : Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "wrong type");
      default:
        return Fail(CUDNN_STATUS_BAD_PARAM, "not an execution plan attribute");
    }
  }
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override {
    switch (name) {
      case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: return WriteScalar(out, CUDNN_TYPE_INT64, int64_t{0});
      case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
        return WriteOneDescriptor<EngineConfig>(out, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                                [this](EngineConfig* c) { c->Assign(state_); });
      case CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS:
        return WriteArray(out, CUDNN_TYPE_INT64, std::vector<int64_t>{});
      case CUDNN_ATTR_EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS: return WriteArray(out, CUDNN_TYPE_INT64, run_only_);
      default: return Fail(CUDNN_STATUS_NOT_SUPPORTED, "attribute not readable from simgpu's plans");
    }
  }
  cudnnStatus_t DoFinalize() override {
    return state_.model != nullptr ? CUDNN_STATUS_SUCCESS
                                   : Fail(CUDNN_STATUS_BAD_PARAM, "engine configuration is required");
  }

 private:
  EngineState state_;
  std::vector<int64_t> run_only_;
};

// A knob choice (type and value). simgpu's engine has no knobs: frontends create these to read a configuration's
// choices, of which there are none, and may set them up for configurations of their own, which engine
// configurations then refuse (CUDNN_STATUS_NOT_SUPPORTED).
class KnobChoice : public Descriptor {
 public:
  KnobChoice() : Descriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR) {}

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override {
    if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE) return ReadScalar(in, CUDNN_TYPE_KNOB_TYPE, &knob_);
    if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE) return ReadScalar(in, CUDNN_TYPE_INT64, &value_);
    return Fail(CUDNN_STATUS_BAD_PARAM, "not a knob choice attribute");
  }
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override {
    if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE) return WriteScalar(out, CUDNN_TYPE_KNOB_TYPE, knob_);
    if (name == CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE) return WriteScalar(out, CUDNN_TYPE_INT64, value_);
    return Fail(CUDNN_STATUS_BAD_PARAM, "not a knob choice attribute");
  }
  cudnnStatus_t DoFinalize() override { return CUDNN_STATUS_SUCCESS; }

 private:
  cudnnBackendKnobType_t knob_ = CUDNN_KNOB_TYPE_COUNTS;
  int64_t value_ = 0;
};

class VariantPack : public Descriptor {
 public:
  VariantPack() : Descriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {}
  const VariantPackData& data() const { return data_; }

 protected:
  cudnnStatus_t DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) override {
    switch (name) {
      case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: return ReadArray(in, CUDNN_TYPE_INT64, &data_.uids);
      case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
        if (in.type != CUDNN_TYPE_VOID_PTR) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "data pointers are VOID_PTR");
        return ReadArray(in, CUDNN_TYPE_VOID_PTR, &data_.pointers);
      case CUDNN_ATTR_VARIANT_PACK_WORKSPACE: return ReadScalar(in, CUDNN_TYPE_VOID_PTR, &data_.workspace);
      case CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES: {
        std::vector<void*> intermediates;
        return ReadArray(in, CUDNN_TYPE_VOID_PTR, &intermediates);
      }
      default: return Fail(CUDNN_STATUS_BAD_PARAM, "not a variant pack attribute");
    }
  }
  cudnnStatus_t DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const override {
    switch (name) {
      case CUDNN_ATTR_VARIANT_PACK_WORKSPACE: return WriteScalar(out, CUDNN_TYPE_VOID_PTR, data_.workspace);
      case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
      case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
        return Fail(CUDNN_STATUS_NOT_SUPPORTED, "unique ids and data pointers cannot be read back");
      default: return Fail(CUDNN_STATUS_BAD_PARAM, "not a variant pack attribute");
    }
  }
  cudnnStatus_t DoFinalize() override {
    if (data_.uids.size() != data_.pointers.size()) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "as many data pointers as unique ids");
    }
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  VariantPackData data_;
};

}  // namespace

std::unique_ptr<Descriptor> NewDescriptor(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return std::make_unique<TensorDescriptor>();
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return std::make_unique<ConvolutionDescriptor>();
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return std::make_unique<PointwiseDescriptor>();
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: return std::make_unique<ComputeDescriptor>(type);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return std::make_unique<OperationDescriptor>(type);
    case CUDNN_BACKEND_RNG_DESCRIPTOR: return std::make_unique<RngDescriptor>();
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return std::make_unique<OperationGraph>();
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return std::make_unique<EngineHeuristics>();
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return std::make_unique<Engine>();
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return std::make_unique<EngineConfig>();
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return std::make_unique<ExecutionPlan>();
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return std::make_unique<VariantPack>();
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR: return std::make_unique<KnobChoice>();
    default: return nullptr;
  }
}

std::shared_ptr<const GraphModel> PlanModel(const Descriptor& plan) {
  return static_cast<const ExecutionPlan&>(plan).model();
}

const VariantPackData& PackData(const Descriptor& pack) { return static_cast<const VariantPack&>(pack).data(); }

}  // namespace simgpu::cudnn
