// The backend API's exported functions: descriptor lifetime, attributes, finalization and execution.
//
// cudnnBackendExecute binds every non-virtual tensor of the plan's graph to the variant pack's pointer for its
// unique id (CUDNN_STATUS_BAD_PARAM when one is missing), reads by-value scalars from the host at the call, takes
// the fault-site numbers on the host in call order (one conv number per convolution operation, in the graph's
// execution order; one attn number per execution of an attention graph), and enqueues the graph on the handle's
// stream (the native CUDA graph API puts the same work into a cudaGraph_t instead: NativeGraph below).
// Descriptor types simgpu does not implement fail to be created with CUDNN_STATUS_NOT_SUPPORTED; an
// unknown type value with CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, as NVIDIA's library answers.
#include <cudnn.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudnn/backend_desc.h"
#include "tools/simgpu/cudnn/data_type.h"
#include "tools/simgpu/cudnn/graph_exec.h"
#include "tools/simgpu/cudnn/handle.h"

namespace simgpu::cudnn {
namespace {

std::atomic<int64_t> launches{0};

// Checks the arguments and binds the pack to the plan's graph: one execution's launch, on *stream.
cudnnStatus_t Prepare(cudnnHandle_t handle, cudnnBackendDescriptor_t plan_desc, cudnnBackendDescriptor_t pack_desc,
                      GraphLaunch* out, Stream** out_stream) {
  if (!IsLiveHandle(handle)) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live cudnnHandle_t");
  Descriptor* plan = LiveDescriptor(plan_desc);
  Descriptor* pack = LiveDescriptor(pack_desc);
  if (plan == nullptr || plan->type() != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || pack == nullptr ||
      pack->type() != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "an execution plan and a variant pack are required");
  }
  if (!plan->finalized() || !pack->finalized()) {
    return Fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "plan or variant pack not finalized");
  }
  GraphLaunch& launch = *out;
  launch.model = PlanModel(*plan);
  const GraphModel& m = *launch.model;
  const VariantPackData& pd = PackData(*pack);
  launch.data.assign(m.tensors.size(), nullptr);
  launch.by_value.resize(m.tensors.size());
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const TensorSpec& spec = m.tensors[t];
    if (spec.is_virtual) continue;
    size_t j = 0;
    while (j < pd.uids.size() && pd.uids[j] != spec.uid) ++j;
    if (j == pd.uids.size() || pd.pointers[j] == nullptr) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "the variant pack lacks a pointer for a non-virtual tensor");
    }
    if (spec.by_value) {
      const auto* bytes = static_cast<const unsigned char*>(pd.pointers[j]);
      launch.by_value[t].assign(bytes, bytes + ElementBytes(spec.dtype));
    } else {
      launch.data[t] = pd.pointers[j];
    }
  }
  Stream* stream = HandleStream(handle);
  if (stream == nullptr) return Fail(CUDNN_STATUS_EXECUTION_FAILED, "the handle's stream is not a live stream");
  *out_stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

// Takes the launch's fault-site numbers: after every argument check, so that a refused call takes none.
void Number(GraphLaunch* out) {
  GraphLaunch& launch = *out;
  const GraphModel& m = *launch.model;
  launch.conv_calls.assign(m.ops.size(), -1);
  launch.conv_faults.resize(m.ops.size());
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const OpKind kind = m.ops[i].spec.kind;
    if (kind == OpKind::kConvForward || kind == OpKind::kConvBackwardData || kind == OpKind::kConvBackwardFilter) {
      launch.conv_calls[i] = NextCallIndex(FaultSite::kConv);
      launch.conv_faults[i] = MatchingFaults(FaultSite::kConv, launch.conv_calls[i]);
    }
  }
  if (m.attention) {
    launch.attn_call = NextCallIndex(FaultSite::kAttention);
    launch.attn_faults = MatchingFaults(FaultSite::kAttention, launch.attn_call);
  }
  launch.launch = launches.fetch_add(1);
}

cudnnStatus_t Execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack) {
  GraphLaunch launch;
  Stream* stream = nullptr;
  const cudnnStatus_t status = Prepare(handle, plan, pack, &launch, &stream);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  Number(&launch);
  Enqueue(stream, [launch = std::move(launch)] { RunGraph(launch); });
  return CUDNN_STATUS_SUCCESS;
}

