// Operands of ops a vendor put into the application's CUDA graph (cuDNN's native CUDA graph API:
// cudnnBackendPopulateCudaGraph / cudnnBackendUpdateCudaGraph; docs/design.md, "cuDNN's native CUDA graphs", has
// what was measured on an H200 with cuDNN 9.19).
//
// Why this shape:
// - There is no capturing stream: the snapshot nodes are added to the graph itself, right after the populate. The
//   vendor's nodes are those the populate added (nodes after minus before). A device-to-host copy of each input into
//   pinned staging precedes every vendor root (and follows whatever the roots depended on), a copy of each output
//   follows every vendor leaf, and one host node after all copies (argument: the op) takes a fresh seq at each
//   launch and hands the staged bytes to the drain (the same path as stream-captured graphs, capture_graph.cc).
//   Staging is reserved against graph_bytes (TTRACE_GRAPH_MB) and never freed once the nodes are in (a graph, its
//   clones and executables may run until the process ends).
// - Real cuDNN refuses to update a graph holding nodes it did not populate, and removing ours, updating and adding
//   them again makes cudaGraphExecChildGraphNodeSetParams refuse the graph (both measured). So the update runs on
//   a clone without our nodes, and the parameters of the vendor's nodes are copied back node by node (kernel nodes
//   through the driver: cuDNN's kernels are driver functions the runtime's getter refuses; memset and memcpy nodes
//   by their own calls): the application's graph keeps its nodes, and our copies are pointed at the new pack.
//   Everything that can be checked is checked before anything in the application's graph changes; a set that
//   fails restores what was set.
// - Once our nodes are in a graph they stay (same nodes, same order), whether or not the update is captured: an
//   executable the application instantiated from the graph refuses a changed topology (910 from
//   cudaGraphExecChildGraphNodeSetParams / cudaGraphExecUpdate). The update's tensors known and of the populate's
//   sizes: the copies are retargeted, also while tensor capture is off (its launches then publish nothing).
//   Otherwise (plan or pack unknown, other sizes, nodes of another op): the copies are neutralised, 1D copies of at
//   most kNativeScratchBytes from a device scratch of ours (one per context, never freed) into the same staging, so
//   they never read an old pack the application may free; the op is named not captured and its launches (those of
//   every op whose host node is in the graph) publish nothing until an update is captured again.
// - The application never sees the shim: populate and update return the vendor's status. A populate whose nodes
//   cannot be added leaves the graph exactly as populated (the op not captured). An update: when the vendor's update
//   of the clone fails, its status is returned and the graph is untouched (the vendor would fail the same way
//   without our nodes); when a driver call of ours fails (cloning, finding our nodes in the clone, copying the
//   vendor's parameters back, retargeting or neutralising the copies, allocating the scratch), our nodes are removed
//   from the graph and the vendor's update runs on it, which is what the application would have got without the shim
//   (its op then not captured). This is the one remaining case that changes the application's graph's topology.
// - Launches of one graph (and of its executables) share the op's staging: as for stream capture, concurrent
//   launches of them would race on it. An executable made before an update and launched after it stages the old
//   pack's data under the update's record.
#include <algorithm>
#include <cstring>

#include "shim/capture_engine.h"
#include "shim/log.h"

