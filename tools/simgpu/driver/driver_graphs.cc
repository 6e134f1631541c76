// Executable graphs through the driver: instantiate, launch, destroy, on the core's graphs (the ones stream capture
// makes, through the runtime or the driver), with the runtime's validation. Device-side launch is refused: simgpu
// runs no device code.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "tools/simgpu/driver/driver_internal.h"

using simgpu::driver::ToResult;

namespace {

simgpu::Graph* ToGraph(CUgraph g) { return reinterpret_cast<simgpu::Graph*>(g); }
simgpu::GraphExec* ToExec(CUgraphExec e) { return reinterpret_cast<simgpu::GraphExec*>(e); }

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
  *phGraphExec = reinterpret_cast<CUgraphExec>(simgpu::InstantiateGraph(ToGraph(hGraph)));
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

}  // extern "C"
