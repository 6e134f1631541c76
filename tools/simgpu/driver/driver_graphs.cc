// Graphs through the driver, on the core's graphs (the ones stream capture makes, through the runtime or the
// driver), with the runtime's validation: executables (instantiate, launch, destroy; device-side launch is refused:
// simgpu runs no device code), and the node calls a tool needs to edit a graph it did not build (the ttrace shim's
// snapshot nodes in cuDNN's native CUDA graphs): memcpy and host nodes, edges, node destruction, clones, node types,
// memset nodes, and kernel node parameters, whose CUfunction is the core's KernelFunction (simgpu.h, "graph nodes by kind").
#include <vector>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "tools/simgpu/driver/driver_internal.h"

using simgpu::driver::ToResult;

namespace {

simgpu::Graph* ToGraph(CUgraph g) { return reinterpret_cast<simgpu::Graph*>(g); }
simgpu::GraphExec* ToExec(CUgraphExec e) { return reinterpret_cast<simgpu::GraphExec*>(e); }
simgpu::GraphNode* ToNode(CUgraphNode n) { return reinterpret_cast<simgpu::GraphNode*>(n); }

bool Deps(const CUgraphNode* deps, size_t n, std::vector<simgpu::GraphNode*>* out) {
  if (n != 0 && deps == nullptr) return false;
  for (size_t i = 0; i < n; ++i) out->push_back(ToNode(deps[i]));
  return true;
}

// As CUDA documents for node queries: with no array, the count; else at most *count entries (the rest NULL, their
// edge data zero) and *count the number written. simgpu's edges carry no data.
CUresult Fill(const std::vector<simgpu::GraphNode*>& all, CUgraphNode* nodes, CUgraphEdgeData* edges, size_t* count) {
  if (count == nullptr || (edges != nullptr && nodes == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) {
    *count = all.size();
    return CUDA_SUCCESS;
  }
  const size_t n = *count < all.size() ? *count : all.size();
  for (size_t i = 0; i < *count; ++i) {
    nodes[i] = i < n ? reinterpret_cast<CUgraphNode>(all[i]) : nullptr;
    if (edges != nullptr) edges[i] = CUgraphEdgeData{};
  }
  *count = n;
  return CUDA_SUCCESS;
}

// One side of a CUDA_MEMCPY3D as a pointer: host, device and unified memory (CUDA arrays are not modeled).
bool Side(CUmemorytype type, const void* host, CUdeviceptr device, const void** ptr) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: *ptr = host; return true;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: *ptr = reinterpret_cast<const void*>(device); return true;
    default: return false;
  }
}

// The driver's memory types as the runtime's copy kind: unified on either side is cudaMemcpyDefault (and reads
// back as unified on both sides).
cudaMemcpyKind Kind(CUmemorytype src, CUmemorytype dst) {
  if (src == CU_MEMORYTYPE_UNIFIED || dst == CU_MEMORYTYPE_UNIFIED) return cudaMemcpyDefault;
  if (src == CU_MEMORYTYPE_HOST) return dst == CU_MEMORYTYPE_HOST ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice;
  return dst == CU_MEMORYTYPE_HOST ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
}

bool FromMemcpy3D(const CUDA_MEMCPY3D& m, simgpu::CopyParams* c) {
  const void* src = nullptr;
  const void* dst = nullptr;
  if (m.srcLOD != 0 || m.dstLOD != 0 || !Side(m.srcMemoryType, m.srcHost, m.srcDevice, &src) ||
      !Side(m.dstMemoryType, m.dstHost, m.dstDevice, &dst)) {
    return false;
  }
  c->src = src;
  c->src_pitch = c->src_xsize = m.srcPitch;
  c->src_ysize = m.srcHeight;
  c->src_x = m.srcXInBytes;
  c->src_y = m.srcY;
  c->src_z = m.srcZ;
  c->dst = const_cast<void*>(dst);
  c->dst_pitch = c->dst_xsize = m.dstPitch;
  c->dst_ysize = m.dstHeight;
  c->dst_x = m.dstXInBytes;
  c->dst_y = m.dstY;
  c->dst_z = m.dstZ;
  c->width = m.WidthInBytes;
  c->height = m.Height;
  c->depth = m.Depth;
  c->kind = Kind(m.srcMemoryType, m.dstMemoryType);
  return true;
}