namespace ttrace::shim {

struct CaptureEngine::NativeGraphOp {
  struct Tensor {
    TensorSpec spec;
    StagingPlan plan;
    char* staging = nullptr;
  };
  CaptureEngine* engine = nullptr;
  uint64_t template_seq = 0;  // the populate's, then the last captured update's
  format::RecordType type = format::RecordType::kBackendGraph;
  std::string record;         // the template: body then payload
  size_t header_bytes = 0;    // the body's bytes in `record`
  std::vector<Tensor> tensors;  // inputs, then outputs (copies before the roots, after the leaves)
  size_t inputs = 0;
};

namespace {

// A 1D device-to-host copy of `bytes` from `src` into `dst`.
CUDA_MEMCPY3D CopyParams(const void* src, void* dst, size_t bytes) {
  CUDA_MEMCPY3D m;
  memset(&m, 0, sizeof m);
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

// The device address of copy `c` of a tensor.
const void* CopySource(const TensorSpec& spec, const StagingPlan& plan, uint64_t c) {
  return static_cast<const char*>(spec.ptr) + static_cast<int64_t>(c) * plan.copy_src_stride * plan.elem_bytes;
}

bool HasNodeCalls(const DriverApi* d) {
  return d != nullptr && d->GraphGetNodes != nullptr && d->GraphNodeGetDependentNodes != nullptr &&
         d->GraphNodeGetType != nullptr && d->GraphAddMemcpyNode != nullptr && d->GraphAddHostNode != nullptr &&
         d->GraphAddDependencies != nullptr && d->GraphDestroyNode != nullptr && d->CtxGetCurrent != nullptr;
}

bool HasUpdateCalls(const DriverApi* d) {
  return HasNodeCalls(d) && d->GraphClone != nullptr && d->GraphNodeFindInClone != nullptr &&
         d->GraphDestroy != nullptr && d->GraphMemcpyNodeGetParams != nullptr &&
         d->GraphMemcpyNodeSetParams != nullptr && d->GraphMemsetNodeGetParams != nullptr &&
         d->GraphMemsetNodeSetParams != nullptr && d->GraphHostNodeGetParams != nullptr &&
         d->GraphKernelNodeGetParams != nullptr && d->GraphKernelNodeSetParams != nullptr &&
         d->GraphKernelNodeCopyAttributes != nullptr;
}

CUresult DependentNodes(const DriverApi* d, CUgraphNode node, std::vector<CUgraphNode>* out) {
  size_t n = 0;
  CUresult e = d->GraphNodeGetDependentNodes(node, nullptr, &n);
  if (e != CUDA_SUCCESS) return e;
  out->resize(n);
  if (n == 0) return CUDA_SUCCESS;
  e = d->GraphNodeGetDependentNodes(node, out->data(), &n);
  out->resize(n);
  return e;
}

bool Contains(const std::vector<CUgraphNode>& sorted, CUgraphNode node) {
  return std::binary_search(sorted.begin(), sorted.end(), node);
}

}  // namespace

bool CaptureEngine::NativeScratch(CUdeviceptr* scratch, std::string* why) {
  CUcontext ctx = nullptr;
  CUresult e = driver_->CtxGetCurrent(&ctx);
  if (e != CUDA_SUCCESS || ctx == nullptr) {
    *why = "no current context for the device scratch";
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [c, p] : native_scratch_)
    if (c == ctx) {
      *scratch = p;
      return true;
    }
  if (driver_->MemAlloc == nullptr) {
    *why = "the driver lacks cuMemAlloc for the device scratch";
    return false;
  }
  if ((e = driver_->MemAlloc(scratch, kNativeScratchBytes)) != CUDA_SUCCESS) {
    *why = "allocating the device scratch failed: " + CudaErrorText(driver_, e);
    return false;
  }
  native_scratch_.emplace_back(ctx, *scratch);
  return true;
}

bool CaptureEngine::NativeGraphNodes(CUgraph graph, std::vector<CUgraphNode>* nodes) {
  nodes->clear();
  if (!HasNodeCalls(driver_) || graph == nullptr) return false;
  size_t n = 0;
  if (driver_->GraphGetNodes(graph, nullptr, &n) != CUDA_SUCCESS) return false;
  nodes->resize(n);
  if (n > 0 && driver_->GraphGetNodes(graph, nodes->data(), &n) != CUDA_SUCCESS) return false;
  nodes->resize(n);
  return true;
}

void CaptureEngine::NativeHostFn(void* op) {
  auto* o = static_cast<NativeGraphOp*>(op);
  o->engine->NativeLaunched(o);
}

// Runs on the launch's stream after every snapshot copy of the launch: one new op with the template's record, and
// every staged tensor under its seq.
void CaptureEngine::NativeLaunched(NativeGraphOp* op) {
  if (!capturing_tensors()) return;
  std::string record;
  format::RecordType type;
  uint64_t template_seq;
  size_t header_bytes;
  std::vector<NativeGraphOp::Tensor> tensors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || op->record.size() < sizeof(uint64_t)) return;
    record = op->record;
    type = op->type;
    template_seq = op->template_seq;
    header_bytes = op->header_bytes;
    tensors = op->tensors;
  }
  const Slot slot = Reserve(/*op=*/true);
  memcpy(record.data(), &slot.seq, sizeof slot.seq);  // every op record starts with its seq (format.h)
  Publish(slot, type, record.data(), header_bytes, record.data() + header_bytes, record.size() - header_bytes);
  Notice(format::NoticeCode::kGraphReplay, slot.seq, template_seq, "a launch of a cuDNN native CUDA graph");
  for (size_t i = 0; i < tensors.size(); ++i)
    QueueLaunched(slot.seq, tensors[i].spec, tensors[i].plan, tensors[i].staging, i == 0);
}

