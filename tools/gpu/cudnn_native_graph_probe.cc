// cudnn_native_graph_probe: on a real GPU with real cuDNN, what cuDNN's native CUDA graph API
// (cudnnBackendPopulateCudaGraph / cudnnBackendUpdateCudaGraph) does with nodes it did not populate: the question
// the shim's design for capturing the operands of native-graph launches depends on (docs/design.md, "cuDNN's
// native CUDA graphs", has the results). Not part of the build (it needs real cuDNN): tools/device_check.sh builds
// it with nvcc against the cuDNN 9 of pip's nvidia-cudnn package and runs it. Exit status: the number of graphs on
// which E5 (the design the shim will follow) did not hold.
//
// For each small graph (FP32 convolution, FP32 ReLU, BF16 matmul, BF16 fused SDPA) it takes the first engine
// configuration of the heuristics (mode A, then fallback) whose engine has the native-CUDA-graph behavior note and
// whose plan finalizes, and:
//   E0 populate on pack A; node types, roots and leaves; launch == cudnnBackendExecute on A (bitwise)
//   E1 update a pure populated graph to pack B: status, cudaGraphExecUpdate, launch == execute on B
//   E2 populate on A, add foreign nodes (a D2D copy of the first input before cuDNN's roots, a D2D copy of the
//      first output after its leaves, a host node after that), launch; then update to B: status, launch again
//   E3 as E2, but the populated graph (with the foreign nodes) cloned into a child node of a program graph, and
//      the update called on the child's embedded graph (as cudnn-frontend does): status, cudaGraphExecUpdate
//   E4 as E3, but the foreign nodes destroyed before the update and re-added after it (same order and
//      dependencies, copy source from pack B): update status, cudaGraphExecChildGraphNodeSetParams (before and
//      after) and cudaGraphExecUpdate results, launch == execute on B, staging == B's input, host node ran once
//   E5 as E3, but the update called on a clone of the embedded graph with the foreign nodes removed
//      (cudaGraphNodeFindInClone), the parameters of cuDNN's nodes copied back node by node (kernel nodes through
//      the driver's calls, memset and memcpy nodes through the runtime's), the foreign copies' sources set to pack
//      B: the embedded graph keeps its nodes; SetParams (tried first), cudaGraphExecUpdate, a fresh instantiation
// Seen on cuDNN 9.19 / CUDA 13.0 / H200: E2 and E3 refused (5001 or 5003, graph unchanged); E4's update and exec
// update succeed but SetParams answers cudaErrorGraphExecUpdateFailure; E5 holds on the convolution, matmul and
// SDPA graphs; the ReLU graph gets no engine configuration at all.
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "shim/testing/cudnn_graph.h"

using ttrace::shim::testing::Desc;
using ttrace::shim::testing::Graph;

namespace {

[[noreturn]] void Die(const char* what, long code) {
  fprintf(stderr, "FATAL %s: %ld\n", what, code);
  exit(1);
}
#define CK(x) \
  if (long s_ = static_cast<long>(x); s_ != 0) Die(#x, s_)

struct Tensor {
  int64_t uid;
  size_t bytes;
  bool output;
  bool by_value = false;
};

struct Pack {
  std::map<int64_t, void*> ptrs;
  std::map<int64_t, std::vector<uint8_t>> host;
};

int g_host_runs = 0;
int g_e5_failures = 0;  // graphs with a native-graph plan on which E5 did not hold
void CUDART_CB HostFn(void* p) { ++*static_cast<int*>(p); }

std::vector<uint8_t> Read(void* dev, size_t n) {
  std::vector<uint8_t> h(n);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(h.data(), dev, n, cudaMemcpyDeviceToHost));
  return h;
}

const char* TypeName(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeKernel: return "kernel";
    case cudaGraphNodeTypeMemcpy: return "memcpy";
    case cudaGraphNodeTypeMemset: return "memset";
    case cudaGraphNodeTypeHost: return "host";
    case cudaGraphNodeTypeGraph: return "child";
    case cudaGraphNodeTypeEmpty: return "empty";
    default: return "other";
  }
}