void SetSide(bool host, bool unified, const void* ptr, CUmemorytype* type, const void** host_ptr, CUdeviceptr* dev) {
  *type = unified ? CU_MEMORYTYPE_UNIFIED : host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  if (host && !unified) {
    *host_ptr = ptr;
  } else {
    *dev = reinterpret_cast<CUdeviceptr>(ptr);
  }
}

CUDA_MEMCPY3D ToMemcpy3D(const simgpu::CopyParams& c) {
  CUDA_MEMCPY3D m = {};
  const bool unified = c.kind == cudaMemcpyDefault;
  const bool src_host = c.kind == cudaMemcpyHostToHost || c.kind == cudaMemcpyHostToDevice;
  const bool dst_host = c.kind == cudaMemcpyHostToHost || c.kind == cudaMemcpyDeviceToHost;
  const void* dst_host_ptr = nullptr;
  SetSide(src_host, unified, c.src, &m.srcMemoryType, &m.srcHost, &m.srcDevice);
  SetSide(dst_host, unified, c.dst, &m.dstMemoryType, &dst_host_ptr, &m.dstDevice);
  m.dstHost = const_cast<void*>(dst_host_ptr);
  m.srcXInBytes = c.src_x;
  m.srcY = c.src_y;
  m.srcZ = c.src_z;
  m.srcPitch = c.src_pitch;
  m.srcHeight = c.src_ysize;
  m.dstXInBytes = c.dst_x;
  m.dstY = c.dst_y;
  m.dstZ = c.dst_z;
  m.dstPitch = c.dst_pitch;
  m.dstHeight = c.dst_ysize;
  m.WidthInBytes = c.width;
  m.Height = c.height;
  m.Depth = c.depth;
  return m;
}

simgpu::MemsetParams FromMemset(const CUDA_MEMSET_NODE_PARAMS& p) {
  simgpu::MemsetParams m;
  m.dst = reinterpret_cast<void*>(p.dst);
  m.pitch = p.pitch;
  m.value = p.value;
  m.element_size = p.elementSize;
  m.width = p.width;
  m.height = p.height;
  return m;
}

bool IsKernel(CUgraphNode node) {
  cudaGraphNodeType type;
  return simgpu::GraphNodeType(ToNode(node), &type) && type == cudaGraphNodeTypeKernel;
}

template <typename Params>
CUresult GetKernel(CUgraphNode node, Params* params) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  simgpu::KernelFunction* fn = nullptr;
  simgpu::KernelShape shape;
  if (params == nullptr || !simgpu::GetKernelNode(ToNode(node), &fn, &shape)) return CUDA_ERROR_INVALID_VALUE;
  *params = Params{};
  params->func = reinterpret_cast<CUfunction>(fn);
  params->gridDimX = shape.grid[0];
  params->gridDimY = shape.grid[1];
  params->gridDimZ = shape.grid[2];
  params->blockDimX = shape.block[0];
  params->blockDimY = shape.block[1];
  params->blockDimZ = shape.block[2];
  params->sharedMemBytes = shape.shared_bytes;
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult SetKernel(CUgraphNode node, const Params* params, CUfunction fn) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simgpu::KernelShape shape;
  shape.grid[0] = params->gridDimX;
  shape.grid[1] = params->gridDimY;
  shape.grid[2] = params->gridDimZ;
  shape.block[0] = params->blockDimX;
  shape.block[1] = params->blockDimY;
  shape.block[2] = params->blockDimZ;
  shape.shared_bytes = params->sharedMemBytes;
  // A function that is not simgpu's (device code of the application: simgpu runs none) is an invalid handle.
  const cudaError_t status = simgpu::SetKernelNode(ToNode(node), reinterpret_cast<simgpu::KernelFunction*>(fn), shape);
  return status == cudaErrorInvalidDeviceFunction ? CUDA_ERROR_INVALID_HANDLE : ToResult(status);
}

}  // namespace

