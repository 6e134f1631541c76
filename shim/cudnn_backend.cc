// cuDNN backend API interceptors: the set-up calls feed the shadow of backend descriptors (cudnn_shadow.h) after
// the vendor call succeeded, and are not recorded; cudnnBackendExecute is an op: its record is the plan's graph
// (format.h: BackendGraphRecord, resolved when the plan was finalized) with this execution's variant-pack pointers
// and by-value scalars, and its operands are the graph's non-virtual tensors, on the handle's stream: every tensor
// an operation reads before the execution (kGraphIn), every tensor one writes after it (kGraphOut), each as the
// span of memory it occupies.
//
// cudnnBackendPopulateCudaGraph / cudnnBackendUpdateCudaGraph (cuDNN's native CUDA graph API) run nothing: they
// put the plan's work for a variant pack into the application's cudaGraph_t (or rebind it), which runs at each
// launch of that graph. They are recorded as the execution's record is (the plan's graph, the pack's pointers,
// the vendor's status; stream 0: the work runs on whatever stream the graph is launched on), and become the
// templates of the graph's launches (kGraphCaptured): the shim adds snapshot nodes of the same tensors an execution
// captures to the graph, and each launch is an op with a new seq, the template's record and that launch's data
// (capture_native_graph.cc has how, and how an update is run so that cuDNN never sees the shim's nodes). An op
// that cannot be captured that way (TTRACE_GRAPH_MB, a driver without the graph node calls, an update whose graph
// holds no snapshot nodes, a failed step) gets a kPayloadDropped notice (reason kGraphCapture, "not captured (cuDNN
// native CUDA graph): why") and the first one a log line: recorded, never silent; its status is cuDNN's.
//
// Hot path (Execute): the shadow lookups allocate nothing; the record is assembled in a per-thread buffer that
// grows only when a thread first executes a larger graph.
#include <cuda.h>
#include <cudnn.h>

#include <cstring>
#include <string>
#include <vector>

#include "shim/capture_engine.h"
#include "shim/cudnn_shadow.h"
#include "shim/interception.h"
#include "shim/log.h"
#include "shim/runtime.h"
#include "shim/tensor_pack.h"

#define TTRACE_LIBRARY kCudnn
#define TTRACE_UNRESOLVED_STATUS CUDNN_STATUS_NOT_INITIALIZED