void Describe(const char* what, cudaGraph_t g) {
  size_t n = 0;
  CK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  CK(cudaGraphGetNodes(g, nodes.data(), &n));
  size_t roots = 0;
  CK(cudaGraphGetRootNodes(g, nullptr, &roots));
  printf("  %s: %zu nodes, %zu roots:", what, n, roots);
  for (auto node : nodes) {
    cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(node, &t));
    size_t deps = 0, dependents = 0;
    CK(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &deps));
    CK(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &dependents));
    printf(" %s(in %zu, out %zu)", TypeName(t), deps, dependents);
  }
  printf("\n");
}

std::vector<cudaGraphNode_t> Roots(cudaGraph_t g) {
  size_t n = 0;
  CK(cudaGraphGetRootNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> r(n);
  CK(cudaGraphGetRootNodes(g, r.data(), &n));
  return r;
}

std::vector<cudaGraphNode_t> Leaves(cudaGraph_t g) {
  size_t n = 0;
  CK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n), leaves;
  CK(cudaGraphGetNodes(g, nodes.data(), &n));
  for (auto node : nodes) {
    size_t d = 0;
    CK(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &d));
    if (d == 0) leaves.push_back(node);
  }
  return leaves;
}

// The foreign nodes: copy in (before cuDNN's roots), copy out (after its leaves), host node (after copy out).
struct Foreign {
  cudaGraphNode_t in = nullptr, out = nullptr, host = nullptr;
};

cudaError_t AddForeign(cudaGraph_t g, const std::vector<cudaGraphNode_t>& roots,
                       const std::vector<cudaGraphNode_t>& leaves, void* stage_in, const void* src_in, size_t in_bytes,
                       void* stage_out, const void* src_out, size_t out_bytes, Foreign* f) {
  cudaError_t e = cudaGraphAddMemcpyNode1D(&f->in, g, nullptr, 0, stage_in, src_in, in_bytes, cudaMemcpyDeviceToDevice);
  if (e != cudaSuccess) return e;
  for (auto r : roots)
    if ((e = cudaGraphAddDependencies(g, &f->in, &r, nullptr, 1)) != cudaSuccess) return e;
  e = cudaGraphAddMemcpyNode1D(&f->out, g, leaves.data(), leaves.size(), stage_out, src_out, out_bytes,
                               cudaMemcpyDeviceToDevice);
  if (e != cudaSuccess) return e;
  cudaHostNodeParams hp = {};
  hp.fn = HostFn;
  hp.userData = &g_host_runs;
  return cudaGraphAddHostNode(&f->host, g, &f->out, 1, &hp);
}

bool Same(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) { return a == b; }