CUresult CaptureEngine::AddNativeNodes(NativeGraphOp* op, CUgraph graph, const std::vector<CUgraphNode>& vendor,
                                       const std::vector<CUgraphNode>& before, std::string* why) {
  const DriverApi* d = driver_;
  std::vector<CUgraphNode> added;
  CUresult e = CUDA_SUCCESS;
  auto fail = [&](CUresult error, const std::string& what) {
    for (auto it = added.rbegin(); it != added.rend(); ++it) d->GraphDestroyNode(*it);
    *why = what + ": " + CudaErrorText(d, error);
    return error;
  };
  // The vendor's roots and leaves (within its own nodes), and the earlier nodes its roots depend on.
  std::vector<CUgraphNode> sorted_vendor(vendor), sorted_before(before);
  std::sort(sorted_vendor.begin(), sorted_vendor.end());
  std::sort(sorted_before.begin(), sorted_before.end());
  std::vector<CUgraphNode> has_vendor_parent, roots, leaves, root_deps, dependents;
  for (CUgraphNode n : vendor) {
    if ((e = DependentNodes(d, n, &dependents)) != CUDA_SUCCESS) return fail(e, "reading the graph's edges");
    bool leaf = true;
    for (CUgraphNode m : dependents)
      if (Contains(sorted_vendor, m)) {
        has_vendor_parent.push_back(m);
        leaf = false;
      }
    if (leaf) leaves.push_back(n);
  }
  std::sort(has_vendor_parent.begin(), has_vendor_parent.end());
  for (CUgraphNode n : vendor)
    if (!Contains(has_vendor_parent, n)) roots.push_back(n);
  std::vector<CUgraphNode> sorted_roots(roots);
  std::sort(sorted_roots.begin(), sorted_roots.end());
  for (CUgraphNode n : before) {
    if ((e = DependentNodes(d, n, &dependents)) != CUDA_SUCCESS) return fail(e, "reading the graph's edges");
    for (CUgraphNode m : dependents)
      if (Contains(sorted_roots, m)) {
        root_deps.push_back(n);
        break;
      }
  }
  CUcontext ctx = nullptr;
  if ((e = d->CtxGetCurrent(&ctx)) != CUDA_SUCCESS || ctx == nullptr)
    return fail(e != CUDA_SUCCESS ? e : CUDA_ERROR_INVALID_CONTEXT, "no current context for the copy nodes");
  std::vector<CUgraphNode> outs;
  for (size_t i = 0; i < op->tensors.size(); ++i) {
    const NativeGraphOp::Tensor& t = op->tensors[i];
    const bool input = i < op->inputs;
    for (uint64_t c = 0; c < t.plan.copies; ++c) {
      const CUDA_MEMCPY3D m = CopyParams(CopySource(t.spec, t.plan, c), t.staging + c * t.plan.copy_bytes,
                                         t.plan.copy_bytes);
      CUgraphNode node = nullptr;
      const std::vector<CUgraphNode>& deps = input ? root_deps : leaves;
      if ((e = d->GraphAddMemcpyNode(&node, graph, deps.data(), deps.size(), &m, ctx)) != CUDA_SUCCESS)
        return fail(e, "adding a snapshot copy node");
      added.push_back(node);
      if (input) {
        std::vector<CUgraphNode> from(roots.size(), node);
        if ((e = d->GraphAddDependencies(graph, from.data(), roots.data(), roots.size())) != CUDA_SUCCESS)
          return fail(e, "making cuDNN's roots depend on a snapshot copy");
      } else {
        outs.push_back(node);
      }
    }
  }
  CUDA_HOST_NODE_PARAMS host;
  memset(&host, 0, sizeof host);
  host.fn = &CaptureEngine::NativeHostFn;
  host.userData = op;
  const std::vector<CUgraphNode>& last = outs.empty() ? leaves : outs;
  CUgraphNode node = nullptr;
  if ((e = d->GraphAddHostNode(&node, graph, last.data(), last.size(), &host)) != CUDA_SUCCESS)
    return fail(e, "adding the snapshot host node");
  return CUDA_SUCCESS;
}