// The native CUDA graph API. Populate adds one node to the application's graph that runs the plan on the pack's
// pointers at each launch of an executable instantiated from it, as Execute's stream work would (the host part,
// by-value scalars and fault-site numbers included, happens at the call: a SIMGPU_FAULT matched by a populate
// fires at every launch of that work). The node is tagged with the plan, and clones keep the tag: cudnn-frontend
// clones the populated graph into a child graph node of the application's graph and later updates the child's
// embedded graph (cudaGraphChildGraphNodeGetGraph), never the graph it populated. Update rebinds the nodes of a
// graph populated with the same plan to a new pack; executables keep the work they were instantiated with until
// cudaGraphExecUpdate, as with NVIDIA's kernel nodes. An update of a graph with no node of this plan (another
// plan's, an empty graph) is refused with CUDNN_STATUS_BAD_PARAM (not measured on real cuDNN); of a graph holding
// this plan's nodes and a node the plan did not populate, with CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER, the
// graph unchanged: what cuDNN 9.19 answered on an H200 for its convolution and matmul engines (its SDPA engine
// answered EXECUTION_FAILED_CUDART; tools/gpu/cudnn_native_graph_probe.cc, E2 and E3).
cudnnStatus_t NativeGraph(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                          cudaGraph_t cuda_graph, bool update) {
  GraphLaunch launch;
  Stream* stream = nullptr;
  const cudnnStatus_t status = Prepare(handle, plan, pack, &launch, &stream);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  Graph* graph = reinterpret_cast<Graph*>(cuda_graph);
  if (graph == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "graph is null");
  if (!LiveGraph(graph)) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live cudaGraph_t");
  const std::vector<GraphNode*> nodes = GraphNodes(graph);
  if (update) {
    size_t ours = 0;
    for (GraphNode* n : nodes) ours += GraphNodeTag(n) == plan;
    if (ours == 0) return Fail(CUDNN_STATUS_BAD_PARAM, "the graph was not populated with this execution plan");
    if (ours != nodes.size())
      return Fail(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER, "the graph holds a node this plan did not populate");
  }
  Number(&launch);
  auto work = [launch = std::move(launch)] { RunGraph(launch); };
  if (update) {
    for (GraphNode* n : nodes) SetGraphNodeWork(graph, n, work);
    return CUDNN_STATUS_SUCCESS;
  }
  if (AddGraphNode(graph, std::move(work), {}, plan) == nullptr) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "the graph cannot take nodes (a capture records into it)");
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace simgpu::cudnn

using simgpu::cudnn::Descriptor;
using simgpu::cudnn::Fail;
using simgpu::cudnn::LiveDescriptor;

extern "C" {

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* descriptor) {
  if (descriptor == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "descriptor is null");
  if (type < CUDNN_BACKEND_POINTWISE_DESCRIPTOR || type > CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR) {
    return Fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "unknown descriptor type");
  }
  std::unique_ptr<Descriptor> d = simgpu::cudnn::NewDescriptor(type);
  if (d == nullptr) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "descriptor type not implemented by simgpu");
  simgpu::cudnn::RegisterDescriptor(d.get());
  *descriptor = d.release();
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  if (descriptor == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "descriptor is null");
  auto* d = static_cast<Descriptor*>(descriptor);
  if (!simgpu::cudnn::UnregisterDescriptor(d)) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live descriptor");
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  return Fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendInitialize is deprecated and not implemented by simgpu");
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  Descriptor* d = LiveDescriptor(descriptor);
  if (d == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live descriptor");
  return d->Finalize();
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  Descriptor* d = LiveDescriptor(descriptor);
  if (d == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live descriptor");
  if (count < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative elementCount");
  return d->Set(name, {type, count, values});
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested, int64_t* count,
                                       void* values) {
  Descriptor* d = LiveDescriptor(descriptor);
  if (d == nullptr) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live descriptor");
  return d->Get(name, {type, requested, count, values});
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variant_pack) {
  return simgpu::cudnn::Execute(handle, plan, variant_pack);
}

cudnnStatus_t cudnnBackendPopulateCudaGraph(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                            cudnnBackendDescriptor_t variant_pack, cudaGraph_t graph) {
  return simgpu::cudnn::NativeGraph(handle, plan, variant_pack, graph, /*update=*/false);
}

cudnnStatus_t cudnnBackendUpdateCudaGraph(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                          cudnnBackendDescriptor_t variant_pack, cudaGraph_t graph) {
  return simgpu::cudnn::NativeGraph(handle, plan, variant_pack, graph, /*update=*/true);
}

}  // extern "C"