namespace ttrace::shim {
namespace {

using format::DType;
using format::GraphTensor;

LazySymbol g_get_stream(format::Library::kCudnn, "cudnnGetStream");

// A one-element by-value tensor's value (host memory), NaN when its type has no reading here.
double ByValue(const GraphTensor& t, const void* p) {
  switch (t.data_type) {
    case CUDNN_DATA_FLOAT: {
      float v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    case CUDNN_DATA_DOUBLE: {
      double v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    default: return __builtin_nan("");
  }
}

TensorSpec GraphSpec(format::TensorSlot slot, uint32_t index, const GraphTensor& t) {
  TensorSpec s;
  s.slot = slot;
  s.index = index;
  s.ptr = reinterpret_cast<const void*>(t.ptr);
  s.dtype = DTypeFromCudnn(t.data_type);
  int64_t span = t.nb_dims > 0 ? 1 : 0;
  for (int i = 0; i < t.nb_dims; ++i) {
    if (t.dims[i] < 1 || t.strides[i] < 0) span = 0;
    if (span > 0) span += (t.dims[i] - 1) * t.strides[i];
  }
  s.rows = s.ld = span;
  s.cols = 1;
  return s;
}

// Assembles the record for this execution in `buf`: header, tensors (pointers from the pack), ops.
format::BackendGraphRecord* Assemble(const cudnn::PlanGraph* g, const cudnn::PackView& pack, std::vector<char>* buf) {
  const size_t nt = g == nullptr ? 0 : g->tensors.size(), no = g == nullptr ? 0 : g->ops.size();
  const size_t bytes = sizeof(format::BackendGraphRecord) + nt * sizeof(GraphTensor) + no * sizeof(format::GraphOp);
  if (buf->size() < bytes) buf->resize(bytes);
  auto* r = reinterpret_cast<format::BackendGraphRecord*>(buf->data());
  memset(r, 0, sizeof *r);
  r->tensor_entry_bytes = sizeof(GraphTensor);
  r->op_entry_bytes = sizeof(format::GraphOp);
  r->tensor_count = static_cast<uint32_t>(nt);
  r->op_count = static_cast<uint32_t>(no);
  r->payload_bytes = bytes - sizeof *r;
  if (g == nullptr) r->flags |= format::kGraphUnknown;
  if (pack.count < 0) r->flags |= format::kGraphPackUnknown;
  auto* tensors = reinterpret_cast<GraphTensor*>(r + 1);
  for (size_t i = 0; i < nt; ++i) {
    GraphTensor t = g->tensors[i];
    for (int j = 0; j < pack.count; ++j) {
      if (pack.uids[j] != t.uid || t.is_virtual) continue;
      t.ptr = reinterpret_cast<uint64_t>(pack.ptrs[j]);
      int64_t elems = 1;
      for (int d = 0; d < t.nb_dims; ++d) elems *= t.dims[d];
      if (t.by_value && elems == 1 && pack.ptrs[j] != nullptr) t.value = ByValue(t, pack.ptrs[j]);
    }
    memcpy(&tensors[i], &t, sizeof t);
  }
  if (no > 0) memcpy(tensors + nt, g->ops.data(), no * sizeof(format::GraphOp));
  return r;
}

cudnnStatus_t TraceExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack_desc,
                           cudnnStatus_t (*real)(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t)) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real(handle, plan, pack_desc);
  thread_local std::vector<char> buf;
  const std::shared_ptr<const cudnn::PlanGraph> g = cudnn::PlanOf(plan);
  cudnn::PackView pack;
  cudnn::PackOf(pack_desc, &pack);
  cudaStream_t stream = nullptr;
  auto get_stream = reinterpret_cast<decltype(&::cudnnGetStream)>(g_get_stream.Get());
  if (get_stream == nullptr || get_stream(handle, &stream) != CUDNN_STATUS_SUCCESS) stream = nullptr;
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/true);
  format::BackendGraphRecord* r = Assemble(g.get(), pack, &buf);
  r->seq = slot.seq;
  r->api = static_cast<uint16_t>(format::ApiId::kCudnnBackendExecute);
  r->t_ns = MonotonicNs();
  r->handle = reinterpret_cast<uint64_t>(handle);
  r->stream = reinterpret_cast<uint64_t>(stream);
  r->plan = reinterpret_cast<uint64_t>(plan);
  r->variant_pack = reinterpret_cast<uint64_t>(pack_desc);
  r->workspace = reinterpret_cast<uint64_t>(pack.workspace);
  const auto* tensors = reinterpret_cast<const GraphTensor*>(r + 1);
  const bool capture = engine->capturing_tensors() && g != nullptr && pack.count >= 0;
  auto each = [&](bool written, format::TensorSlot slot_kind) {  // one group (one event) each
    TensorGroup group(engine, r->seq, stream);
    for (uint32_t i = 0; i < r->tensor_count; ++i) {
      const GraphTensor& t = tensors[i];
      const bool wanted = written ? g->written[i] : g->read[i];
      if (!wanted || t.is_virtual || t.by_value || t.ptr == 0) continue;
      const TensorSpec spec = GraphSpec(slot_kind, i, t);
      if (spec.dtype == DType::kInvalid) {
        engine->Drop(r->seq, format::DropReason::kUnsupported, "cuDNN graph tensor type has no ttrace dtype");
        continue;
      }
      group.Add(spec);
    }
  };
  if (capture) each(false, format::TensorSlot::kGraphIn);
  const cudnnStatus_t status = real(handle, plan, pack_desc);
  if (capture && status == CUDNN_STATUS_SUCCESS) each(true, format::TensorSlot::kGraphOut);
  r->status = status;
  engine->Publish(slot, format::RecordType::kBackendGraph, r, sizeof *r, r + 1, r->payload_bytes);
  return status;
}

// The graph's captured tensors for `pack` (inputs, then outputs; *inputs counts the former), as TraceExecute
// captures them. False, with the reason, when one cannot be captured.
bool NativeSpecs(const cudnn::PlanGraph* g, const format::BackendGraphRecord* r, std::vector<TensorSpec>* specs,
                 size_t* inputs, std::string* why) {
  specs->clear();
  if (g == nullptr || (r->flags & format::kGraphPackUnknown) != 0) {
    *why = "the plan's graph or the variant pack is unknown";
    return false;
  }
  const auto* tensors = reinterpret_cast<const GraphTensor*>(r + 1);
  for (int written = 0; written < 2; ++written) {
    if (written == 1) *inputs = specs->size();
    for (uint32_t i = 0; i < r->tensor_count; ++i) {
      const GraphTensor& t = tensors[i];
      if (!(written == 1 ? g->written[i] : g->read[i]) || t.is_virtual || t.by_value || t.ptr == 0) continue;
      specs->push_back(GraphSpec(written == 1 ? format::TensorSlot::kGraphOut : format::TensorSlot::kGraphIn, i, t));
      if (specs->back().dtype == DType::kInvalid) {
        *why = "a graph tensor's type has no ttrace dtype";
        return false;
      }
    }
  }
  if (specs->empty()) *why = "the graph has no tensors to capture";
  return !specs->empty();
}

// cudnnBackendPopulateCudaGraph / cudnnBackendUpdateCudaGraph (see the top): the record, and snapshot nodes in the
// application's graph (capture_native_graph.cc) whose launches are ops with new seqs.
cudnnStatus_t TraceNativeGraph(format::ApiId api, cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                               cudnnBackendDescriptor_t pack_desc, cudaGraph_t graph,
                               cudnnStatus_t (*real)(cudnnHandle_t, cudnnBackendDescriptor_t,
                                                     cudnnBackendDescriptor_t, cudaGraph_t)) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real(handle, plan, pack_desc, graph);
  thread_local std::vector<char> buf;
  const std::shared_ptr<const cudnn::PlanGraph> g = cudnn::PlanOf(plan);
  cudnn::PackView pack;
  cudnn::PackOf(pack_desc, &pack);
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/true);
  format::BackendGraphRecord* r = Assemble(g.get(), pack, &buf);
  r->seq = slot.seq;
  r->api = static_cast<uint16_t>(api);
  r->t_ns = MonotonicNs();
  r->handle = reinterpret_cast<uint64_t>(handle);
  r->stream = 0;
  r->plan = reinterpret_cast<uint64_t>(plan);
  r->variant_pack = reinterpret_cast<uint64_t>(pack_desc);
  r->workspace = reinterpret_cast<uint64_t>(pack.workspace);
  const bool populate = api == format::ApiId::kCudnnBackendPopulateCudaGraph;
  const CUgraph cu_graph = reinterpret_cast<CUgraph>(graph);
  std::vector<TensorSpec> specs;
  size_t inputs = 0;
  std::string why, unused;
  // An update's specs are wanted also while tensors are not captured: a graph holding snapshot nodes keeps them,
  // its copies on the new pack (or neutralised without specs), whether or not its launches are captured.
  const bool known = NativeSpecs(g.get(), r, &specs, &inputs, &why);
  bool capture = engine->capturing_tensors() && known;
  std::vector<CUgraphNode> before;
  if (capture && populate && !engine->NativeGraphNodes(cu_graph, &before)) {
    capture = false;
    why = "cannot list the graph's nodes (the driver lacks the graph node calls)";
  }
  if (!known || (populate && !capture)) specs.clear();
  cudnnStatus_t status;
  CaptureEngine::NativeGraphOp* updated = nullptr;
  if (!populate) {  // also when not capturing: the graph may hold snapshot nodes, which cuDNN must not see
    status = static_cast<cudnnStatus_t>(engine->UpdateNativeGraph(
        cu_graph, specs,
        [&](CUgraph target) {
          return static_cast<int>(real(handle, plan, pack_desc, reinterpret_cast<cudaGraph_t>(target)));
        },
        &updated, capture ? &why : &unused));
    capture = capture && updated != nullptr;
  } else {
    status = real(handle, plan, pack_desc, graph);
  }
  r->status = status;
  const uint64_t seq = r->seq;
  const std::string record(reinterpret_cast<const char*>(r), sizeof *r + r->payload_bytes);
  engine->Publish(slot, format::RecordType::kBackendGraph, r, sizeof *r, r + 1, r->payload_bytes);
  if (!engine->capturing_tensors() || status != CUDNN_STATUS_SUCCESS) return status;
  if (capture && populate)
    capture = engine->CaptureNativePopulate(seq, cu_graph, before, specs, inputs, format::RecordType::kBackendGraph,
                                            record, sizeof(format::BackendGraphRecord), &why);
  else if (capture)
    engine->NativeTemplate(updated, seq, format::RecordType::kBackendGraph, record, sizeof(format::BackendGraphRecord));
  if (!capture) {
    TTRACE_LOG_ONCE("%s (op %llu): not captured (cuDNN native CUDA graph): %s; recorded, but its operands are not "
                    "captured at the graph's launches",
                    format::ApiName(static_cast<uint16_t>(api)), static_cast<unsigned long long>(seq), why.c_str());
    engine->Drop(seq, format::DropReason::kGraphCapture, "not captured (cuDNN native CUDA graph): " + why);
  }
  return status;
}

}  // namespace
}  // namespace ttrace::shim