bool CaptureEngine::CaptureNativePopulate(uint64_t seq, CUgraph graph, const std::vector<CUgraphNode>& before,
                                          const std::vector<TensorSpec>& specs, size_t inputs,
                                          format::RecordType type, const std::string& record, size_t header_bytes,
                                          std::string* why) {
  if (!HasUpdateCalls(driver_)) {  // a graph holding our nodes could not be updated
    *why = "the driver lacks the graph node calls snapshots need";
    return false;
  }
  std::vector<CUgraphNode> after, vendor;
  if (!NativeGraphNodes(graph, &after)) {
    *why = "cannot list the graph's nodes";
    return false;
  }
  std::vector<CUgraphNode> sorted_before(before);
  std::sort(sorted_before.begin(), sorted_before.end());
  for (CUgraphNode n : after)
    if (!Contains(sorted_before, n)) vendor.push_back(n);
  if (vendor.empty()) {
    *why = "the populate added no nodes";
    return false;
  }
  auto op = std::make_unique<NativeGraphOp>();
  op->engine = this;
  op->template_seq = seq;
  op->type = type;
  op->record = record;
  op->header_bytes = header_bytes;
  op->inputs = inputs;
  size_t reserved = 0;
  auto release = [&] {
    for (const NativeGraphOp::Tensor& t : op->tensors)
      if (t.staging != nullptr) driver_->MemFreeHost(t.staging);
    graph_bytes_used_ -= reserved;
  };
  for (const TensorSpec& spec : specs) {
    NativeGraphOp::Tensor t;
    t.spec = spec;
    if (!PlanStaging(spec, &t.plan, /*pitched_copies=*/false) || t.plan.packed_bytes > config_.max_tensor_bytes ||
        t.plan.packed_bytes + sizeof(format::RecordHeader) + sizeof(format::TensorRecord) > format::kMaxFrameBytes) {
      release();
      *why = "a tensor is empty, malformed or larger than TTRACE_MAX_TENSOR_MB";
      return false;
    }
    if (!ReserveGraphBytes(t.plan.staging_bytes)) {
      release();
      *why = "CUDA graph staging would exceed TTRACE_GRAPH_MB";
      return false;
    }
    reserved += t.plan.staging_bytes;
    void* staging = nullptr;
    if (driver_->MemHostAlloc(&staging, t.plan.staging_bytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
        staging == nullptr) {
      release();
      *why = "cannot allocate pinned staging for a CUDA graph snapshot";
      return false;
    }
    t.staging = static_cast<char*>(staging);
    op->tensors.push_back(t);
  }
  {
    const RelaxedCaptureMode relaxed(driver_);
    if (AddNativeNodes(op.get(), graph, vendor, before, why) != CUDA_SUCCESS) {
      release();
      return false;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    native_ops_.push_back(op.release());
  }
  Notice(format::NoticeCode::kGraphCaptured, seq, 0,
         "populated into a cuDNN native CUDA graph: operands are captured at each launch, as ops with new seqs");
  return true;
}

int CaptureEngine::UpdateNativeGraph(CUgraph graph, const std::vector<TensorSpec>& specs,
                                     const std::function<int(CUgraph)>& real, NativeGraphOp** found,
                                     std::string* why) {
  *found = nullptr;
  const DriverApi* d = driver_;
  std::vector<CUgraphNode> nodes;
  if (!HasUpdateCalls(d) || !NativeGraphNodes(graph, &nodes)) {
    *why = "the driver lacks the graph node calls snapshots need";
    return real(graph);
  }
  const RelaxedCaptureMode relaxed(d);
  // Our nodes: the host node by function and argument, the copies by destination.
  struct Ours {
    CUgraphNode node;
    CUDA_MEMCPY3D params;  // copies
    size_t tensor;
    uint64_t copy;
  };
  std::vector<Ours> copies;
  std::vector<CUgraphNode> ours, vendor;
  NativeGraphOp* op = nullptr;
  std::vector<NativeGraphOp*> hosts;  // the op of each of our host nodes (more than one op: foreign)
  bool foreign = false;  // a node of ours not of this graph's op, or unreadable
  std::vector<NativeGraphOp*> known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    known = native_ops_;
  }
  std::sort(known.begin(), known.end());
  for (CUgraphNode n : nodes) {
    CUgraphNodeType type;
    if (d->GraphNodeGetType(n, &type) != CUDA_SUCCESS) {
      foreign = true;
      continue;
    }
    if (type == CU_GRAPH_NODE_TYPE_HOST) {
      CUDA_HOST_NODE_PARAMS h;
      memset(&h, 0, sizeof h);
      if (d->GraphHostNodeGetParams(n, &h) == CUDA_SUCCESS && h.fn == &CaptureEngine::NativeHostFn &&
          std::binary_search(known.begin(), known.end(), static_cast<NativeGraphOp*>(h.userData))) {
        if (op != nullptr && op != h.userData) foreign = true;
        op = static_cast<NativeGraphOp*>(h.userData);
        hosts.push_back(op);
        ours.push_back(n);
        continue;
      }
    } else if (type == CU_GRAPH_NODE_TYPE_MEMCPY) {
      CUDA_MEMCPY3D m;
      memset(&m, 0, sizeof m);
      if (d->GraphMemcpyNodeGetParams(n, &m) == CUDA_SUCCESS && m.dstMemoryType == CU_MEMORYTYPE_HOST) {
        bool mine = false;
        for (size_t k = 0; k < known.size() && !mine; ++k)
          for (size_t i = 0; i < known[k]->tensors.size() && !mine; ++i) {
            const NativeGraphOp::Tensor& t = known[k]->tensors[i];
            const char* dst = static_cast<const char*>(m.dstHost);
            if (dst < t.staging || dst >= t.staging + t.plan.staging_bytes) continue;
            mine = true;
            copies.push_back(Ours{n, m, i, static_cast<uint64_t>(dst - t.staging) / t.plan.copy_bytes});
          }
        if (mine) {
          ours.push_back(n);
          continue;
        }
      }
    }
    vendor.push_back(n);
  }
  if (op == nullptr && copies.empty()) {
    *why = "the graph holds no snapshot nodes (its populate was not captured)";
    return real(graph);
  }
  foreign |= op == nullptr;  // copies without their host node
  // Every copy must be one of this op's (destination inside its staging).
  for (const Ours& c : copies) {
    if (op == nullptr) break;
    const char* dst = static_cast<const char*>(c.params.dstHost);
    bool in_op = false;
    for (const NativeGraphOp::Tensor& t : op->tensors)
      in_op |= dst >= t.staging && dst < t.staging + t.plan.staging_bytes;
    if (!in_op) foreign = true;
  }
  // A driver call of ours failed: our nodes out, the vendor's update on the application's graph, as without the shim.
  auto without_us = [&](const std::string& what) {
    *why = what;
    for (CUgraphNode n : ours) d->GraphDestroyNode(n);
    return real(graph);
  };
  // The new pack's copies: the same tensors, sizes and copies as at populate. What cannot be captured is known
  // now, but acted on only when cuDNN's update of the clone succeeded (else the graph stays as it is): our nodes
  // stay, and our copies are neutralised (they read the device scratch) instead of retargeted.
  std::string problem;
  std::vector<StagingPlan> plans(specs.size());
  bool same = op != nullptr && specs.size() == op->tensors.size();
  for (size_t i = 0; same && i < specs.size(); ++i) {
    const NativeGraphOp::Tensor& t = op->tensors[i];
    same = PlanStaging(specs[i], &plans[i], false) && specs[i].slot == t.spec.slot &&
           specs[i].index == t.spec.index && plans[i].staging_bytes == t.plan.staging_bytes &&
           plans[i].copies == t.plan.copies && plans[i].copy_bytes == t.plan.copy_bytes;
  }
  if (foreign)
    problem = "the graph holds snapshot nodes of more than one op, or nodes the shim cannot read";
  else if (!same)
    problem = "the update's tensors differ from the populate's in number or size";

  CUgraph clone = nullptr;
  CUresult e = d->GraphClone(&clone, graph);
  if (e != CUDA_SUCCESS) return without_us("cloning the graph failed: " + CudaErrorText(d, e));
  auto destroy_clone = [&] { d->GraphDestroy(clone); };
  for (CUgraphNode n : ours) {
    CUgraphNode c = nullptr;
    if ((e = d->GraphNodeFindInClone(&c, n, clone)) != CUDA_SUCCESS ||
        (e = d->GraphDestroyNode(c)) != CUDA_SUCCESS) {
      destroy_clone();
      return without_us("removing the snapshot nodes from a clone failed: " + CudaErrorText(d, e));
    }
  }
  const int status = real(clone);
  if (status != 0) {
    destroy_clone();
    *why = "cuDNN's update failed (the graph is as it was)";
    return status;
  }
  CUdeviceptr scratch = 0;
  std::string no_scratch;
  if (!problem.empty() && !NativeScratch(&scratch, &no_scratch)) {
    destroy_clone();
    return without_us(problem + "; and " + no_scratch);
  }
  // The vendor's nodes' parameters: the new ones from the clone, the current ones (to restore) from a second clone
  // of the application's graph, which keeps them (kernel arguments included) alive until the end.
  CUgraph backup = nullptr;
  if ((e = d->GraphClone(&backup, graph)) != CUDA_SUCCESS) {
    destroy_clone();
    return without_us("cloning the graph failed: " + CudaErrorText(d, e));
  }
  struct Params {
    CUgraphNode node, in_clone, in_backup;
    CUgraphNodeType type;
    CUDA_KERNEL_NODE_PARAMS kernel[2];
    CUDA_MEMSET_NODE_PARAMS memset[2];
    CUDA_MEMCPY3D memcpy[2];  // [0]: new, [1]: current
  };
  std::vector<Params> params(vendor.size());
  size_t clone_nodes = 0;
  e = d->GraphGetNodes(clone, nullptr, &clone_nodes);
  std::string failed;
  if (e != CUDA_SUCCESS || clone_nodes != vendor.size()) failed = "cuDNN's update changed the graph's nodes";
  for (size_t i = 0; i < vendor.size() && failed.empty(); ++i) {
    Params& p = params[i];
    memset(&p, 0, sizeof p);
    p.node = vendor[i];
    if ((e = d->GraphNodeFindInClone(&p.in_clone, p.node, clone)) != CUDA_SUCCESS ||
        (e = d->GraphNodeFindInClone(&p.in_backup, p.node, backup)) != CUDA_SUCCESS ||
        (e = d->GraphNodeGetType(p.node, &p.type)) != CUDA_SUCCESS) {
      failed = "finding cuDNN's nodes in the clone failed: " + CudaErrorText(d, e);
      break;
    }
    switch (p.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
        if ((e = d->GraphKernelNodeGetParams(p.in_clone, &p.kernel[0])) == CUDA_SUCCESS)
          e = d->GraphKernelNodeGetParams(p.in_backup, &p.kernel[1]);
        break;
      case CU_GRAPH_NODE_TYPE_MEMSET:
        if ((e = d->GraphMemsetNodeGetParams(p.in_clone, &p.memset[0])) == CUDA_SUCCESS)
          e = d->GraphMemsetNodeGetParams(p.in_backup, &p.memset[1]);
        break;
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        if ((e = d->GraphMemcpyNodeGetParams(p.in_clone, &p.memcpy[0])) == CUDA_SUCCESS)
          e = d->GraphMemcpyNodeGetParams(p.in_backup, &p.memcpy[1]);
        break;
      default:
        failed = "cuDNN's graph holds a node type the copy back does not know (" +
                 std::to_string(static_cast<int>(p.type)) + ")";
    }
    if (failed.empty() && e != CUDA_SUCCESS) failed = "reading cuDNN's node parameters failed: " + CudaErrorText(d, e);
  }
  // Sets the new ([0]) or the current ([1]) parameters of params[0, n).
  auto set = [&](size_t n, int which) {
    for (size_t i = 0; i < n; ++i) {
      Params& p = params[i];
      CUresult r = CUDA_SUCCESS;
      if (p.type == CU_GRAPH_NODE_TYPE_KERNEL) {
        r = d->GraphKernelNodeSetParams(p.node, &p.kernel[which]);
        if (r == CUDA_SUCCESS) r = d->GraphKernelNodeCopyAttributes(p.node, which == 0 ? p.in_clone : p.in_backup);
      } else if (p.type == CU_GRAPH_NODE_TYPE_MEMSET) {
        r = d->GraphMemsetNodeSetParams(p.node, &p.memset[which]);
      } else {
        r = d->GraphMemcpyNodeSetParams(p.node, &p.memcpy[which]);
      }
      if (r != CUDA_SUCCESS) return std::make_pair(i, r);
    }
    return std::make_pair(n, CUDA_SUCCESS);
  };
  // Our copies, pointed at the new pack (1D copies of the populate's size) or, when it cannot be captured,
  // neutralised: 1D copies of at most kNativeScratchBytes from the device scratch into the same staging, which
  // read nothing the application may free (a copy left on the old pack could fault its context once it is freed).
  auto retarget = [&](size_t n, bool to_new) {
    for (size_t i = 0; i < n; ++i) {
      CUDA_MEMCPY3D m = copies[i].params;
      if (to_new && problem.empty()) {
        const StagingPlan& plan = plans[copies[i].tensor];
        m = CopyParams(CopySource(specs[copies[i].tensor], plan, copies[i].copy), m.dstHost, plan.copy_bytes);
      } else if (to_new) {
        m = CopyParams(reinterpret_cast<const void*>(scratch), m.dstHost,
                       std::min<size_t>(m.WidthInBytes, kNativeScratchBytes));
      }
      const CUresult r = d->GraphMemcpyNodeSetParams(copies[i].node, &m);
      if (r != CUDA_SUCCESS) return std::make_pair(i, r);
    }
    return std::make_pair(n, CUDA_SUCCESS);
  };
  if (failed.empty()) {
    const auto [done, r] = set(params.size(), 0);
    if (r != CUDA_SUCCESS) {
      set(done + 1 < params.size() ? done + 1 : params.size(), 1);
      failed = "copying cuDNN's node parameters back failed: " + CudaErrorText(d, r);
    } else {
      const auto [moved, r2] = retarget(copies.size(), true);
      if (r2 != CUDA_SUCCESS) {
        retarget(moved + 1 < copies.size() ? moved + 1 : copies.size(), false);
        set(params.size(), 1);
        failed = (problem.empty() ? "retargeting" : "neutralising") + std::string(" the snapshot copies failed: ") +
                 CudaErrorText(d, r2);
      }
    }
  }
  destroy_clone();
  d->GraphDestroy(backup);
  if (!failed.empty()) return without_us(failed);
  if (!problem.empty()) {  // the launches publish nothing until an update is captured again (NativeTemplate)
    *why = problem;
    // Every op whose host node is in this graph: with nodes of several ops, all their copies were neutralised, and
    // a host node left publishing would hand the scratch's bytes to the drain as its op's tensors.
    std::lock_guard<std::mutex> lock(mu_);
    for (NativeGraphOp* o : hosts) o->record.clear();
    return status;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < specs.size(); ++i) op->tensors[i].spec = specs[i];
  }
  *found = op;
  return status;
}

void CaptureEngine::NativeTemplate(NativeGraphOp* op, uint64_t seq, format::RecordType type,
                                   const std::string& record, size_t header_bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    op->template_seq = seq;
    op->type = type;
    op->record = record;
    op->header_bytes = header_bytes;
  }
  Notice(format::NoticeCode::kGraphCaptured, seq, 0,
         "updated a cuDNN native CUDA graph: operands are captured at each launch, as ops with new seqs");
}

}  // namespace ttrace::shim
