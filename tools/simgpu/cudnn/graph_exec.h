// Internal to libcudnn.so.9 (simgpu): runs a graph model on the calling thread (the stream worker).
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_EXEC_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_EXEC_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudnn/graph_model.h"

namespace simgpu::cudnn {

// One execution's memory and fault-site numbers, fixed on the host at cudnnBackendExecute.
struct GraphLaunch {
  std::shared_ptr<const GraphModel> model;
  std::vector<void*> data;                             // per tensor: user memory; nullptr for virtual tensors
  std::vector<std::vector<unsigned char>> by_value;    // per tensor: the by-value scalar's bytes, read at Execute
  std::vector<int64_t> conv_calls;                     // per operation: its conv call number, -1 for others
  std::vector<std::vector<Fault>> conv_faults;         // per operation
  int64_t attn_call = -1;                              // the attn call number, -1 for other graphs
  std::vector<Fault> attn_faults;
  int64_t launch = 0;                                  // numbers matmuls of non-attention graphs (random order)
};

// Runs the operations in order; virtual tensors live in buffers allocated here for the execution. Faults: after
// a convolution operation writes its output, its conv faults (conv.h, ApplyConvFaults); after the attention
// operation writes the attention output, the attn faults, each elem an element of that tensor in memory order (of
// a ragged output, among the elements that exist)
// (an elem outside it stops the process, simgpu::CheckFaultElement).
void RunGraph(const GraphLaunch& launch);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_EXEC_H_
