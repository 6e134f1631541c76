// Internal to libcudnn.so.9 (simgpu): builds the model of an operation graph at its finalization.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_BUILD_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_BUILD_H_

#include <cudnn.h>

#include <memory>
#include <vector>

#include "tools/simgpu/cudnn/graph_model.h"

namespace simgpu::cudnn {

// Merges the operations' tensors by unique id (CUDNN_STATUS_BAD_PARAM when one uid names tensors that differ),
// orders the operations so that every virtual tensor is written before it is read, and records whether simgpu
// can execute the graph (GraphModel::unsupported) and whether it is an attention graph. A graph simgpu cannot
// execute still finalizes, as on NVIDIA's library a graph no engine supports does; its heuristics return no
// engine configuration.
cudnnStatus_t BuildGraphModel(const std::vector<OpSpec>& ops, std::shared_ptr<GraphModel>* out);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_BUILD_H_
