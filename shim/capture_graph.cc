// Operands of ops captured into CUDA graphs (capture_engine.h, "CUDA graphs").
//
// Why this shape:
// - A library call on a capturing stream runs its host part once, at capture; the device work runs at every
//   launch. So the snapshot has to be part of the graph: device-to-host copies into staging the node owns (pinned,
//   allocated at capture in relaxed capture mode so that the application's capture is not invalidated), then a
//   host node. Host nodes must not call CUDA: ours copies the staged bytes to the heap and queues them, nothing
//   else, so the launch's stream is held only for that copy.
// - Staging is never freed: a graph may be launched until the process ends, and nothing tells us when it is
//   destroyed. graph_bytes bounds it, together with the launched data waiting for the drain.
// - The template record arrives after the op's operands were planned (Publish follows the call), so each template
//   is found by its capture-time seq; a launch that runs before the template is known (never, as launches follow
//   the end of the capture) drops its payloads.
#include <cstring>

#include "shim/capture_engine.h"
#include "shim/log.h"

namespace ttrace::shim {

struct CaptureEngine::GraphOp {
  uint64_t template_seq = 0;
  format::RecordType type = format::RecordType::kGemm;
  std::string body;             // the template record (its body, then its payload); empty until Publish
  size_t body_bytes = 0;         // the record's body in `body`
  uint64_t launch_seq = kNoSeq;  // seq of the launch now running (set by the op's first host node)
  bool has_node = false;         // a host node of this op was added to the graph
};

struct CaptureEngine::GraphTensor {
  CaptureEngine* engine = nullptr;
  GraphOp* op = nullptr;
  bool first = false;  // the op's first snapshot: starts a launch
  TensorSpec spec;
  StagingPlan plan;
  char* staging = nullptr;
};

bool CaptureEngine::ReserveGraphBytes(size_t bytes) {
  size_t used = graph_bytes_used_.load();
  do {
    if (used + bytes > config_.graph_bytes) return false;
  } while (!graph_bytes_used_.compare_exchange_weak(used, used + bytes));
  return true;
}

void CaptureEngine::CaptureInGraph(uint64_t seq, CUstream stream, const TensorSpec& spec, const StagingPlan& plan) {
  if (driver_->LaunchHostFunc == nullptr) {
    Drop(seq, format::DropReason::kGraphCapture, "the driver has no cuLaunchHostFunc for CUDA graph snapshots");
    return;
  }
  if (!ReserveGraphBytes(plan.staging_bytes)) {
    Drop(seq, format::DropReason::kGraphCapture, "CUDA graph staging would exceed TTRACE_GRAPH_MB");
    return;
  }
  void* staging = nullptr;
  if (driver_->MemHostAlloc(&staging, plan.staging_bytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
      staging == nullptr) {
    graph_bytes_used_ -= plan.staging_bytes;
    Drop(seq, format::DropReason::kGraphCapture, "cannot allocate pinned staging for a CUDA graph snapshot");
    return;
  }
  auto* tensor = new GraphTensor;
  tensor->engine = this;
  tensor->spec = spec;
  tensor->plan = plan;
  tensor->staging = static_cast<char*>(staging);
  bool first_capture = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    GraphOp*& op = graph_ops_[seq];
    has_graph_ops_.store(true, std::memory_order_release);
    if (op == nullptr) {
      op = new GraphOp;
      op->template_seq = seq;
      first_capture = true;
    }
    tensor->op = op;
  }
  if (first_capture)
    Notice(format::NoticeCode::kGraphCaptured, seq, 0,
           "captured into a CUDA graph: operands are captured at each launch, as ops with new seqs");
  // The copies and the host node become graph nodes, in stream order after the op's earlier work.
  uint64_t queued = 0;
  CUresult e = EnqueueCopies(spec, plan, tensor->staging, stream, &queued);
  // The op's first host node in the graph starts each launch (`first` is read at launch, never at capture).
  if (e == CUDA_SUCCESS) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tensor->first = !tensor->op->has_node;
      tensor->op->has_node = true;
    }
    e = driver_->LaunchHostFunc(stream, &CaptureEngine::GraphHostFn, tensor);
    if (e != CUDA_SUCCESS && tensor->first) {
      std::lock_guard<std::mutex> lock(mu_);
      tensor->op->has_node = false;
    }
  }
  // On failure the nodes already added stay in the graph (they write only our staging), so neither the staging
  // nor the tensor may be freed; the launch's host node, if any, was not added.
  if (e != CUDA_SUCCESS)
    Drop(seq, format::DropReason::kGraphCapture,
         "adding the snapshot to the CUDA graph failed: " + CudaErrorText(driver_, e));
}

void CaptureEngine::NoteGraphRecord(uint64_t seq, format::RecordType type, const void* body, size_t body_bytes,
                                    const void* payload, size_t payload_bytes) {
  auto it = graph_ops_.find(seq);
  if (it == graph_ops_.end() || !it->second->body.empty()) return;
  it->second->type = type;
  it->second->body.assign(static_cast<const char*>(body), body_bytes);
  if (payload_bytes > 0) it->second->body.append(static_cast<const char*>(payload), payload_bytes);
  it->second->body_bytes = body_bytes;
}

void CaptureEngine::GraphHostFn(void* tensor) {
  auto* t = static_cast<GraphTensor*>(tensor);
  t->engine->Launched(t);
}

// Runs on the launch's stream, in graph order: the op's first snapshot of a launch takes a new seq and publishes
// the template under it; every snapshot of the launch is queued under that seq.
void CaptureEngine::Launched(GraphTensor* t) {
  if (!capturing_tensors()) return;
  GraphOp* op = t->op;
  std::string record;
  format::RecordType type;
  size_t body_bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || op->body_bytes < sizeof(uint64_t)) return;
    record = op->body;
    type = op->type;
    body_bytes = op->body_bytes;
  }
  uint64_t seq;
  if (t->first) {
    const Slot slot = Reserve(/*op=*/true);
    seq = slot.seq;
    {
      std::lock_guard<std::mutex> lock(mu_);
      op->launch_seq = seq;
    }
    memcpy(record.data(), &seq, sizeof seq);  // every op record starts with its seq (format.h)
    Publish(slot, type, record.data(), body_bytes, record.data() + body_bytes, record.size() - body_bytes);
    Notice(format::NoticeCode::kGraphReplay, seq, op->template_seq, "a launch of a CUDA graph node");
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    seq = op->launch_seq;
  }
  if (seq == kNoSeq) return;
  QueueLaunched(seq, t->spec, t->plan, t->staging, t->first);
}

void CaptureEngine::QueueLaunched(uint64_t seq, const TensorSpec& spec, const StagingPlan& plan, const char* staging,
                                  bool first) {
  if (!ReserveGraphBytes(plan.staging_bytes)) {
    Drop(seq, format::DropReason::kGraphCapture,
         "launched CUDA graph data waiting for the drain exceeds TTRACE_GRAPH_MB");
    return;
  }
  auto owned = std::make_shared<std::vector<char>>(staging, staging + plan.staging_bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      graph_bytes_used_ -= plan.staging_bytes;
      return;
    }
    TensorItem& item = tensors_.push_back();
    item.seq = seq;
    item.spec = spec;
    item.plan = plan;
    item.state = CopyState::kReady;
    item.owned = std::move(owned);
    ++tensors_pushed_;
    if (first) ++stats_.graph_launches;
  }
  work_cv_.notify_one();
}

}  // namespace ttrace::shim