void Probe(const char* name, cudnnHandle_t handle, const std::function<std::vector<Tensor>(Graph&)>& build) {
  printf("== %s\n", name);
  Graph g(Die);
  const std::vector<Tensor> tensors = build(g);
  // Operation graph, then the heuristics' configurations (mode A, then fallback): the first whose engine carries
  // the native-CUDA-graph behavior note and whose plan finalizes (as cudnn-frontend's native-graph samples select).
  Desc opg = g.Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  g.Set(opg, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  g.Set(opg, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(g.ops().size()),
        g.ops().data());
  if (cudnnStatus_t s = cudnnBackendFinalize(opg); s != 0) {
    printf("  operation graph not finalized: %d\n", s);
    return;
  }
  Desc plan = nullptr;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (plan != nullptr) break;
    Desc heur = g.Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    g.Ref(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, opg);
    g.Set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (cudnnBackendFinalize(heur) != 0) continue;
    Desc cfgs[32];
    for (auto& c : cfgs) c = g.Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t count = 0;
    if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 32, &count,
                                 cfgs) != 0)
      continue;
    int native_count = 0;
    for (int64_t i = 0; i < count && plan == nullptr; ++i) {
      Desc eng = g.Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      int64_t n = 0, idx = -1, nn = 0;
      if (cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng))
        continue;
      cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &idx);
      cudnnBackendBehaviorNote_t notes[16];
      cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 16, &nn, notes);
      bool native = false;
      for (int64_t j = 0; j < nn; ++j) native |= notes[j] == CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API;
      if (!native) continue;
      ++native_count;
      Desc p = g.Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      g.Set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      g.Ref(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[i]);
      const cudnnStatus_t fs = cudnnBackendFinalize(p);
      printf("  heur mode %d: config %ld engine %ld has the native-graph note; plan finalize %d\n", mode,
             static_cast<long>(i), static_cast<long>(idx), fs);
      if (fs == 0) plan = p;
    }
    printf("  heur mode %d: %ld configurations, %d with the native-graph note\n", mode, static_cast<long>(count),
           native_count);
  }
  if (plan == nullptr) {
    printf("  no native-graph plan\n");
    return;
  }
  std::map<int64_t, size_t> sizes;
  for (const auto& t : tensors) sizes[t.uid] = t.bytes;
  std::mt19937 rng(11);
  auto make_pack = [&](Pack* p) {
    for (const auto& t : tensors) {
      std::vector<uint8_t> h(t.bytes);
      if (t.by_value) {
        float v = 0.125f;
        memcpy(h.data(), &v, 4);
        p->host[t.uid] = h;
        p->ptrs[t.uid] = p->host[t.uid].data();
        continue;
      }
      // Values in [-1, 1) as FP32 or small BF16 (bytes with a low exponent), never NaN.
      for (size_t i = 0; i + 1 < t.bytes; i += 2) {
        const uint16_t v = static_cast<uint16_t>((rng() & 0x807f) | 0x3e00);
        memcpy(&h[i], &v, 2);
      }
      void* d = nullptr;
      CK(cudaMalloc(&d, t.bytes));
      CK(cudaMemcpy(d, h.data(), t.bytes, cudaMemcpyHostToDevice));
      p->host[t.uid] = h;
      p->ptrs[t.uid] = d;
    }
  };
  Pack a, b;
  make_pack(&a);
  make_pack(&b);
  int64_t ws_bytes = 0, n = 0;
  cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws_bytes);
  void* ws = nullptr;
  if (ws_bytes > 0) CK(cudaMalloc(&ws, static_cast<size_t>(ws_bytes)));
  auto pack_desc = [&](Pack& p) {
    std::vector<int64_t> uids;
    std::vector<void*> ptrs;
    for (auto& [uid, ptr] : p.ptrs) uids.push_back(uid), ptrs.push_back(ptr);
    Desc d = g.Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    g.Set(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data());
    g.Set(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(ptrs.size()),
          ptrs.data());
    g.Set(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    CK(cudnnBackendFinalize(d));
    return d;
  };
  Desc pa = pack_desc(a), pb = pack_desc(b);
  const Tensor* in = nullptr;
  const Tensor* out = nullptr;
  for (const auto& t : tensors) {
    if (!t.output && !t.by_value && in == nullptr) in = &t;
    if (t.output && out == nullptr) out = &t;
  }
  auto outputs = [&](Pack& p) {
    std::vector<uint8_t> all;
    for (const auto& t : tensors)
      if (t.output) {
        auto h = Read(p.ptrs[t.uid], t.bytes);
        all.insert(all.end(), h.begin(), h.end());
      }
    return all;
  };
  auto clear = [&](Pack& p) {
    for (const auto& t : tensors)
      if (t.output) CK(cudaMemset(p.ptrs[t.uid], 0, t.bytes));
    CK(cudaDeviceSynchronize());
  };
  cudnnStatus_t ex = cudnnBackendExecute(handle, plan, pa);
  const auto ref_a = outputs(a);
  cudnnBackendExecute(handle, plan, pb);
  const auto ref_b = outputs(b);
  printf("  execute: status %d (A and B outputs differ: %s)\n", ex, ref_a != ref_b ? "yes" : "no");
  if (ex != 0) return;
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  auto launch = [&](cudaGraphExec_t e) {
    cudaError_t r = cudaGraphLaunch(e, stream);
    cudaError_t s = cudaStreamSynchronize(stream);
    return r != cudaSuccess ? r : s;
  };
  // E0 + E1: a pure populated graph.
  {
    cudaGraph_t g0;
    CK(cudaGraphCreate(&g0, 0));
    clear(a);
    cudnnStatus_t ps = cudnnBackendPopulateCudaGraph(handle, plan, pa, g0);
    printf("  E0 populate: status %d\n", ps);
    if (ps != 0) return;
    Describe("populated", g0);
    cudaGraphExec_t e0;
    CK(cudaGraphInstantiate(&e0, g0, 0));
    cudaError_t l = launch(e0);
    printf("  E0 launch %d, outputs == execute(A): %s\n", l, Same(outputs(a), ref_a) ? "yes" : "NO");
    clear(b);
    cudnnStatus_t us = cudnnBackendUpdateCudaGraph(handle, plan, pb, g0);
    Describe("after update", g0);
    cudaGraphExecUpdateResultInfo info = {};
    cudaError_t xu = cudaGraphExecUpdate(e0, g0, &info);
    l = launch(e0);
    printf("  E1 update %d, exec update %d (result %d), launch %d, outputs == execute(B): %s\n", us, xu,
           info.result, l, Same(outputs(b), ref_b) ? "yes" : "NO");
    cudaGraphExecDestroy(e0);
    cudaGraphDestroy(g0);
  }
  void *stage_in = nullptr, *stage_out = nullptr;
  CK(cudaMalloc(&stage_in, in->bytes));
  CK(cudaMalloc(&stage_out, out->bytes));
  // E2: foreign nodes in the populated graph itself.
  {
    cudaGraph_t g1;
    CK(cudaGraphCreate(&g1, 0));
    clear(a);
    CK(cudnnBackendPopulateCudaGraph(handle, plan, pa, g1));
    Foreign f;
    cudaError_t af = AddForeign(g1, Roots(g1), Leaves(g1), stage_in, a.ptrs[in->uid], in->bytes, stage_out,
                                a.ptrs[out->uid], out->bytes, &f);
    Describe("with foreign nodes", g1);
    cudaGraphExec_t e1;
    CK(cudaGraphInstantiate(&e1, g1, 0));
    g_host_runs = 0;
    cudaError_t l = launch(e1);
    printf("  E2 add %d, launch %d, outputs == execute(A): %s, staged input == A: %s, staged output == A's: %s, "
           "host runs %d\n",
           af, l, Same(outputs(a), ref_a) ? "yes" : "NO", Same(Read(stage_in, in->bytes), a.host[in->uid]) ? "yes" : "NO",
           Same(Read(stage_out, out->bytes), Read(a.ptrs[out->uid], out->bytes)) ? "yes" : "NO", g_host_runs);
    clear(b);
    cudnnStatus_t us = cudnnBackendUpdateCudaGraph(handle, plan, pb, g1);
    printf("  E2 update with foreign nodes in the graph: status %d (%s)\n", us, cudnnGetErrorString(us));
    Describe("after update", g1);
    cudaGraphExecUpdateResultInfo info = {};
    cudaError_t xu = cudaGraphExecUpdate(e1, g1, &info);
    g_host_runs = 0;
    l = launch(e1);
    printf("  E2 exec update %d (result %d), launch %d, outputs == execute(B): %s, host runs %d\n", xu, info.result,
           l, Same(outputs(b), ref_b) ? "yes" : "NO", g_host_runs);
    cudaGraphExecDestroy(e1);
    cudaGraphDestroy(g1);
  }
  // E3 and E4: cloned into a child node, as cudnn-frontend does.
  for (int remove : {0, 1, 2}) {
    const char* tag = remove == 2 ? "E5" : remove ? "E4" : "E3";
    cudaGraph_t scratch, program, embedded;
    CK(cudaGraphCreate(&scratch, 0));
    CK(cudaGraphCreate(&program, 0));
    clear(a);
    CK(cudnnBackendPopulateCudaGraph(handle, plan, pa, scratch));
    Foreign f;
    cudaError_t af = AddForeign(scratch, Roots(scratch), Leaves(scratch), stage_in, a.ptrs[in->uid], in->bytes,
                                stage_out, a.ptrs[out->uid], out->bytes, &f);
    cudaGraphNode_t child;
    CK(cudaGraphAddChildGraphNode(&child, program, nullptr, 0, scratch));
    CK(cudaGraphDestroy(scratch));
    CK(cudaGraphChildGraphNodeGetGraph(child, &embedded));
    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, program, 0));
    g_host_runs = 0;
    cudaError_t l = launch(e);
    printf("  %s add %d, launch %d, outputs == execute(A): %s, host runs %d\n", tag, af, l,
           Same(outputs(a), ref_a) ? "yes" : "NO", g_host_runs);
    // Find the foreign nodes in the clone: the host node by its fn/userData, the copies by their destinations.
    Foreign cf;
    size_t n_nodes = 0;
    CK(cudaGraphGetNodes(embedded, nullptr, &n_nodes));
    std::vector<cudaGraphNode_t> nodes(n_nodes);
    CK(cudaGraphGetNodes(embedded, nodes.data(), &n_nodes));
    for (auto node : nodes) {
      cudaGraphNodeType t;
      CK(cudaGraphNodeGetType(node, &t));
      if (t == cudaGraphNodeTypeHost) {
        cudaHostNodeParams hp;
        CK(cudaGraphHostNodeGetParams(node, &hp));
        if (hp.fn == HostFn && hp.userData == &g_host_runs) cf.host = node;
      } else if (t == cudaGraphNodeTypeMemcpy) {
        cudaMemcpy3DParms mp;
        CK(cudaGraphMemcpyNodeGetParams(node, &mp));
        if (mp.dstPtr.ptr == stage_in) cf.in = node;
        if (mp.dstPtr.ptr == stage_out) cf.out = node;
      }
    }
    printf("  %s foreign nodes found in the clone: in %s, out %s, host %s\n", tag, cf.in ? "yes" : "no",
           cf.out ? "yes" : "no", cf.host ? "yes" : "no");
    if (remove == 2) {
      cudaGraph_t clone;
      CK(cudaGraphClone(&clone, embedded));
      cudaGraphNode_t c_in, c_out, c_host;
      CK(cudaGraphNodeFindInClone(&c_in, cf.in, clone));
      CK(cudaGraphNodeFindInClone(&c_out, cf.out, clone));
      CK(cudaGraphNodeFindInClone(&c_host, cf.host, clone));
      CK(cudaGraphDestroyNode(c_host));
      CK(cudaGraphDestroyNode(c_out));
      CK(cudaGraphDestroyNode(c_in));
      clear(b);
      cudnnStatus_t us = cudnnBackendUpdateCudaGraph(handle, plan, pb, clone);
      printf("  E5 update of the clone without foreign nodes: status %d\n", us);
      int copied = 0, failed = 0;
      for (auto node : nodes) {
        if (node == cf.in || node == cf.out || node == cf.host) continue;
        cudaGraphNode_t cn;
        CK(cudaGraphNodeFindInClone(&cn, node, clone));
        cudaGraphNodeType t;
        CK(cudaGraphNodeGetType(node, &t));
        cudaError_t e = cudaErrorNotSupported;
        if (t == cudaGraphNodeTypeKernel) {
          // cuDNN's kernels are driver functions (cudaGraphKernelNodeGetParams answers 98): the driver's calls.
          static PFN_cuGraphKernelNodeGetParams_v12000 get = nullptr;
          static PFN_cuGraphKernelNodeSetParams_v12000 set = nullptr;
          static PFN_cuGraphKernelNodeCopyAttributes_v11000 copy = nullptr;
          cudaDriverEntryPointQueryResult q;
          if (get == nullptr) {
            cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", reinterpret_cast<void**>(&get), 12000, 0, &q);
            cudaGetDriverEntryPointByVersion("cuGraphKernelNodeSetParams", reinterpret_cast<void**>(&set), 12000, 0, &q);
            cudaGetDriverEntryPointByVersion("cuGraphKernelNodeCopyAttributes", reinterpret_cast<void**>(&copy), 11000, 0,
                                             &q);
          }
          CUDA_KERNEL_NODE_PARAMS kp;
          long r = get == nullptr ? -1 : get(cn, &kp);
          if (r == 0) r = set(node, &kp);
          if (r == 0) r = copy(node, cn);
          e = static_cast<cudaError_t>(r);
        } else if (t == cudaGraphNodeTypeMemset) {
          cudaMemsetParams mp;
          e = cudaGraphMemsetNodeGetParams(cn, &mp);
          if (e == cudaSuccess) e = cudaGraphMemsetNodeSetParams(node, &mp);
        } else if (t == cudaGraphNodeTypeMemcpy) {
          cudaMemcpy3DParms mp;
          e = cudaGraphMemcpyNodeGetParams(cn, &mp);
          if (e == cudaSuccess) e = cudaGraphMemcpyNodeSetParams(node, &mp);
        }
        if (e == cudaSuccess) ++copied; else { ++failed; printf("  E5 copy back of a %s node: %d\n", TypeName(t), e); }
      }
      cudaError_t s1 = cudaGraphMemcpyNodeSetParams1D(cf.in, stage_in, b.ptrs[in->uid], in->bytes,
                                                      cudaMemcpyDeviceToDevice);
      cudaError_t s2 = cudaGraphMemcpyNodeSetParams1D(cf.out, stage_out, b.ptrs[out->uid], out->bytes,
                                                      cudaMemcpyDeviceToDevice);
      CK(cudaGraphDestroy(clone));
      printf("  E5 copied back %d nodes (%d failed), foreign sources set %d %d\n", copied, failed, s1, s2);
      Describe("embedded after copy back", embedded);
      cudaError_t sp = cudaGraphExecChildGraphNodeSetParams(e, child, embedded);
      g_host_runs = 0;
      CK(cudaMemset(stage_in, 0, in->bytes));
      l = launch(e);
      const bool sp_ok = sp == cudaSuccess && l == cudaSuccess && Same(outputs(b), ref_b) &&
                         Same(Read(stage_in, in->bytes), b.host[in->uid]) && g_host_runs == 1;
      printf("  E5 exec child SetParams %d, launch %d, outputs == execute(B): %s, staged input == B: %s, host runs "
             "%d\n", sp, l, Same(outputs(b), ref_b) ? "yes" : "NO",
             Same(Read(stage_in, in->bytes), b.host[in->uid]) ? "yes" : "NO", g_host_runs);
      clear(b);
      cudaGraphExecUpdateResultInfo info = {};
      cudaError_t xu = cudaGraphExecUpdate(e, program, &info);
      g_host_runs = 0;
      l = launch(e);
      const bool xu_ok = xu == cudaSuccess && l == cudaSuccess && Same(outputs(b), ref_b) && g_host_runs == 1;
      printf("  E5 exec update %d (result %d), launch %d, outputs == execute(B): %s, host runs %d\n", xu,
             info.result, l, Same(outputs(b), ref_b) ? "yes" : "NO", g_host_runs);
      cudaGraphExec_t e2;
      cudaError_t ie = cudaGraphInstantiate(&e2, program, 0);
      clear(b);
      g_host_runs = 0;
      l = ie == cudaSuccess ? launch(e2) : ie;
      const bool fresh_ok = ie == cudaSuccess && l == cudaSuccess && Same(outputs(b), ref_b) && g_host_runs == 1;
      printf("  E5 fresh instantiate %d, launch %d, outputs == execute(B): %s, host runs %d\n", ie, l,
             fresh_ok ? "yes" : "NO", g_host_runs);
      if (!(us == 0 && failed == 0 && s1 == cudaSuccess && s2 == cudaSuccess && sp_ok && xu_ok && fresh_ok))
        ++g_e5_failures;
      if (ie == cudaSuccess) cudaGraphExecDestroy(e2);
      cudaGraphExecDestroy(e);
      cudaGraphDestroy(program);
      continue;
    }
    if (remove) {
      CK(cudaGraphDestroyNode(cf.host));
      CK(cudaGraphDestroyNode(cf.out));
      CK(cudaGraphDestroyNode(cf.in));
      Describe("embedded, foreign removed", embedded);
    }
    clear(b);
    cudnnStatus_t us = cudnnBackendUpdateCudaGraph(handle, plan, pb, embedded);
    printf("  %s update of the embedded graph: status %d (%s)\n", tag, us, cudnnGetErrorString(us));
    if (remove) {
      Foreign nf;
      af = AddForeign(embedded, Roots(embedded), Leaves(embedded), stage_in, b.ptrs[in->uid], in->bytes, stage_out,
                      b.ptrs[out->uid], out->bytes, &nf);
      printf("  E4 re-add %d\n", af);
    }
    Describe("embedded after update", embedded);
    if (remove) printf("  E4 exec child SetParams before the exec update: %d\n",
                       cudaGraphExecChildGraphNodeSetParams(e, child, embedded));
    cudaGraphExecUpdateResultInfo info = {};
    cudaError_t xu = cudaGraphExecUpdate(e, program, &info);
    g_host_runs = 0;
    CK(cudaMemset(stage_in, 0, in->bytes));
    l = launch(e);
    printf("  %s exec update %d (result %d), launch %d, outputs == execute(B): %s, staged input == B: %s, host "
           "runs %d\n",
           tag, xu, info.result, l, Same(outputs(b), ref_b) ? "yes" : "NO",
           Same(Read(stage_in, in->bytes), b.host[in->uid]) ? "yes" : "NO", g_host_runs);
    cudaError_t sp = cudaGraphExecChildGraphNodeSetParams(e, child, embedded);
    clear(b);
    g_host_runs = 0;
    l = launch(e);
    printf("  %s exec child SetParams %d, launch %d, outputs == execute(B): %s, host runs %d\n", tag, sp, l,
           Same(outputs(b), ref_b) ? "yes" : "NO", g_host_runs);
    // A fresh instantiation of the program after the update.
    cudaGraphExec_t e2;
    cudaError_t ie = cudaGraphInstantiate(&e2, program, 0);
    clear(b);
    g_host_runs = 0;
    l = ie == cudaSuccess ? launch(e2) : ie;
    printf("  %s fresh instantiate %d, launch %d, outputs == execute(B): %s, host runs %d\n", tag, ie, l,
           Same(outputs(b), ref_b) ? "yes" : "NO", g_host_runs);
    if (ie == cudaSuccess) cudaGraphExecDestroy(e2);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(program);
  }
}

}  // namespace

