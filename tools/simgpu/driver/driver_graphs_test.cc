// simgpu's libcuda.so.1 on its own: the graph node calls a tool uses to edit a graph someone else built (the ttrace
// shim's snapshot nodes in cuDNN's native CUDA graphs, docs/design.md "cuDNN's native CUDA graphs"): memcpy and
// host nodes added through the driver, edges added after the nodes, node types, clones and find-in-clone, node
// destruction, and kernel node parameters copied from a clone's node back to the original's (the recipe measured
// on an H200 by tools/gpu/cudnn_native_graph_probe.cc, E5).
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "gtest/gtest.h"

namespace {

struct Log {
  std::mutex mu;
  std::vector<int> order;
  std::vector<int> Take() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<int> out;
    out.swap(order);
    return out;
  }
};
struct Entry {
  Log* log;
  int tag;
};
void Append(void* p) {
  auto* e = static_cast<Entry*>(p);
  std::lock_guard<std::mutex> lock(e->log->mu);
  e->log->order.push_back(e->tag);
}

class DriverGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(cuStreamDestroy_v2(stream_), CUDA_SUCCESS); }

  // A graph captured on stream_ whose one node (a kernel node in simgpu: captured work) appends `tag` to log.
  CUgraph Captured(Entry* entry) {
    CUgraph graph = nullptr;
    EXPECT_EQ(cuStreamBeginCapture_v2(stream_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    EXPECT_EQ(cuLaunchHostFunc(stream_, Append, entry), CUDA_SUCCESS);
    EXPECT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_SUCCESS);
    return graph;
  }

  std::vector<CUgraphNode> Nodes(CUgraph graph) {
    size_t n = 0;
    EXPECT_EQ(cuGraphGetNodes(graph, nullptr, &n), CUDA_SUCCESS);
    std::vector<CUgraphNode> nodes(n);
    EXPECT_EQ(cuGraphGetNodes(graph, nodes.data(), &n), CUDA_SUCCESS);
    return nodes;
  }

  void Launch(CUgraphExec exec) {
    ASSERT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  }

  CUDA_MEMCPY3D Copy(void* dst, const void* src, size_t bytes) {
    CUDA_MEMCPY3D m = {};
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = reinterpret_cast<CUdeviceptr>(src);
    m.srcPitch = bytes;
    m.srcHeight = 1;
    m.dstMemoryType = CU_MEMORYTYPE_HOST;
    m.dstHost = dst;
    m.dstPitch = bytes;
    m.dstHeight = 1;
    m.WidthInBytes = bytes;
    m.Height = 1;
    m.Depth = 1;
    return m;
  }

  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
};

