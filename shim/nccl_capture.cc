// Groups: NCCL launches the operations of a group at the outermost ncclGroupEnd, and their outputs are valid only
// after it, so inside a group both snapshots are deferred: inputs are copied just before the outermost
// ncclGroupEnd runs, outputs just after it returns (on each operation's stream). Group depth and deferred
// captures are per thread, as NCCL's groups are. A group that fails keeps its inputs and loses its outputs.
//
// Non-blocking communicators: a collective (or a group end) that returns ncclInProgress has not been enqueued on
// its stream yet, so a copy enqueued now could run before it. Its output snapshot waits in PendingOutputs until
// ncclCommGetAsyncError, called by the thread that issued the operation, first reports that communicator
// ncclSuccess (NCCL has then enqueued the work, and a copy enqueued after it on the same stream sees the result);
// an asynchronous error, or the communicator's destruction or abort before that, drops it with a notice. The
// input snapshot is taken at the call as usual: it is enqueued before the operation in any case.
//
// Which buffers exist on a rank, and how long each is, comes from the semantics table (ttrace/collectives.h): a
// non-root's broadcast send buffer or gather receive buffer is never read, so it is never captured either.
#include "shim/nccl_capture.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "shim/capture_engine.h"
#include "shim/interception.h"
#include "shim/runtime.h"
#include "shim/tensor_pack.h"
#include "ttrace/collectives.h"

namespace ttrace::shim {
namespace {

LazySymbol g_comm_count(format::Library::kNccl, "ncclCommCount");
LazySymbol g_comm_user_rank(format::Library::kNccl, "ncclCommUserRank");
LazySymbol g_comm_cu_device(format::Library::kNccl, "ncclCommCuDevice");

struct DeferredCollective {
  uint64_t seq;
  cudaStream_t stream;
  TensorSpec send, recv;          // ptr == nullptr: the rank has no such buffer in this call
  uint64_t comm = 0;
  pthread_t thread = pthread_self();  // the thread that issued the operation
};

// Output snapshots of non-blocking operations not yet enqueued, by communicator (see the top of the file).
class PendingOutputs {
 public:
  void Add(const DeferredCollective& d) {
    std::lock_guard<std::mutex> lock(mu_);
    by_comm_[d.comm].push_back(d);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  // Removes and returns the communicator's pending snapshots, in call order: all of them, or (`only_this_thread`)
  // those the calling thread issued. Cheap when none are pending at all: ncclCommGetAsyncError is polled in loops,
  // also by other threads (PyTorch's watchdog).
  std::vector<DeferredCollective> Take(uint64_t comm, bool only_this_thread) {
    std::vector<DeferredCollective> out;
    if (count_.load(std::memory_order_relaxed) == 0) return out;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_comm_.find(comm);
    if (it == by_comm_.end()) return out;
    std::vector<DeferredCollective>& all = it->second;
    const pthread_t self = pthread_self();
    auto keep = std::stable_partition(all.begin(), all.end(), [&](const DeferredCollective& d) {
      return only_this_thread && !pthread_equal(d.thread, self);
    });
    out.assign(keep, all.end());
    all.erase(keep, all.end());
    if (all.empty()) by_comm_.erase(it);
    count_.fetch_sub(out.size(), std::memory_order_relaxed);
    return out;
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<DeferredCollective>> by_comm_;
  std::atomic<size_t> count_{0};
};

PendingOutputs& Pending() {
  static PendingOutputs* pending = new PendingOutputs();  // never destroyed: interceptors may run during exit
  return *pending;
}

thread_local int t_group_depth = 0;
thread_local std::vector<DeferredCollective> t_deferred;

using CommQueryFn = decltype(&::pncclCommCount);
static_assert(std::is_same_v<CommQueryFn, decltype(&::pncclCommUserRank)> &&
              std::is_same_v<CommQueryFn, decltype(&::pncclCommCuDevice)>);

int CommQuery(LazySymbol& symbol, ncclComm_t comm) {
  auto fn = reinterpret_cast<CommQueryFn>(symbol.Get());
  int value = -1;
  if (fn == nullptr || comm == nullptr || fn(comm, &value) != ncclSuccess) return -1;
  return value;
}

// A count x 1 buffer of `elements`; an empty spec (ptr nullptr) when there is none.
TensorSpec Vector(format::TensorSlot slot, format::DType dtype, const void* ptr, uint64_t elements) {
  TensorSpec t;
  t.slot = slot;
  t.dtype = dtype;
  if (elements == 0 || elements > INT64_MAX || ptr == nullptr) return t;
  t.ptr = ptr;
  t.rows = t.ld = static_cast<int64_t>(elements);
  t.cols = 1;
  return t;
}

format::GroupRecord GroupRec(format::ApiId api, ncclResult_t status, uint64_t t_ns) {
  format::GroupRecord r;
  memset(&r, 0, sizeof r);
  r.api = static_cast<uint16_t>(api);
  r.status = status;
  r.depth = t_group_depth;
  r.t_ns = t_ns;
  return r;
}

}  // namespace

CommInfo DescribeComm(ncclComm_t comm) {
  CommInfo info;
  info.rank = CommQuery(g_comm_user_rank, comm);
  info.size = CommQuery(g_comm_count, comm);
  info.device = CommQuery(g_comm_cu_device, comm);
  return info;
}

// A snapshot is taken only on the thread that issued its operation, before the poll that reported success returns
// to it: the application enqueues the work that consumes the output only after that, so the copy comes first.
// (Taken on another thread, such as a watchdog polling the same communicator, the copy could land behind that
// work.) Errors and the communicator's end release every thread's snapshots.
void ReleasePending(CaptureEngine* engine, uint64_t comm, ncclResult_t async, const std::string& why) {
  for (const DeferredCollective& d : Pending().Take(comm, /*only_this_thread=*/async == ncclSuccess)) {
    if (async == ncclSuccess)
      engine->CaptureTensor(d.seq, d.stream, d.recv);
    else
      engine->Drop(d.seq, why);
  }
}

ncclResult_t TraceCollective(const CollectiveCall& c, RealCall real, const void* context) {
  CaptureEngine* engine = Engine();
  const format::CollectiveInfo* row = format::FindCollective(static_cast<uint16_t>(c.api));
  if (engine == nullptr || row == nullptr) return real(context);
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/true);
  format::CollectiveRecord r;
  memset(&r, 0, sizeof r);
  r.seq = slot.seq;
  r.t_ns = MonotonicNs();
  r.api = static_cast<uint16_t>(c.api);
  r.red_op = c.red_op < 0 ? 0xff : static_cast<uint8_t>(c.red_op);  // built-in ops are 0..4
  r.in_group = t_group_depth > 0;
  r.comm_handle = reinterpret_cast<uint64_t>(c.comm);
  CommInfo info;
  if (c.comm != nullptr) {
    auto describe = [comm = c.comm] { return DescribeComm(comm); };
    info = row->point_to_point()
               ? Comms().NextP2p(r.comm_handle, describe, c.root_or_peer, c.api == format::ApiId::kNcclSend,
                                 &r.comm_op_index)
               : Comms().NextOp(r.comm_handle, describe, &r.comm_op_index);
    if (info.rank < 0 || info.size < 0) {  // a child of a non-blocking split, now ready to say
      Comms().Complete(r.comm_handle, DescribeComm(c.comm));
      Comms().Find(r.comm_handle, &info);
    }
  }
  r.comm_hash = info.hash;
  r.comm_rank = info.rank;
  r.comm_size = info.size;
  r.nccl_dtype = c.datatype;
  r.root_or_peer = c.root_or_peer;
  r.count = c.count;
  r.sendbuff = reinterpret_cast<uint64_t>(c.sendbuff);
  r.recvbuff = reinterpret_cast<uint64_t>(c.recvbuff);
  r.stream = reinterpret_cast<uint64_t>(c.stream);

