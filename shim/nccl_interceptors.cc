// NCCL interceptors. This file includes nccl.h so that an interceptor whose signature drifts from the vendor's
// declaration does not compile; the real functions are the strong pnccl* aliases (interception.cc).
//
// Communicator calls feed CommRegistry (identity = hash of the unique id, rank, size, device) and are recorded
// without a seq. Collectives get a seq and a CollectiveRecord; in full mode their send buffer is captured before
// and their receive buffer after the operation, on the call's stream.
//
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
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "shim/capture_engine.h"
#include "shim/comm_registry.h"
#include "shim/interception.h"
#include "shim/runtime.h"
#include "shim/tensor_pack.h"

#define TTRACE_LIBRARY kNccl
#define TTRACE_UNRESOLVED_STATUS ncclInternalError

namespace ttrace::shim {
namespace {

LazySymbol g_comm_count(format::Library::kNccl, "ncclCommCount");
LazySymbol g_comm_user_rank(format::Library::kNccl, "ncclCommUserRank");
LazySymbol g_comm_cu_device(format::Library::kNccl, "ncclCommCuDevice");

struct DeferredCollective {
  uint64_t seq;
  cudaStream_t stream;
  TensorSpec send, recv;
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

// Captures or drops the snapshots pending on `comm` now that NCCL reported `async` for it. A snapshot is taken
// only on the thread that issued its operation, before the poll that reported success returns to it: the
// application enqueues the work that consumes the output only after that, so the copy comes first. (Taken on
// another thread, such as a watchdog polling the same communicator, the copy could land behind that work.)
// Errors and the communicator's end release every thread's snapshots.
void ReleasePending(CaptureEngine* engine, uint64_t comm, ncclResult_t async, const std::string& why) {
  for (const DeferredCollective& d : Pending().Take(comm, /*only_this_thread=*/async == ncclSuccess)) {
    if (async == ncclSuccess)
      engine->CaptureTensor(d.seq, d.stream, d.recv);
    else
      engine->Drop(d.seq, why);
  }
}

thread_local int t_group_depth = 0;
thread_local std::vector<DeferredCollective> t_deferred;

using CommQueryFn = decltype(&::pncclCommCount);
static_assert(std::is_same_v<CommQueryFn, decltype(&::pncclCommUserRank)> &&
              std::is_same_v<CommQueryFn, decltype(&::pncclCommCuDevice)>);

int CommQuery(LazySymbol& symbol, ncclComm_t comm) {
  using Query = CommQueryFn;
  auto fn = reinterpret_cast<Query>(symbol.Get());
  int value = -1;
  if (fn == nullptr || comm == nullptr || fn(comm, &value) != ncclSuccess) return -1;
  return value;
}

// A communicator created through an API the shim does not intercept: ask NCCL what it can tell.
CommInfo DescribeUnknown(ncclComm_t comm) {
  CommInfo info;
  info.rank = CommQuery(g_comm_user_rank, comm);
  info.size = CommQuery(g_comm_count, comm);
  info.device = CommQuery(g_comm_cu_device, comm);
  return info;
}

format::CommInitRecord InitRecord(format::ApiId api, ncclResult_t status, const CommInfo& info, uint64_t handle,
                                  uint64_t t_ns) {
  format::CommInitRecord r;
  memset(&r, 0, sizeof r);
  r.api = static_cast<uint16_t>(api);
  r.status = status;
  r.comm_hash = info.hash;
  r.comm_handle = handle;
  r.comm_rank = info.rank;
  r.comm_size = info.size;
  r.cuda_device = info.device;
  r.t_ns = t_ns;
  return r;
}

bool Created(ncclResult_t status) { return status == ncclSuccess || status == ncclInProgress; }

// ncclCommInitRank and ncclCommInitRankConfig.
template <typename Real>
ncclResult_t TraceInitRank(format::ApiId api, ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                           const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const ncclResult_t status = real();
  CommInfo info;
  info.hash = Fnv1a64(id.internal, sizeof id.internal);
  info.rank = rank;
  info.size = nranks;
  uint64_t handle = 0;
  if (Created(status) && comm != nullptr) {
    handle = reinterpret_cast<uint64_t>(*comm);
    info.device = CommQuery(g_comm_cu_device, *comm);
    Comms().Add(handle, info);
  }
  engine->Publish(slot.ticket, format::RecordType::kCommInit, InitRecord(api, status, info, handle, t));
  return status;
}

// ncclCommDestroy, ncclCommAbort and ncclCommFinalize, recorded as CommDestroyRecords with their api.
// Destroy and abort end the communicator: snapshots still pending on it are dropped with a notice (its operations
// were never reported enqueued), it leaves the registry, and the sink is flushed (a process often dies right
// after). Finalize only flushes NCCL's work; the communicator lives on until its destroy.
template <typename Real>
ncclResult_t TraceCommEnd(format::ApiId api, ncclComm_t comm, const Real& real) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return real();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const uint64_t handle = reinterpret_cast<uint64_t>(comm);
  const bool ends = api != format::ApiId::kNcclCommFinalize;
  if (ends) {
    ReleasePending(engine, handle, ncclInvalidUsage,
                   std::string("output of a non-blocking operation never reported complete before ") +
                       format::ApiName(static_cast<uint16_t>(api)));
  }
  const ncclResult_t status = real();
  CommInfo info;
  if (comm != nullptr) {
    if (ends)
      Comms().Remove(handle, &info);
    else
      Comms().Find(handle, &info);
  }
  format::CommDestroyRecord r;
  memset(&r, 0, sizeof r);
  r.api = static_cast<uint16_t>(api);
  r.status = status;
  r.comm_hash = info.hash;
  r.comm_handle = handle;
  r.t_ns = t;
  engine->Publish(slot.ticket, format::RecordType::kCommDestroy, r);
  if (ends) engine->FlushAndWait(std::max(2000, static_cast<int>(2 * GetOptions().flush_ms)));
  return status;
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
}  // namespace ttrace::shim

using ttrace::format::ApiId;
using ttrace::format::RecordType;
using ttrace::format::TensorSlot;
using ttrace::shim::CaptureEngine;
using ttrace::shim::CommInfo;
using ttrace::shim::Comms;
using ttrace::shim::Engine;
using ttrace::shim::MonotonicNs;
using ttrace::shim::t_deferred;
using ttrace::shim::t_group_depth;
using ttrace::shim::TensorSpec;

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank),
                   (comm, nranks, commId, rank)) {
  return ttrace::shim::TraceInitRank(ApiId::kNcclCommInitRank, comm, nranks, commId, rank,
                                     [&] { return REAL(ncclCommInitRank)(comm, nranks, commId, rank); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommInitRankConfig,
                   (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),
                   (comm, nranks, commId, rank, config)) {
  return ttrace::shim::TraceInitRank(ApiId::kNcclCommInitRankConfig, comm, nranks, commId, rank,
                                     [&] { return REAL(ncclCommInitRankConfig)(comm, nranks, commId, rank, config); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommInitAll, (ncclComm_t* comm, int ndev, const int* devlist),
                   (comm, ndev, devlist)) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return REAL(ncclCommInitAll)(comm, ndev, devlist);
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const ncclResult_t status = REAL(ncclCommInitAll)(comm, ndev, devlist);
  CommInfo info;
  info.hash = ttrace::shim::InitAllHash(static_cast<uint32_t>(getpid()), Comms().NextInitAll());
  info.size = ndev;
  if (!ttrace::shim::Created(status) || comm == nullptr || ndev < 1) {
    engine->Publish(slot.ticket, RecordType::kCommInit,
                    ttrace::shim::InitRecord(ApiId::kNcclCommInitAll, status, info, 0, t));
    return status;
  }
  for (int i = 0; i < ndev; ++i) {
    info.rank = i;
    info.device = devlist != nullptr ? devlist[i] : i;
    const uint64_t handle = reinterpret_cast<uint64_t>(comm[i]);
    Comms().Add(handle, info);
    const uint64_t ticket = i == 0 ? slot.ticket : engine->Reserve(/*op=*/false).ticket;
    engine->Publish(ticket, RecordType::kCommInit,
                    ttrace::shim::InitRecord(ApiId::kNcclCommInitAll, status, info, handle, t));
  }
  return status;
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm)) {
  return ttrace::shim::TraceCommEnd(ApiId::kNcclCommDestroy, comm, [&] { return REAL(ncclCommDestroy)(comm); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm)) {
  return ttrace::shim::TraceCommEnd(ApiId::kNcclCommAbort, comm, [&] { return REAL(ncclCommAbort)(comm); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm)) {
  return ttrace::shim::TraceCommEnd(ApiId::kNcclCommFinalize, comm, [&] { return REAL(ncclCommFinalize)(comm); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclAllReduce,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, op, comm, stream)) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return REAL(ncclAllReduce)(sendbuff, recvbuff, count, datatype, op, comm, stream);
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/true);
  ttrace::format::CollectiveRecord r;
  memset(&r, 0, sizeof r);
  r.seq = slot.seq;
  r.t_ns = MonotonicNs();
  r.api = static_cast<uint16_t>(ApiId::kNcclAllReduce);
  r.red_op = static_cast<uint8_t>(op);  // built-in ops are 0..4; user-defined ones start at ncclNumOps
  r.in_group = t_group_depth > 0;
  r.comm_handle = reinterpret_cast<uint64_t>(comm);
  CommInfo info;
  if (comm != nullptr)
    info = Comms().NextOp(r.comm_handle, [comm] { return ttrace::shim::DescribeUnknown(comm); },
                          &r.comm_op_index);
  r.comm_hash = info.hash;
  r.comm_rank = info.rank;
  r.comm_size = info.size;
  r.nccl_dtype = datatype;
  r.root_or_peer = -1;
  r.count = count;
  r.sendbuff = reinterpret_cast<uint64_t>(sendbuff);
  r.recvbuff = reinterpret_cast<uint64_t>(recvbuff);
  r.stream = reinterpret_cast<uint64_t>(stream);

  TensorSpec send;
  send.slot = TensorSlot::kSend;
  send.dtype = ttrace::shim::DTypeFromNccl(datatype);
  send.ptr = sendbuff;
  send.rows = send.ld = count <= INT64_MAX ? static_cast<int64_t>(count) : 0;
  send.cols = 1;
  TensorSpec recv = send;
  recv.slot = TensorSlot::kRecv;
  recv.ptr = recvbuff;
  // Every valid ncclDataType_t has a ttrace dtype: an unknown one is an invalid call, which NCCL rejects.
  const bool capture = engine->capturing_tensors() && comm != nullptr && count > 0 &&
                       send.dtype != ttrace::format::DType::kInvalid;
  if (capture && !r.in_group) engine->CaptureTensor(r.seq, stream, send);
  const ncclResult_t status = REAL(ncclAllReduce)(sendbuff, recvbuff, count, datatype, op, comm, stream);
  if (capture && status == ncclSuccess) {
    if (r.in_group)
      t_deferred.push_back({r.seq, stream, send, recv, r.comm_handle});
    else
      engine->CaptureTensor(r.seq, stream, recv);
  } else if (capture && status == ncclInProgress && !r.in_group) {
    ttrace::shim::Pending().Add({r.seq, stream, send, recv, r.comm_handle});
  }
  r.status = status;
  engine->Publish(slot.ticket, RecordType::kCollective, r);
  return status;
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclGroupStart, (), ()) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return REAL(ncclGroupStart)();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const ncclResult_t status = REAL(ncclGroupStart)();
  if (status == ncclSuccess) ++t_group_depth;
  engine->Publish(slot.ticket, RecordType::kGroup, ttrace::shim::GroupRec(ApiId::kNcclGroupStart, status, t));
  return status;
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclGroupEnd, (), ()) {
  CaptureEngine* engine = Engine();
  if (engine == nullptr) return REAL(ncclGroupEnd)();
  const CaptureEngine::Slot slot = engine->Reserve(/*op=*/false);
  const uint64_t t = MonotonicNs();
  const bool outermost = t_group_depth == 1;
  std::vector<ttrace::shim::DeferredCollective> deferred;
  if (outermost) deferred.swap(t_deferred);
  for (const auto& d : deferred) engine->CaptureTensor(d.seq, d.stream, d.send);
  const ncclResult_t status = REAL(ncclGroupEnd)();
  if (t_group_depth > 0) --t_group_depth;
  for (const auto& d : deferred) {
    if (status == ncclSuccess)
      engine->CaptureTensor(d.seq, d.stream, d.recv);
    else if (status == ncclInProgress)
      ttrace::shim::Pending().Add(d);
  }
  engine->Publish(slot.ticket, RecordType::kGroup, ttrace::shim::GroupRec(ApiId::kNcclGroupEnd, status, t));
  return status;
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError),
                   (comm, asyncError)) {
  const ncclResult_t status = REAL(ncclCommGetAsyncError)(comm, asyncError);
  CaptureEngine* engine = Engine();
  if (engine == nullptr || status != ncclSuccess || asyncError == nullptr || *asyncError == ncclInProgress)
    return status;
  ttrace::shim::ReleasePending(engine, reinterpret_cast<uint64_t>(comm), *asyncError,
                               "output of a non-blocking operation whose communicator reported an asynchronous error");
  return status;
}
