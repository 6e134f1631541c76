// Stream capture and graphs: argument checks and CUDA's error codes in front of the simgpu core, which does the
// recording and replay (simgpu.h, "stream capture and graphs"). Handles are the core's objects: cudaGraph_t is a
// simgpu::Graph*, cudaGraphNode_t a simgpu::GraphNode*, cudaGraphExec_t a simgpu::GraphExec*.
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudart/cudart_internal.h"

using simgpu::cudart::Report;

namespace simgpu::cudart {
namespace {

bool ValidMode(cudaStreamCaptureMode mode) {
  return mode == cudaStreamCaptureModeGlobal || mode == cudaStreamCaptureModeThreadLocal ||
         mode == cudaStreamCaptureModeRelaxed;
}

Graph* ToGraph(cudaGraph_t graph) { return reinterpret_cast<Graph*>(graph); }
GraphExec* ToExec(cudaGraphExec_t exec) { return reinterpret_cast<GraphExec*>(exec); }

cudaError_t Instantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  constexpr unsigned long long kKnown = cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
                                        cudaGraphInstantiateFlagDeviceLaunch |
                                        cudaGraphInstantiateFlagUseNodePriority;
  if (exec == nullptr || !LiveGraph(ToGraph(graph)) || (flags & ~kKnown) != 0) return Report(cudaErrorInvalidValue);
  // Device-side graph launch needs kernels that launch graphs; simgpu runs no device code.
  if ((flags & cudaGraphInstantiateFlagDeviceLaunch) != 0) return Report(cudaErrorNotSupported);
  GraphExec* made = InstantiateGraph(ToGraph(graph));
  if (made == nullptr) return Report(cudaErrorInvalidValue);  // a cycle (what CUDA answers: not measured)
  *exec = reinterpret_cast<cudaGraphExec_t>(made);
  return cudaSuccess;
}

GraphNode* ToNode(cudaGraphNode_t node) { return reinterpret_cast<GraphNode*>(node); }

// Dependencies as the core takes them; false when numDependencies > 0 without an array.
bool Deps(const cudaGraphNode_t* deps, size_t n, std::vector<GraphNode*>* out) {
  if (n != 0 && deps == nullptr) return false;
  for (size_t i = 0; i < n; ++i) out->push_back(ToNode(deps[i]));
  return true;
}

// cudaMemcpy3DParms between pitched pointers as the core's copy; false for CUDA arrays (not modeled) and for
// both or neither of a pointer and an array given on one side.
bool FromParms(const cudaMemcpy3DParms& m, CopyParams* c) {
  if (m.srcArray != nullptr || m.dstArray != nullptr) return false;
  c->src = m.srcPtr.ptr;
  c->src_pitch = m.srcPtr.pitch;
  c->src_xsize = m.srcPtr.xsize;
  c->src_ysize = m.srcPtr.ysize;
  c->src_x = m.srcPos.x;
  c->src_y = m.srcPos.y;
  c->src_z = m.srcPos.z;
  c->dst = m.dstPtr.ptr;
  c->dst_pitch = m.dstPtr.pitch;
  c->dst_xsize = m.dstPtr.xsize;
  c->dst_ysize = m.dstPtr.ysize;
  c->dst_x = m.dstPos.x;
  c->dst_y = m.dstPos.y;
  c->dst_z = m.dstPos.z;
  c->width = m.extent.width;
  c->height = m.extent.height;
  c->depth = m.extent.depth;
  c->kind = m.kind;
  return m.kind >= cudaMemcpyHostToHost && m.kind <= cudaMemcpyDefault;
}

cudaMemcpy3DParms ToParms(const CopyParams& c) {
  cudaMemcpy3DParms m = {};
  m.srcPtr = cudaPitchedPtr{const_cast<void*>(c.src), c.src_pitch, c.src_xsize, c.src_ysize};
  m.srcPos = cudaPos{c.src_x, c.src_y, c.src_z};
  m.dstPtr = cudaPitchedPtr{c.dst, c.dst_pitch, c.dst_xsize, c.dst_ysize};
  m.dstPos = cudaPos{c.dst_x, c.dst_y, c.dst_z};
  m.extent = cudaExtent{c.width, c.height, c.depth};
  m.kind = c.kind;
  return m;
}

// A 1D copy of `count` bytes as cudaGraphAddMemcpyNode1D documents it: a 3D copy of one row.
CopyParams Copy1D(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  CopyParams c;
  c.src = src;
  c.src_pitch = c.src_xsize = count;
  c.src_ysize = 1;
  c.dst = dst;
  c.dst_pitch = c.dst_xsize = count;
  c.dst_ysize = 1;
  c.width = count;
  c.height = c.depth = 1;
  c.kind = kind;
  return c;
}

MemsetParams FromMemset(const cudaMemsetParams& p) {
  MemsetParams m;
  m.dst = p.dst;
  m.pitch = p.pitch;
  m.value = p.value;
  m.element_size = p.elementSize;
  m.width = p.width;
  m.height = p.height;
  return m;
}

bool ValidKind(cudaMemcpyKind kind) { return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault; }

// As CUDA documents for node queries: with no array, the count; else at most *count entries (the rest NULL, their
// edge data zero) and *count the number written. simgpu's edges carry no data (zero edge data).
cudaError_t FillNodes(const std::vector<GraphNode*>& all, cudaGraphNode_t* nodes, cudaGraphEdgeData* edges,
                      size_t* count) {
  if (nodes == nullptr) {
    *count = all.size();
    return cudaSuccess;
  }
  const size_t n = *count < all.size() ? *count : all.size();
  for (size_t i = 0; i < *count; ++i) {
    nodes[i] = i < n ? reinterpret_cast<cudaGraphNode_t>(all[i]) : nullptr;
    if (edges != nullptr) edges[i] = cudaGraphEdgeData{};
  }
  *count = n;
  return cudaSuccess;
}

}  // namespace
}  // namespace simgpu::cudart

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (!simgpu::cudart::ValidMode(mode)) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t status = simgpu::BeginCapture(s, mode);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData* dependencyData, size_t numDependencies,
                                          cudaStreamCaptureMode mode) {
  if (!simgpu::cudart::ValidMode(mode) || !simgpu::LiveGraph(simgpu::cudart::ToGraph(graph)) ||
      (numDependencies != 0 && dependencies == nullptr)) {
    return Report(cudaErrorInvalidValue);
  }
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  std::vector<simgpu::GraphNode*> deps;
  for (size_t i = 0; i < numDependencies; ++i) deps.push_back(reinterpret_cast<simgpu::GraphNode*>(dependencies[i]));
  cudaError_t status = simgpu::BeginCapture(s, mode, simgpu::cudart::ToGraph(graph), deps);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  simgpu::Graph* graph = nullptr;
  cudaError_t status = simgpu::EndCapture(s, &graph);
  if (status == cudaSuccess || status == cudaErrorStreamCaptureInvalidated ||
      status == cudaErrorStreamCaptureUnjoined) {
    *pGraph = reinterpret_cast<cudaGraph_t>(graph);
  }
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
  if (pCaptureStatus == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t implicit = simgpu::CheckLegacyQuery(s);
  if (implicit != cudaSuccess) return Report(implicit);
  *pCaptureStatus = simgpu::CaptureInfo(s, nullptr, nullptr, nullptr);
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* captureStatus_out,
                                     unsigned long long* id_out, cudaGraph_t* graph_out,
                                     const cudaGraphNode_t** dependencies_out,
                                     const cudaGraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  if (captureStatus_out == nullptr || (edgeData_out != nullptr && dependencies_out == nullptr)) {
    return Report(cudaErrorInvalidValue);
  }
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t implicit = simgpu::CheckLegacyQuery(s);
  if (implicit != cudaSuccess) return Report(implicit);
  unsigned long long id = 0;
  simgpu::Graph* graph = nullptr;
  const std::vector<simgpu::GraphNode*>* deps = nullptr;
  *captureStatus_out = simgpu::CaptureInfo(s, &id, &graph, &deps);
  if (*captureStatus_out != cudaStreamCaptureStatusActive) return cudaSuccess;
  if (id_out != nullptr) *id_out = id;
  if (graph_out != nullptr) *graph_out = reinterpret_cast<cudaGraph_t>(graph);
  if (dependencies_out != nullptr) {
    *dependencies_out = deps->empty() ? nullptr : reinterpret_cast<const cudaGraphNode_t*>(deps->data());
  }
  if (edgeData_out != nullptr) {
    // simgpu's edges carry no data: an array of default (zero) edge data as long as the dependency set.
    thread_local std::vector<cudaGraphEdgeData> edges;
    edges.assign(deps->size(), cudaGraphEdgeData{});
    *edgeData_out = edges.empty() ? nullptr : edges.data();
  }
  if (numDependencies_out != nullptr) *numDependencies_out = deps->size();
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr || !simgpu::cudart::ValidMode(*mode)) return Report(cudaErrorInvalidValue);
  simgpu::ExchangeCaptureMode(mode);
  return cudaSuccess;
}

cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
  if (pGraph == nullptr || flags != 0) return Report(cudaErrorInvalidValue);
  *pGraph = reinterpret_cast<cudaGraph_t>(simgpu::CreateGraph());
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  if (numNodes == nullptr || !simgpu::LiveGraph(simgpu::cudart::ToGraph(graph))) {
    return Report(cudaErrorInvalidValue);
  }
  std::vector<simgpu::GraphNode*> all = simgpu::GraphNodes(simgpu::cudart::ToGraph(graph));
  if (nodes == nullptr) {
    *numNodes = all.size();
    return cudaSuccess;
  }
  // As documented: at most *numNodes entries are written, extra entries are set to NULL, and *numNodes becomes
  // the number of nodes actually returned.
  size_t n = *numNodes < all.size() ? *numNodes : all.size();
  for (size_t i = 0; i < *numNodes; ++i) nodes[i] = i < n ? reinterpret_cast<cudaGraphNode_t>(all[i]) : nullptr;
  *numNodes = n;
  return cudaSuccess;
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph) {
  if (pGraphNode == nullptr || (numDependencies != 0 && pDependencies == nullptr)) return Report(cudaErrorInvalidValue);
  std::vector<simgpu::GraphNode*> deps;
  for (size_t i = 0; i < numDependencies; ++i) deps.push_back(reinterpret_cast<simgpu::GraphNode*>(pDependencies[i]));
  simgpu::GraphNode* node =
      simgpu::AddChildGraphNode(simgpu::cudart::ToGraph(graph), simgpu::cudart::ToGraph(childGraph), deps);
  if (node == nullptr) return Report(cudaErrorInvalidValue);
  *pGraphNode = reinterpret_cast<cudaGraphNode_t>(node);
  return cudaSuccess;
}

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Graph* child = simgpu::ChildGraphOf(reinterpret_cast<simgpu::GraphNode*>(node));
  if (child == nullptr) return Report(cudaErrorInvalidValue);
  *pGraph = reinterpret_cast<cudaGraph_t>(child);
  return cudaSuccess;
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes, size_t* pNumRootNodes) {
  if (pNumRootNodes == nullptr || !simgpu::LiveGraph(simgpu::cudart::ToGraph(graph))) {
    return Report(cudaErrorInvalidValue);
  }
  std::vector<simgpu::GraphNode*> roots;
  for (simgpu::GraphNode* n : simgpu::GraphNodes(simgpu::cudart::ToGraph(graph)))
    if (simgpu::GraphNodeDependencies(n).empty()) roots.push_back(n);
  return simgpu::cudart::FillNodes(roots, pRootNodes, nullptr, pNumRootNodes);
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                         cudaGraphEdgeData* edgeData, size_t* pNumDependencies) {
  if (!simgpu::LiveGraphNode(reinterpret_cast<simgpu::GraphNode*>(node)) || pNumDependencies == nullptr ||
      (edgeData != nullptr && pDependencies == nullptr)) {
    return Report(cudaErrorInvalidValue);
  }
  return simgpu::cudart::FillNodes(simgpu::GraphNodeDependencies(reinterpret_cast<simgpu::GraphNode*>(node)),
                                   pDependencies, edgeData, pNumDependencies);
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* pDependentNodes,
                                           cudaGraphEdgeData* edgeData, size_t* pNumDependentNodes) {
  if (!simgpu::LiveGraphNode(reinterpret_cast<simgpu::GraphNode*>(node)) || pNumDependentNodes == nullptr ||
      (edgeData != nullptr && pDependentNodes == nullptr)) {
    return Report(cudaErrorInvalidValue);
  }
  return simgpu::cudart::FillNodes(simgpu::GraphNodeDependents(reinterpret_cast<simgpu::GraphNode*>(node)),
                                   pDependentNodes, edgeData, pNumDependentNodes);
}

cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                 cudaGraph_t childGraph) {
  const cudaError_t status = simgpu::SetExecChildGraph(simgpu::cudart::ToExec(hGraphExec),
                                                       reinterpret_cast<simgpu::GraphNode*>(node),
                                                       simgpu::cudart::ToGraph(childGraph));
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return simgpu::cudart::Instantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return simgpu::cudart::Instantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo* resultInfo) {
  if (resultInfo == nullptr || !simgpu::LiveGraphExec(simgpu::cudart::ToExec(hGraphExec)) ||
      !simgpu::LiveGraph(simgpu::cudart::ToGraph(hGraph))) {
    return Report(cudaErrorInvalidValue);
  }
  simgpu::GraphNode* node = nullptr;
  simgpu::GraphNode* from = nullptr;
  const cudaError_t status =
      simgpu::UpdateGraphExec(simgpu::cudart::ToExec(hGraphExec), simgpu::cudart::ToGraph(hGraph), &node, &from);
  // simgpu's nodes are all of one kind (stream work), so the only update it refuses is a changed topology.
  resultInfo->result = status == cudaSuccess ? cudaGraphExecUpdateSuccess : cudaGraphExecUpdateErrorTopologyChanged;
  resultInfo->errorNode = reinterpret_cast<cudaGraphNode_t>(node);
  resultInfo->errorFromNode = reinterpret_cast<cudaGraphNode_t>(from);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream) {
  if (!simgpu::LiveGraphExec(simgpu::cudart::ToExec(graphExec))) return Report(cudaErrorInvalidValue);
  if (simgpu::ResolveStream(stream) == nullptr) return Report(cudaErrorInvalidResourceHandle);
  return cudaSuccess;  // nothing to upload: the executable is already in host memory
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  if (!simgpu::LiveGraphExec(simgpu::cudart::ToExec(graphExec))) return Report(cudaErrorInvalidValue);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (s == nullptr) return Report(cudaErrorInvalidResourceHandle);
  cudaError_t status = simgpu::LaunchGraph(simgpu::cudart::ToExec(graphExec), s);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  if (!simgpu::LiveGraphExec(simgpu::cudart::ToExec(graphExec))) return Report(cudaErrorInvalidValue);
  simgpu::DestroyGraphExec(simgpu::cudart::ToExec(graphExec));
  return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                   size_t numDependencies, const cudaMemcpy3DParms* pCopyParams) {
  using namespace simgpu::cudart;
  std::vector<simgpu::GraphNode*> deps;
  simgpu::CopyParams copy;
  if (pGraphNode == nullptr || pCopyParams == nullptr || !Deps(pDependencies, numDependencies, &deps) ||
      !FromParms(*pCopyParams, &copy)) {
    return Report(cudaErrorInvalidValue);
  }
  simgpu::GraphNode* node = simgpu::AddMemcpyNode(ToGraph(graph), copy, deps);
  if (node == nullptr) return Report(cudaErrorInvalidValue);
  *pGraphNode = reinterpret_cast<cudaGraphNode_t>(node);
  return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies, void* dst,
                                     const void* src, size_t count, cudaMemcpyKind kind) {
  using namespace simgpu::cudart;
  std::vector<simgpu::GraphNode*> deps;
  if (pGraphNode == nullptr || !ValidKind(kind) || !Deps(pDependencies, numDependencies, &deps))
    return Report(cudaErrorInvalidValue);
  simgpu::GraphNode* node = simgpu::AddMemcpyNode(ToGraph(graph), Copy1D(dst, src, count, kind), deps);
  if (node == nullptr) return Report(cudaErrorInvalidValue);
  *pGraphNode = reinterpret_cast<cudaGraphNode_t>(node);
  return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* pNodeParams) {
  simgpu::CopyParams copy;
  if (pNodeParams == nullptr || !simgpu::GetCopyNode(simgpu::cudart::ToNode(node), &copy))
    return Report(cudaErrorInvalidValue);
  *pNodeParams = simgpu::cudart::ToParms(copy);
  return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* pNodeParams) {
  simgpu::CopyParams copy;
  if (pNodeParams == nullptr || !simgpu::cudart::FromParms(*pNodeParams, &copy) ||
      !simgpu::SetCopyNode(simgpu::cudart::ToNode(node), copy)) {
    return Report(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src, size_t count,
                                           cudaMemcpyKind kind) {
  using namespace simgpu::cudart;
  if (!ValidKind(kind) || !simgpu::SetCopyNode(ToNode(node), Copy1D(dst, src, count, kind)))
    return Report(cudaErrorInvalidValue);
  return cudaSuccess;
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                   size_t numDependencies, const cudaMemsetParams* pMemsetParams) {
  using namespace simgpu::cudart;
  std::vector<simgpu::GraphNode*> deps;
  if (pGraphNode == nullptr || pMemsetParams == nullptr || !Deps(pDependencies, numDependencies, &deps))
    return Report(cudaErrorInvalidValue);
  simgpu::GraphNode* node = simgpu::AddMemsetNode(ToGraph(graph), FromMemset(*pMemsetParams), deps);
  if (node == nullptr) return Report(cudaErrorInvalidValue);
  *pGraphNode = reinterpret_cast<cudaGraphNode_t>(node);
  return cudaSuccess;
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* pNodeParams) {
  simgpu::MemsetParams m;
  if (pNodeParams == nullptr || !simgpu::GetMemsetNode(simgpu::cudart::ToNode(node), &m))
    return Report(cudaErrorInvalidValue);
  *pNodeParams = cudaMemsetParams{};
  pNodeParams->dst = m.dst;
  pNodeParams->pitch = m.pitch;
  pNodeParams->value = m.value;
  pNodeParams->elementSize = m.element_size;
  pNodeParams->width = m.width;
  pNodeParams->height = m.height;
  return cudaSuccess;
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const cudaMemsetParams* pNodeParams) {
  if (pNodeParams == nullptr ||
      !simgpu::SetMemsetNode(simgpu::cudart::ToNode(node), simgpu::cudart::FromMemset(*pNodeParams))) {
    return Report(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                 size_t numDependencies, const cudaHostNodeParams* pNodeParams) {
  using namespace simgpu::cudart;
  std::vector<simgpu::GraphNode*> deps;
  if (pGraphNode == nullptr || pNodeParams == nullptr || !Deps(pDependencies, numDependencies, &deps))
    return Report(cudaErrorInvalidValue);
  simgpu::GraphNode* node = simgpu::AddHostNode(ToGraph(graph), pNodeParams->fn, pNodeParams->userData, deps);
  if (node == nullptr) return Report(cudaErrorInvalidValue);
  *pGraphNode = reinterpret_cast<cudaGraphNode_t>(node);
  return cudaSuccess;
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* pNodeParams) {
  simgpu::HostFunction fn = nullptr;
  void* data = nullptr;
  if (pNodeParams == nullptr || !simgpu::GetHostNode(simgpu::cudart::ToNode(node), &fn, &data))
    return Report(cudaErrorInvalidValue);
  pNodeParams->fn = fn;
  pNodeParams->userData = data;
  return cudaSuccess;
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const cudaHostNodeParams* pNodeParams) {
  if (pNodeParams == nullptr ||
      !simgpu::SetHostNode(simgpu::cudart::ToNode(node), pNodeParams->fn, pNodeParams->userData)) {
    return Report(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

// simgpu's kernel nodes run driver-side functions (library work, as cuDNN's are), which the runtime's getter
// refuses on a GPU: cudaErrorInvalidDeviceFunction, measured for cuDNN's native-graph kernel nodes on an H200
// (tools/gpu/cudnn_native_graph_probe.cc). The driver's cuGraphKernelNodeGetParams reads them.
cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* pNodeParams) {
  cudaGraphNodeType type;
  if (pNodeParams == nullptr || !simgpu::GraphNodeType(simgpu::cudart::ToNode(node), &type) ||
      type != cudaGraphNodeTypeKernel) {
    return Report(cudaErrorInvalidValue);
  }
  return Report(cudaErrorInvalidDeviceFunction);
}

// simgpu keeps no kernel node attributes (every node has the defaults), so copying them checks the nodes only.
cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
  cudaGraphNodeType a, b;
  if (!simgpu::GraphNodeType(simgpu::cudart::ToNode(hDst), &a) ||
      !simgpu::GraphNodeType(simgpu::cudart::ToNode(hSrc), &b) || a != cudaGraphNodeTypeKernel ||
      b != cudaGraphNodeTypeKernel) {
    return Report(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                     const cudaGraphEdgeData* edgeData, size_t numDependencies) {
  using namespace simgpu::cudart;
  std::vector<simgpu::GraphNode*> f, t;
  if (!Deps(from, numDependencies, &f) || !Deps(to, numDependencies, &t)) return Report(cudaErrorInvalidValue);
  // simgpu's edges carry no data: only default (zero) edge data can be added.
  for (size_t i = 0; edgeData != nullptr && i < numDependencies; ++i) {
    const cudaGraphEdgeData& e = edgeData[i];
    if (e.from_port != 0 || e.to_port != 0 || e.type != 0) return Report(cudaErrorNotSupported);
  }
  const cudaError_t status = simgpu::AddGraphDependencies(ToGraph(graph), f, t);
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  const cudaError_t status = simgpu::DestroyGraphNode(simgpu::cudart::ToNode(node));
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
  if (pGraphClone == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::Graph* clone = simgpu::CloneGraph(simgpu::cudart::ToGraph(originalGraph));
  if (clone == nullptr) return Report(cudaErrorInvalidValue);
  *pGraphClone = reinterpret_cast<cudaGraph_t>(clone);
  return cudaSuccess;
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* pNode, cudaGraphNode_t originalNode, cudaGraph_t clonedGraph) {
  if (pNode == nullptr) return Report(cudaErrorInvalidValue);
  simgpu::GraphNode* found =
      simgpu::FindInClone(simgpu::cudart::ToNode(originalNode), simgpu::cudart::ToGraph(clonedGraph));
  if (found == nullptr) return Report(cudaErrorInvalidValue);
  *pNode = reinterpret_cast<cudaGraphNode_t>(found);
  return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* pType) {
  if (pType == nullptr || !simgpu::GraphNodeType(simgpu::cudart::ToNode(node), pType))
    return Report(cudaErrorInvalidValue);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  cudaError_t status = simgpu::DestroyGraph(simgpu::cudart::ToGraph(graph));
  return status == cudaSuccess ? cudaSuccess : Report(status);
}

}  // extern "C"