int main() {
  cudnnHandle_t handle;
  CK(cudnnCreate(&handle));
  printf("cuDNN %zu, cudart %d\n", cudnnGetVersion(), [] {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
  }());
  Probe("conv fwd FP32", handle, [](Graph& g) {
    ttrace::shim::testing::ConvolutionForward(g, g.Tensor(1, CUDNN_DATA_FLOAT, {2, 4, 9, 9}),
                                              g.Tensor(2, CUDNN_DATA_FLOAT, {6, 4, 3, 3}),
                                              g.Tensor(3, CUDNN_DATA_FLOAT, {2, 6, 5, 5}), 1, 2);
    return std::vector<Tensor>{{1, 2 * 4 * 81 * 4, false}, {2, 6 * 4 * 9 * 4, false}, {3, 2 * 6 * 25 * 4, true}};
  });
  Probe("relu FP32", handle, [](Graph& g) {
    g.Pointwise(CUDNN_POINTWISE_RELU_FWD, g.Tensor(1, CUDNN_DATA_FLOAT, {1, 1, 64, 64}), nullptr,
                g.Tensor(2, CUDNN_DATA_FLOAT, {1, 1, 64, 64}));
    return std::vector<Tensor>{{1, 64 * 64 * 4, false}, {2, 64 * 64 * 4, true}};
  });
  Probe("matmul BF16", handle, [](Graph& g) {
    g.Matmul(g.Tensor(1, CUDNN_DATA_BFLOAT16, {1, 64, 64}), g.Tensor(2, CUDNN_DATA_BFLOAT16, {1, 64, 64}),
             g.Tensor(3, CUDNN_DATA_FLOAT, {1, 64, 64}));
    return std::vector<Tensor>{{1, 64 * 64 * 2, false}, {2, 64 * 64 * 2, false}, {3, 64 * 64 * 4, true}};
  });
  Probe("sdpa fwd BF16", handle, [](Graph& g) {
    const int64_t b = 1, h = 2, s = 64, d = 64;
    const cudnnDataType_t io = CUDNN_DATA_BFLOAT16;
    g.Finish(g.Op(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR,
                  {{CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, g.Tensor(1, io, {b, h, s, d})},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, g.Tensor(2, io, {b, h, s, d})},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, g.Tensor(3, io, {b, h, s, d})},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, g.Tensor(4, io, {b, h, s, d})},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, g.Tensor(5, CUDNN_DATA_FLOAT, {b, h, s, 1})},
                   {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, g.Tensor(6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, false, true)}}));
    const size_t t = b * h * s * d * 2;
    return std::vector<Tensor>{{1, t, false}, {2, t, false}, {3, t, false}, {4, t, true},
                               {5, b * h * s * 4, true}, {6, 4, false, true}};
  });
  printf("done: E5 failed on %d graph(s)\n", g_e5_failures);
  return g_e5_failures;
}