extern "C" {

CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  constexpr unsigned long long kKnown = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if (phGraphExec == nullptr || !simgpu::LiveGraph(ToGraph(hGraph)) || (flags & ~kKnown) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  simgpu::GraphExec* exec = simgpu::InstantiateGraph(ToGraph(hGraph));
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;  // a cycle (what CUDA answers: not measured)
  *phGraphExec = reinterpret_cast<CUgraphExec>(exec);
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!simgpu::LiveGraphExec(ToExec(hGraphExec))) return CUDA_ERROR_INVALID_VALUE;
  simgpu::Stream* s = nullptr;
  r = simgpu::driver::ResolveDriverStream(hStream, &s);
  if (r != CUDA_SUCCESS) return r;
  return ToResult(simgpu::LaunchGraph(ToExec(hGraphExec), s));
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!simgpu::LiveGraphExec(ToExec(hGraphExec))) return CUDA_ERROR_INVALID_VALUE;
  simgpu::DestroyGraphExec(ToExec(hGraphExec));
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  return ToResult(simgpu::DestroyGraph(ToGraph(hGraph)));
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* resultInfo) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (resultInfo == nullptr || !simgpu::LiveGraphExec(ToExec(hGraphExec)) || !simgpu::LiveGraph(ToGraph(hGraph)))
    return CUDA_ERROR_INVALID_VALUE;
  simgpu::GraphNode* node = nullptr;
  simgpu::GraphNode* from = nullptr;
  const cudaError_t status = simgpu::UpdateGraphExec(ToExec(hGraphExec), ToGraph(hGraph), &node, &from);
  // The only update simgpu refuses is a changed topology (as the runtime's cudaGraphExecUpdate says).
  resultInfo->result = status == cudaSuccess ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  resultInfo->errorNode = reinterpret_cast<CUgraphNode>(node);
  resultInfo->errorFromNode = reinterpret_cast<CUgraphNode>(from);
  return status == cudaErrorGraphExecUpdateFailure ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE : ToResult(status);
}

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = reinterpret_cast<CUgraph>(simgpu::CreateGraph());
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!simgpu::LiveGraph(ToGraph(hGraph))) return CUDA_ERROR_INVALID_VALUE;
  return Fill(simgpu::GraphNodes(ToGraph(hGraph)), nodes, nullptr, numNodes);
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!simgpu::LiveGraph(ToGraph(hGraph))) return CUDA_ERROR_INVALID_VALUE;
  std::vector<simgpu::GraphNode*> roots;
  for (simgpu::GraphNode* n : simgpu::GraphNodes(ToGraph(hGraph)))
    if (simgpu::GraphNodeDependencies(n).empty()) roots.push_back(n);
  return Fill(roots, rootNodes, nullptr, numRootNodes);
}

CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies, CUgraphEdgeData* edgeData,
                                       size_t* numDependencies) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!simgpu::LiveGraphNode(ToNode(hNode))) return CUDA_ERROR_INVALID_VALUE;
  return Fill(simgpu::GraphNodeDependencies(ToNode(hNode)), dependencies, edgeData, numDependencies);
}

CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies, size_t* numDependencies) {
  return cuGraphNodeGetDependencies_v2(hNode, dependencies, nullptr, numDependencies);
}

CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* dependentNodes, CUgraphEdgeData* edgeData,
                                         size_t* numDependentNodes) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (!simgpu::LiveGraphNode(ToNode(hNode))) return CUDA_ERROR_INVALID_VALUE;
  return Fill(simgpu::GraphNodeDependents(ToNode(hNode)), dependentNodes, edgeData, numDependentNodes);
}

CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes, size_t* numDependentNodes) {
  return cuGraphNodeGetDependentNodes_v2(hNode, dependentNodes, nullptr, numDependentNodes);
}

CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData* edgeData, size_t numDependencies) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  std::vector<simgpu::GraphNode*> f, t;
  if (!Deps(from, numDependencies, &f) || !Deps(to, numDependencies, &t)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; edgeData != nullptr && i < numDependencies; ++i) {
    if (edgeData[i].from_port != 0 || edgeData[i].to_port != 0 || edgeData[i].type != 0)
      return CUDA_ERROR_NOT_SUPPORTED;  // simgpu's edges carry no data
  }
  return ToResult(simgpu::AddGraphDependencies(ToGraph(hGraph), f, t));
}

CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                size_t numDependencies) {
  return cuGraphAddDependencies_v2(hGraph, from, to, nullptr, numDependencies);
}

CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (simgpu::driver::ContextDevice(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
  std::vector<simgpu::GraphNode*> deps;
  simgpu::CopyParams copy;
  if (phGraphNode == nullptr || copyParams == nullptr || !Deps(dependencies, numDependencies, &deps) ||
      !FromMemcpy3D(*copyParams, &copy)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  simgpu::GraphNode* node = simgpu::AddMemcpyNode(ToGraph(hGraph), copy, deps);
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phGraphNode = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  simgpu::CopyParams copy;
  if (nodeParams == nullptr || !simgpu::GetCopyNode(ToNode(hNode), &copy)) return CUDA_ERROR_INVALID_VALUE;
  *nodeParams = ToMemcpy3D(copy);
  return CUDA_SUCCESS;
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  simgpu::CopyParams copy;
  if (nodeParams == nullptr || !FromMemcpy3D(*nodeParams, &copy) || !simgpu::SetCopyNode(ToNode(hNode), copy))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (simgpu::driver::ContextDevice(ctx) < 0) return CUDA_ERROR_INVALID_CONTEXT;
  std::vector<simgpu::GraphNode*> deps;
  if (phGraphNode == nullptr || memsetParams == nullptr || !Deps(dependencies, numDependencies, &deps))
    return CUDA_ERROR_INVALID_VALUE;
  simgpu::GraphNode* node = simgpu::AddMemsetNode(ToGraph(hGraph), FromMemset(*memsetParams), deps);
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phGraphNode = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  simgpu::MemsetParams m;
  if (nodeParams == nullptr || !simgpu::GetMemsetNode(ToNode(hNode), &m)) return CUDA_ERROR_INVALID_VALUE;
  *nodeParams = CUDA_MEMSET_NODE_PARAMS{reinterpret_cast<CUdeviceptr>(m.dst), m.pitch, m.value, m.element_size,
                                        m.width, m.height};
  return CUDA_SUCCESS;
}

CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (nodeParams == nullptr || !simgpu::SetMemsetNode(ToNode(hNode), FromMemset(*nodeParams)))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                            size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  std::vector<simgpu::GraphNode*> deps;
  if (phGraphNode == nullptr || nodeParams == nullptr || !Deps(dependencies, numDependencies, &deps))
    return CUDA_ERROR_INVALID_VALUE;
  simgpu::GraphNode* node = simgpu::AddHostNode(ToGraph(hGraph), nodeParams->fn, nodeParams->userData, deps);
  if (node == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phGraphNode = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  simgpu::HostFunction fn = nullptr;
  void* data = nullptr;
  if (nodeParams == nullptr || !simgpu::GetHostNode(ToNode(hNode), &fn, &data)) return CUDA_ERROR_INVALID_VALUE;
  nodeParams->fn = fn;
  nodeParams->userData = data;
  return CUDA_SUCCESS;
}

CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (nodeParams == nullptr || !simgpu::SetHostNode(ToNode(hNode), nodeParams->fn, nodeParams->userData))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  CUresult r = GetKernel(hNode, nodeParams);
  if (r == CUDA_SUCCESS) nodeParams->ctx = simgpu::driver::PrimaryContext(simgpu::CurrentDevice());
  return r;
}

CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return GetKernel(hNode, nodeParams);
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (nodeParams != nullptr && nodeParams->func == nullptr && nodeParams->kern != nullptr)
    return SetKernel(hNode, nodeParams, reinterpret_cast<CUfunction>(nodeParams->kern));
  return SetKernel(hNode, nodeParams, nodeParams != nullptr ? nodeParams->func : nullptr);
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return SetKernel(hNode, nodeParams, nodeParams != nullptr ? nodeParams->func : nullptr);
}

// simgpu keeps no kernel node attributes (every node has the defaults), so copying them checks the nodes only.
CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  return IsKernel(dst) && IsKernel(src) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  cudaGraphNodeType t;
  if (type == nullptr || !simgpu::GraphNodeType(ToNode(hNode), &t)) return CUDA_ERROR_INVALID_VALUE;
  *type = static_cast<CUgraphNodeType>(t);  // the runtime's node types have the driver's values
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroyNode(CUgraphNode hNode) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  return ToResult(simgpu::DestroyGraphNode(ToNode(hNode)));
}

CUresult cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (phGraphClone == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simgpu::Graph* clone = simgpu::CloneGraph(ToGraph(originalGraph));
  if (clone == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phGraphClone = reinterpret_cast<CUgraph>(clone);
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  if (phNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  simgpu::GraphNode* found = simgpu::FindInClone(ToNode(hOriginalNode), ToGraph(hClonedGraph));
  if (found == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phNode = reinterpret_cast<CUgraphNode>(found);
  return CUDA_SUCCESS;
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  CUresult r = simgpu::driver::Ready();
  if (r != CUDA_SUCCESS) return r;
  simgpu::Graph* child = phGraph == nullptr ? nullptr : simgpu::ChildGraphOf(ToNode(hNode));
  if (child == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = reinterpret_cast<CUgraph>(child);
  return CUDA_SUCCESS;
}

}  // extern "C"