// Snapshot nodes added around a graph's work after it was built: a copy made a dependency of the old root after
// both existed runs before it (launch order follows the edges, not creation order), the host node after the leaf.
TEST_F(DriverGraphs, NodesAddedAroundExistingWorkRunInEdgeOrder) {
  Log log;
  Entry work{&log, 1}, done{&log, 2};
  CUgraph graph = Captured(&work);
  const std::vector<CUgraphNode> cudnn = Nodes(graph);
  ASSERT_EQ(cudnn.size(), 1u);
  CUgraphNodeType type;
  ASSERT_EQ(cuGraphNodeGetType(cudnn[0], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_KERNEL) << "captured work presents as a kernel node";

  CUdeviceptr src = 0;
  ASSERT_EQ(cuMemAlloc_v2(&src, 16), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32_v2(src, 5, 4), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  uint32_t stage[4] = {};
  const CUDA_MEMCPY3D m = Copy(stage, reinterpret_cast<void*>(src), sizeof(stage));
  CUgraphNode copy = nullptr, host = nullptr;
  EXPECT_EQ(cuGraphAddMemcpyNode(&copy, graph, nullptr, 0, &m, nullptr), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(cuGraphAddMemcpyNode(&copy, graph, nullptr, 0, &m, ctx_), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddDependencies(graph, &copy, &cudnn[0], 1), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphAddDependencies(graph, &copy, &cudnn[0], 1), CUDA_ERROR_INVALID_VALUE) << "existing edge";
  EXPECT_EQ(cuGraphAddDependencies(graph, &copy, &copy, 1), CUDA_ERROR_INVALID_VALUE) << "self edge";
  CUDA_HOST_NODE_PARAMS hp = {Append, &done};
  ASSERT_EQ(cuGraphAddHostNode(&host, graph, &cudnn[0], 1, &hp), CUDA_SUCCESS);
  // A host node created after the work and made its dependency afterwards: it must run first.
  Entry first{&log, 0};
  CUDA_HOST_NODE_PARAMS fp = {Append, &first};
  CUgraphNode pre = nullptr;
  ASSERT_EQ(cuGraphAddHostNode(&pre, graph, nullptr, 0, &fp), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddDependencies(graph, &pre, &cudnn[0], 1), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphNodeGetType(copy, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMCPY);
  ASSERT_EQ(cuGraphNodeGetType(host, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_HOST);
  size_t roots = 0;
  CUgraphNode root = nullptr;
  ASSERT_EQ(cuGraphGetRootNodes(graph, nullptr, &roots), CUDA_SUCCESS);
  ASSERT_EQ(roots, 2u);
  roots = 1;
  ASSERT_EQ(cuGraphGetRootNodes(graph, &root, &roots), CUDA_SUCCESS);
  EXPECT_EQ(roots, 1u);
  EXPECT_EQ(root, copy);
  CUgraphNode dependent = nullptr;
  size_t n = 1;
  ASSERT_EQ(cuGraphNodeGetDependentNodes(cudnn[0], &dependent, &n), CUDA_SUCCESS);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(dependent, host);

  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  Launch(exec);
  EXPECT_EQ(stage[3], 5u);
  EXPECT_EQ(log.Take(), (std::vector<int>{0, 1, 2}));

  CUDA_MEMCPY3D back = {};
  ASSERT_EQ(cuGraphMemcpyNodeGetParams(copy, &back), CUDA_SUCCESS);
  EXPECT_EQ(back.srcDevice, src);
  EXPECT_EQ(back.dstHost, static_cast<void*>(stage));
  EXPECT_EQ(back.WidthInBytes, sizeof(stage));
  EXPECT_EQ(back.srcMemoryType, CU_MEMORYTYPE_DEVICE);
  EXPECT_EQ(back.dstMemoryType, CU_MEMORYTYPE_HOST);
  CUDA_HOST_NODE_PARAMS hb = {};
  ASSERT_EQ(cuGraphHostNodeGetParams(host, &hb), CUDA_SUCCESS);
  EXPECT_EQ(hb.fn, &Append);
  EXPECT_EQ(hb.userData, &done);
  EXPECT_EQ(cuGraphHostNodeGetParams(copy, &hb), CUDA_ERROR_INVALID_VALUE) << "not a host node";
  EXPECT_EQ(cuGraphMemcpyNodeGetParams(host, &back), CUDA_ERROR_INVALID_VALUE) << "not a memcpy node";

  // A cycle is refused at instantiation.
  ASSERT_EQ(cuGraphAddDependencies(graph, &host, &copy, 1), CUDA_SUCCESS);
  CUgraphExec cyclic = nullptr;
  EXPECT_EQ(cuGraphInstantiateWithFlags(&cyclic, graph, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(src), CUDA_SUCCESS);
}

// The E5 recipe: clone the graph, destroy the tool's nodes in the clone (found with find-in-clone), let the
// library rebind the clone's kernel nodes, copy each kernel node's parameters back into the original (get from
// the clone, set on the original, copy attributes), retarget the tool's copy. The original keeps its nodes (an
// executable updates from it), runs the new work and still runs the tool's nodes.
TEST_F(DriverGraphs, KernelParametersCopiedBackFromAnEditedClone) {
  Log log;
  Entry old_work{&log, 1}, new_work{&log, 7}, done{&log, 2};
  CUgraph graph = Captured(&old_work);
  CUgraph other = Captured(&new_work);  // stands for the library's rebinding
  const CUgraphNode work = Nodes(graph)[0];
  const CUgraphNode other_work = Nodes(other)[0];
  uint32_t a[2] = {11, 12}, b[2] = {21, 22}, stage[2] = {};
  CUDA_MEMCPY3D m = Copy(stage, a, sizeof(a));
  m.srcMemoryType = CU_MEMORYTYPE_HOST;
  m.srcHost = a;
  CUgraphNode copy = nullptr, host = nullptr;
  ASSERT_EQ(cuGraphAddMemcpyNode(&copy, graph, nullptr, 0, &m, ctx_), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddDependencies(graph, &copy, &work, 1), CUDA_SUCCESS);
  CUDA_HOST_NODE_PARAMS hp = {Append, &done};
  ASSERT_EQ(cuGraphAddHostNode(&host, graph, &work, 1, &hp), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  Launch(exec);
  EXPECT_EQ(log.Take(), (std::vector<int>{1, 2}));
  EXPECT_EQ(stage[1], 12u);

  CUgraph clone = nullptr;
  ASSERT_EQ(cuGraphClone(&clone, graph), CUDA_SUCCESS);
  CUgraphNode c_copy = nullptr, c_host = nullptr, c_work = nullptr;
  ASSERT_EQ(cuGraphNodeFindInClone(&c_copy, copy, clone), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphNodeFindInClone(&c_host, host, clone), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphNodeFindInClone(&c_work, work, clone), CUDA_SUCCESS);
  EXPECT_NE(c_work, work);
  CUgraphNode none = nullptr;
  EXPECT_EQ(cuGraphNodeFindInClone(&none, other_work, clone), CUDA_ERROR_INVALID_VALUE) << "not of the source";
  CUDA_HOST_NODE_PARAMS ch = {};
  ASSERT_EQ(cuGraphHostNodeGetParams(c_host, &ch), CUDA_SUCCESS);
  EXPECT_EQ(ch.userData, &done) << "a clone keeps the parameters";
  ASSERT_EQ(cuGraphDestroyNode(c_host), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphDestroyNode(c_copy), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroyNode(c_copy), CUDA_ERROR_INVALID_VALUE) << "already destroyed";
  EXPECT_EQ(Nodes(clone).size(), 1u);
  size_t deps = 5;
  ASSERT_EQ(cuGraphNodeGetDependencies(c_work, nullptr, &deps), CUDA_SUCCESS);
  EXPECT_EQ(deps, 0u) << "the destroyed node's edges went with it";
  EXPECT_EQ(Nodes(graph).size(), 3u) << "the original keeps its nodes";

  // "The library rebinds the clone": its node gets other's kernel.
  CUDA_KERNEL_NODE_PARAMS kp = {};
  ASSERT_EQ(cuGraphKernelNodeGetParams_v2(other_work, &kp), CUDA_SUCCESS);
  EXPECT_NE(kp.func, nullptr);
  EXPECT_EQ(kp.ctx, ctx_);
  ASSERT_EQ(cuGraphKernelNodeSetParams_v2(c_work, &kp), CUDA_SUCCESS);
  // Copy back, node by node, and retarget the tool's copy.
  CUDA_KERNEL_NODE_PARAMS back = {};
  ASSERT_EQ(cuGraphKernelNodeGetParams_v2(c_work, &back), CUDA_SUCCESS);
  EXPECT_EQ(back.func, kp.func);
  ASSERT_EQ(cuGraphKernelNodeSetParams_v2(work, &back), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphKernelNodeCopyAttributes(work, c_work), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphKernelNodeCopyAttributes(work, copy), CUDA_ERROR_INVALID_VALUE) << "not a kernel node";
  m.srcHost = b;
  ASSERT_EQ(cuGraphMemcpyNodeSetParams(copy, &m), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphDestroy(clone), CUDA_SUCCESS);

  // The executable keeps the old work until updated from the graph, which has its topology.
  Launch(exec);
  EXPECT_EQ(log.Take(), (std::vector<int>{1, 2}));
  EXPECT_EQ(stage[1], 12u);
  CUgraphExecUpdateResultInfo info = {};
  ASSERT_EQ(cuGraphExecUpdate_v2(exec, graph, &info), CUDA_SUCCESS);
  Launch(exec);
  EXPECT_EQ(log.Take(), (std::vector<int>{7, 2}));
  EXPECT_EQ(stage[1], 22u);
  // A fresh instantiation too.
  CUgraphExec fresh = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&fresh, graph, 0), CUDA_SUCCESS);
  Launch(fresh);
  EXPECT_EQ(log.Take(), (std::vector<int>{7, 2}));

  // A function that is not simgpu's (application device code) is refused, and the node keeps its kernel.
  CUDA_KERNEL_NODE_PARAMS bad = back;
  bad.func = reinterpret_cast<CUfunction>(&bad);
  EXPECT_EQ(cuGraphKernelNodeSetParams_v2(work, &bad), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuGraphKernelNodeSetParams_v2(copy, &back), CUDA_ERROR_INVALID_VALUE) << "not a kernel node";
  CUDA_KERNEL_NODE_PARAMS_v1 v1 = {};
  ASSERT_EQ(cuGraphKernelNodeGetParams(work, &v1), CUDA_SUCCESS);
  EXPECT_EQ(v1.func, back.func);
  EXPECT_EQ(cuGraphExecDestroy(fresh), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(other), CUDA_SUCCESS);
}

// A memset node fills a pitched block at each launch; its parameters read back as set and can be replaced.
TEST_F(DriverGraphs, MemsetNodes) {
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc_v2(&d, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8_v2(d, 0, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  // 2 rows of 3 16-bit elements, rows 16 bytes apart.
  CUDA_MEMSET_NODE_PARAMS p = {d, 16, 0xABCD1234u, 2, 3, 2};
  CUgraphNode node = nullptr;
  EXPECT_EQ(cuGraphAddMemsetNode(&node, graph, nullptr, 0, &p, nullptr), CUDA_ERROR_INVALID_CONTEXT);
  CUDA_MEMSET_NODE_PARAMS bad = p;
  bad.elementSize = 3;
  EXPECT_EQ(cuGraphAddMemsetNode(&node, graph, nullptr, 0, &bad, ctx_), CUDA_ERROR_INVALID_VALUE);
  bad = p;
  bad.width = 9;  // 18 bytes in a 16-byte pitch
  EXPECT_EQ(cuGraphAddMemsetNode(&node, graph, nullptr, 0, &bad, ctx_), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuGraphAddMemsetNode(&node, graph, nullptr, 0, &p, ctx_), CUDA_SUCCESS);
  CUgraphNodeType type;
  ASSERT_EQ(cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMSET);
  const auto* u16 = reinterpret_cast<const uint16_t*>(d);
  EXPECT_EQ(u16[0], 0u) << "adding runs nothing";
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  Launch(exec);
  EXPECT_EQ((std::vector<uint16_t>(u16, u16 + 4)), (std::vector<uint16_t>{0x1234, 0x1234, 0x1234, 0}));
  EXPECT_EQ((std::vector<uint16_t>(u16 + 8, u16 + 12)), (std::vector<uint16_t>{0x1234, 0x1234, 0x1234, 0}));
  EXPECT_EQ(u16[16], 0u) << "two rows only";
  CUDA_MEMSET_NODE_PARAMS back = {};
  ASSERT_EQ(cuGraphMemsetNodeGetParams(node, &back), CUDA_SUCCESS);
  EXPECT_EQ(back.dst, d);
  EXPECT_EQ(back.pitch, 16u);
  EXPECT_EQ(back.value, 0xABCD1234u);
  EXPECT_EQ(back.elementSize, 2u);
  EXPECT_EQ(back.width, 3u);
  EXPECT_EQ(back.height, 2u);
  back.value = 7;
  back.elementSize = 1;
  back.height = 1;
  ASSERT_EQ(cuGraphMemsetNodeSetParams(node, &back), CUDA_SUCCESS);
  CUgraphExecUpdateResultInfo info = {};
  ASSERT_EQ(cuGraphExecUpdate_v2(exec, graph, &info), CUDA_SUCCESS);
  Launch(exec);
  const auto* u8 = reinterpret_cast<const uint8_t*>(d);
  EXPECT_EQ((std::vector<uint8_t>(u8, u8 + 4)), (std::vector<uint8_t>{7, 7, 7, 0x12}));
  CUDA_HOST_NODE_PARAMS hp = {};
  EXPECT_EQ(cuGraphHostNodeGetParams(node, &hp), CUDA_ERROR_INVALID_VALUE) << "not a host node";
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(d), CUDA_SUCCESS);
}

}  // namespace
