// Graph nodes built through the CUDA runtime API (not by stream capture): memcpy nodes (1D and pitched 3D) and host
// nodes, their parameters, edges added after the nodes, node destruction, clones and find-in-clone, node types,
// and what the runtime answers for simgpu's kernel nodes (library work, which cudaGraphKernelNodeGetParams refuses
// as it does cuDNN's driver-side kernels on a GPU).
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace {

void Increment(void* p) { ++*static_cast<std::atomic<int>*>(p); }
void Twice(void* p) { *static_cast<std::atomic<int>*>(p) += 2; }

class GraphNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaGraphCreate(&graph_, 0), cudaSuccess);
  }
  void TearDown() override {
    EXPECT_EQ(cudaGraphDestroy(graph_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }
  void Run(cudaGraph_t graph) {
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  }
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
};

TEST_F(GraphNodes, MemcpyNodesCopyAtEachLaunchWithTheirParameters) {
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 12 * sizeof(float)), cudaSuccess);
  std::vector<float> host(12);
  for (int i = 0; i < 12; ++i) host[i] = static_cast<float>(i);
  float out[12] = {};
  cudaGraphNode_t up = nullptr, down = nullptr;
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&up, graph_, nullptr, 0, dev, host.data(), sizeof(out), cudaMemcpyHostToDevice),
            cudaSuccess);
  // Down: a pitched 2D copy of a 2 x 3 block (rows of 4 floats, columns 1..3) into a packed 2 x 3 array.
  cudaMemcpy3DParms p = {};
  p.srcPtr = cudaPitchedPtr{dev, 4 * sizeof(float), 4, 3};
  p.srcPos = cudaPos{1 * sizeof(float), 1, 0};
  p.dstPtr = cudaPitchedPtr{out, 3 * sizeof(float), 3, 2};
  p.extent = cudaExtent{3 * sizeof(float), 2, 1};
  p.kind = cudaMemcpyDeviceToHost;
  ASSERT_EQ(cudaGraphAddMemcpyNode(&down, graph_, &up, 1, &p), cudaSuccess);
  cudaGraphNodeType type;
  ASSERT_EQ(cudaGraphNodeGetType(down, &type), cudaSuccess);
  EXPECT_EQ(type, cudaGraphNodeTypeMemcpy);
  EXPECT_EQ(out[0], 0.0f) << "adding a node runs nothing";
  Run(graph_);
  EXPECT_EQ(std::vector<float>(out, out + 6), (std::vector<float>{5, 6, 7, 9, 10, 11}));

  cudaMemcpy3DParms back = {};
  ASSERT_EQ(cudaGraphMemcpyNodeGetParams(down, &back), cudaSuccess);
  EXPECT_EQ(back.srcPtr.ptr, dev);
  EXPECT_EQ(back.srcPtr.pitch, 4 * sizeof(float));
  EXPECT_EQ(back.srcPos.y, 1u);
  EXPECT_EQ(back.extent.height, 2u);
  EXPECT_EQ(back.kind, cudaMemcpyDeviceToHost);
  ASSERT_EQ(cudaGraphMemcpyNodeGetParams(up, &back), cudaSuccess);
  EXPECT_EQ(back.extent.width, sizeof(out));
  EXPECT_EQ(back.extent.height, 1u);
  EXPECT_EQ(back.extent.depth, 1u);

  // New parameters: later launches copy what they now say.
  for (float& f : host) f += 100;
  ASSERT_EQ(cudaGraphMemcpyNodeSetParams1D(down, out, dev, 2 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  Run(graph_);
  EXPECT_EQ(out[0], 100.0f);
  EXPECT_EQ(out[1], 101.0f);
  EXPECT_EQ(out[2], 7.0f) << "beyond the new extent";

  // Refusals: CUDA arrays (not modeled), an empty extent, rows wider than the pitch, a bad kind.
  cudaMemcpy3DParms bad = p;
  bad.extent.width = 0;
  cudaGraphNode_t n = nullptr;
  EXPECT_EQ(cudaGraphAddMemcpyNode(&n, graph_, nullptr, 0, &bad), cudaErrorInvalidValue);
  bad = p;
  bad.extent.width = 5 * sizeof(float);
  EXPECT_EQ(cudaGraphAddMemcpyNode(&n, graph_, nullptr, 0, &bad), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphMemcpyNodeSetParams(down, &bad), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphAddMemcpyNode1D(&n, graph_, nullptr, 0, dev, out, 4, static_cast<cudaMemcpyKind>(9)),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

TEST_F(GraphNodes, HostNodesAndEdgesAddedLater) {
  std::atomic<int> count{0};
  cudaHostNodeParams hp = {Increment, &count};
  cudaGraphNode_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaGraphAddHostNode(&a, graph_, nullptr, 0, &hp), cudaSuccess);
  ASSERT_EQ(cudaGraphAddHostNode(&b, graph_, nullptr, 0, &hp), cudaSuccess);
  cudaHostNodeParams back = {};
  ASSERT_EQ(cudaGraphHostNodeGetParams(b, &back), cudaSuccess);
  EXPECT_EQ(back.fn, &Increment);
  EXPECT_EQ(back.userData, &count);
  cudaHostNodeParams twice = {Twice, &count};
  ASSERT_EQ(cudaGraphHostNodeSetParams(b, &twice), cudaSuccess);
  cudaHostNodeParams null_fn = {nullptr, &count};
  EXPECT_EQ(cudaGraphHostNodeSetParams(b, &null_fn), cudaErrorInvalidValue);
  Run(graph_);
  EXPECT_EQ(count.load(), 3);

  ASSERT_EQ(cudaGraphAddDependencies(graph_, &b, &a, nullptr, 1), cudaSuccess);
  EXPECT_EQ(cudaGraphAddDependencies(graph_, &b, &a, nullptr, 1), cudaErrorInvalidValue) << "exists";
  cudaGraph_t other = nullptr;
  ASSERT_EQ(cudaGraphCreate(&other, 0), cudaSuccess);
  cudaGraphNode_t c = nullptr;
  ASSERT_EQ(cudaGraphAddHostNode(&c, other, nullptr, 0, &hp), cudaSuccess);
  EXPECT_EQ(cudaGraphAddDependencies(graph_, &c, &a, nullptr, 1), cudaErrorInvalidValue) << "another graph's";
  cudaGraphEdgeData programmatic = {};
  programmatic.type = cudaGraphDependencyTypeProgrammatic;
  EXPECT_EQ(cudaGraphAddDependencies(graph_, &a, &c, &programmatic, 1), cudaErrorNotSupported);
  size_t n = 0;
  ASSERT_EQ(cudaGraphNodeGetDependencies(a, nullptr, nullptr, &n), cudaSuccess);
  EXPECT_EQ(n, 1u);

  // Destroying a node removes its edges; its handle is dead.
  ASSERT_EQ(cudaGraphDestroyNode(b), cudaSuccess);
  ASSERT_EQ(cudaGraphNodeGetDependencies(a, nullptr, nullptr, &n), cudaSuccess);
  EXPECT_EQ(n, 0u);
  cudaGraphNodeType type;
  EXPECT_EQ(cudaGraphNodeGetType(b, &type), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphDestroyNode(b), cudaErrorInvalidValue);
  count = 0;
  Run(graph_);
  EXPECT_EQ(count.load(), 1);
  EXPECT_EQ(cudaGraphDestroy(other), cudaSuccess);
}

TEST_F(GraphNodes, ClonesAreIndependentAndFindTheirNodes) {
  std::atomic<int> original{0}, cloned{0};
  cudaHostNodeParams hp = {Increment, &original};
  cudaGraphNode_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaGraphAddHostNode(&a, graph_, nullptr, 0, &hp), cudaSuccess);
  ASSERT_EQ(cudaGraphAddHostNode(&b, graph_, &a, 1, &hp), cudaSuccess);
  cudaGraph_t clone = nullptr;
  ASSERT_EQ(cudaGraphClone(&clone, graph_), cudaSuccess);
  cudaGraphNode_t ca = nullptr, cb = nullptr;
  ASSERT_EQ(cudaGraphNodeFindInClone(&ca, a, clone), cudaSuccess);
  ASSERT_EQ(cudaGraphNodeFindInClone(&cb, b, clone), cudaSuccess);
  EXPECT_NE(ca, a);
  cudaGraphNode_t dep = nullptr;
  size_t n = 1;
  ASSERT_EQ(cudaGraphNodeGetDependencies(cb, &dep, nullptr, &n), cudaSuccess);
  EXPECT_EQ(dep, ca) << "the clone's edges join the clone's nodes";
  cudaGraphNode_t later = nullptr, found = nullptr;
  ASSERT_EQ(cudaGraphAddHostNode(&later, graph_, nullptr, 0, &hp), cudaSuccess);
  EXPECT_EQ(cudaGraphNodeFindInClone(&found, later, clone), cudaErrorInvalidValue) << "added after the clone";
  EXPECT_EQ(cudaGraphNodeFindInClone(&found, ca, clone), cudaErrorInvalidValue) << "a node of the clone itself";
  ASSERT_EQ(cudaGraphDestroyNode(later), cudaSuccess);

  cudaHostNodeParams other = {Increment, &cloned};
  ASSERT_EQ(cudaGraphHostNodeSetParams(ca, &other), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroyNode(cb), cudaSuccess);
  Run(graph_);
  EXPECT_EQ(original.load(), 2) << "editing the clone left the original as it was";
  EXPECT_EQ(cloned.load(), 0);
  Run(clone);
  EXPECT_EQ(original.load(), 2);
  EXPECT_EQ(cloned.load(), 1);
  EXPECT_EQ(cudaGraphDestroy(clone), cudaSuccess);
  EXPECT_EQ(cudaGraphNodeFindInClone(&found, a, clone), cudaErrorInvalidValue) << "a destroyed clone";
}

TEST_F(GraphNodes, MemsetNodeFillsAtEachLaunch) {
  uint32_t* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), 8 * sizeof(uint32_t)), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, 8 * sizeof(uint32_t)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the legacy stream's memset vs. the non-blocking launch stream
  cudaMemsetParams p = {};
  p.dst = dev;
  p.value = 0xDEADBEEF;
  p.elementSize = 4;
  p.width = 5;
  p.height = 1;
  cudaGraphNode_t node = nullptr;
  ASSERT_EQ(cudaGraphAddMemsetNode(&node, graph_, nullptr, 0, &p), cudaSuccess);
  cudaGraphNodeType type;
  ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
  EXPECT_EQ(type, cudaGraphNodeTypeMemset);
  Run(graph_);
  uint32_t host[8];
  ASSERT_EQ(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[4], 0xDEADBEEFu);
  EXPECT_EQ(host[5], 0u);
  cudaMemsetParams back = {};
  ASSERT_EQ(cudaGraphMemsetNodeGetParams(node, &back), cudaSuccess);
  EXPECT_EQ(back.dst, static_cast<void*>(dev));
  EXPECT_EQ(back.width, 5u);
  back.width = 7;
  ASSERT_EQ(cudaGraphMemsetNodeSetParams(node, &back), cudaSuccess);
  Run(graph_);
  ASSERT_EQ(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[6], 0xDEADBEEFu);
  EXPECT_EQ(host[7], 0u);
  back.elementSize = 8;
  EXPECT_EQ(cudaGraphMemsetNodeSetParams(node, &back), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

// Captured work is a kernel node; its function is library (driver-side) work, which the runtime's getter refuses
// as it refuses cuDNN's kernels on a GPU (98, measured); the driver's getter reads it (driver_graphs_test.cc).
TEST_F(GraphNodes, KernelNodesOfLibraryWork) {
  std::atomic<int> count{0};
  cudaGraph_t captured = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(stream_, Increment, &count), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(stream_, Increment, &count), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream_, &captured), cudaSuccess);
  size_t n = 2;
  cudaGraphNode_t nodes[2];
  ASSERT_EQ(cudaGraphGetNodes(captured, nodes, &n), cudaSuccess);
  cudaGraphNodeType type;
  ASSERT_EQ(cudaGraphNodeGetType(nodes[0], &type), cudaSuccess);
  EXPECT_EQ(type, cudaGraphNodeTypeKernel);
  cudaKernelNodeParams kp = {};
  EXPECT_EQ(cudaGraphKernelNodeGetParams(nodes[0], &kp), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGraphKernelNodeCopyAttributes(nodes[1], nodes[0]), cudaSuccess);
  cudaGraphNode_t host = nullptr;
  cudaHostNodeParams hp = {Increment, &count};
  ASSERT_EQ(cudaGraphAddHostNode(&host, captured, nullptr, 0, &hp), cudaSuccess);
  EXPECT_EQ(cudaGraphKernelNodeGetParams(host, &kp), cudaErrorInvalidValue) << "not a kernel node";
  EXPECT_EQ(cudaGraphKernelNodeCopyAttributes(host, nodes[0]), cudaErrorInvalidValue);
  // A cycle: refused at instantiation.
  ASSERT_EQ(cudaGraphAddDependencies(captured, &nodes[1], &host, nullptr, 1), cudaSuccess);
  Run(captured);
  EXPECT_EQ(count.load(), 3);
  ASSERT_EQ(cudaGraphAddDependencies(captured, &host, &nodes[0], nullptr, 1), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  EXPECT_EQ(cudaGraphInstantiate(&exec, captured, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphDestroy(captured), cudaSuccess);
}

}  // namespace