  // Every valid ncclDataType_t has a ttrace dtype: an unknown one is an invalid call, which NCCL rejects.
  const format::DType dtype = DTypeFromNccl(c.datatype);
  uint64_t send_n = 0, recv_n = 0;
  const bool known = format::ExtentElements(row->send, c.count, info.size, info.rank, c.root_or_peer, &send_n) &&
                     format::ExtentElements(row->recv, c.count, info.size, info.rank, c.root_or_peer, &recv_n);
  const DeferredCollective d{r.seq, c.stream, Vector(format::TensorSlot::kSend, dtype, c.sendbuff, send_n),
                             Vector(format::TensorSlot::kRecv, dtype, c.recvbuff, recv_n), r.comm_handle};
  const bool has_send = d.send.ptr != nullptr, has_recv = d.recv.ptr != nullptr;
  const bool capture = engine->capturing_tensors() && c.comm != nullptr && known &&
                       dtype != format::DType::kInvalid && (has_send || has_recv);
  if (capture && !r.in_group && has_send) engine->CaptureTensor(r.seq, c.stream, d.send);
  const ncclResult_t status = real(context);
  if (capture && status == ncclSuccess) {
    if (r.in_group)
      t_deferred.push_back(d);
    else if (has_recv)
      engine->CaptureTensor(r.seq, c.stream, d.recv);
  } else if (capture && status == ncclInProgress && !r.in_group && has_recv) {
    Pending().Add(d);
  }
  r.status = status;
  engine->Publish(slot, format::RecordType::kCollective, r);
  return status;
}

ncclResult_t TraceGroupStart(RealCall real, const void* context) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real(context);
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const ncclResult_t status = real(context);
  if (status == ncclSuccess) ++t_group_depth;
  engine->Publish(slot, format::RecordType::kGroup, GroupRec(format::ApiId::kNcclGroupStart, status, t));
  return status;
}

ncclResult_t TraceGroupEnd(RealCall real, const void* context) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real(context);
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const bool outermost = t_group_depth == 1;
  std::vector<DeferredCollective> deferred;
  if (outermost) deferred.swap(t_deferred);
  for (const auto& d : deferred)
    if (d.send.ptr != nullptr) engine->CaptureTensor(d.seq, d.stream, d.send);
  const ncclResult_t status = real(context);
  if (t_group_depth > 0) --t_group_depth;
  for (const auto& d : deferred) {
    if (d.recv.ptr == nullptr) continue;
    if (status == ncclSuccess)
      engine->CaptureTensor(d.seq, d.stream, d.recv);
    else if (status == ncclInProgress)
      Pending().Add(d);
  }
  engine->Publish(slot, format::RecordType::kGroup, GroupRec(format::ApiId::kNcclGroupEnd, status, t));
  return status;
}

}  // namespace ttrace::shim