namespace shadow = ttrace::shim::cudnn;

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendCreateDescriptor,
                   (cudnnBackendDescriptorType_t descriptorType, cudnnBackendDescriptor_t* descriptor),
                   (descriptorType, descriptor)) {
  const cudnnStatus_t status = REAL(cudnnBackendCreateDescriptor)(descriptorType, descriptor);
  if (status == CUDNN_STATUS_SUCCESS && descriptor != nullptr) shadow::Created(*descriptor, descriptorType);
  return status;
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendSetAttribute,
                   (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,
                    cudnnBackendAttributeType_t attributeType, int64_t elementCount, const void* arrayOfElements),
                   (descriptor, attributeName, attributeType, elementCount, arrayOfElements)) {
  const cudnnStatus_t status =
      REAL(cudnnBackendSetAttribute)(descriptor, attributeName, attributeType, elementCount, arrayOfElements);
  if (status == CUDNN_STATUS_SUCCESS) shadow::Set(descriptor, attributeName, attributeType, elementCount, arrayOfElements);
  return status;
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendGetAttribute,
                   (cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t attributeName,
                    cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount, int64_t* elementCount,
                    void* arrayOfElements),
                   (descriptor, attributeName, attributeType, requestedElementCount, elementCount, arrayOfElements)) {
  const cudnnStatus_t status = REAL(cudnnBackendGetAttribute)(descriptor, attributeName, attributeType,
                                                              requestedElementCount, elementCount, arrayOfElements);
  if (status == CUDNN_STATUS_SUCCESS && elementCount != nullptr && arrayOfElements != nullptr) {
    const int64_t n = *elementCount < requestedElementCount ? *elementCount : requestedElementCount;
    shadow::Got(descriptor, attributeType, n, arrayOfElements);
  }
  return status;
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendFinalize, (cudnnBackendDescriptor_t descriptor), (descriptor)) {
  const cudnnStatus_t status = REAL(cudnnBackendFinalize)(descriptor);
  if (status == CUDNN_STATUS_SUCCESS) shadow::Finalized(descriptor);
  return status;
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t descriptor),
                   (descriptor)) {
  const cudnnStatus_t status = REAL(cudnnBackendDestroyDescriptor)(descriptor);
  if (status == CUDNN_STATUS_SUCCESS) shadow::Destroyed(descriptor);
  return status;
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendExecute,
                   (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan, cudnnBackendDescriptor_t variantPack),
                   (handle, executionPlan, variantPack)) {
  return ttrace::shim::TraceExecute(handle, executionPlan, variantPack, REAL(cudnnBackendExecute));
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendPopulateCudaGraph,
                   (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan, cudnnBackendDescriptor_t variantPack,
                    cudaGraph_t graph),
                   (handle, executionPlan, variantPack, graph)) {
  return ttrace::shim::TraceNativeGraph(ttrace::format::ApiId::kCudnnBackendPopulateCudaGraph, handle, executionPlan,
                                        variantPack, graph, REAL(cudnnBackendPopulateCudaGraph));
}

TTRACE_INTERCEPTOR(cudnnStatus_t, cudnnBackendUpdateCudaGraph,
                   (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan, cudnnBackendDescriptor_t variantPack,
                    cudaGraph_t graph),
                   (handle, executionPlan, variantPack, graph)) {
  return ttrace::shim::TraceNativeGraph(ttrace::format::ApiId::kCudnnBackendUpdateCudaGraph, handle, executionPlan,
                                        variantPack, graph, REAL(cudnnBackendUpdateCudaGraph));
}
