// A communicator: one rank's membership in a clique whose ranks share a Segment.
//
// Threads: the host thread that created it calls Init*, Split, BeginIssue, WaitIdle, Abort, the reduction-op
// table and the getters; background jobs of non-blocking communicators (group.h) call Init*, Split and
// BeginIssue in its place while the communicator reports ncclInProgress (the application may not use it then);
// stream workers run the issued tasks, one at a time and in issue order (WaitTurn/EndTurn), so that everything
// a task touches (the barrier epoch, the segment's staging buffers and rings) is used by one thread at a time.
// Ownership: created with `new ncclComm` by the API, deleted by ncclCommDestroy/ncclCommAbort after WaitAsync and
// WaitIdle.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_COMM_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_COMM_H_

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tools/simgpu/nccl/segment.h"
#include "tools/simgpu/nccl/sync.h"

namespace simgpu::nccl {

// A reduction operator made by ncclRedOpCreatePreMulSum.
struct UserRedOp {
  ncclDataType_t dtype;
  bool scalar_on_device;  // ncclScalarDevice: read through `scalar_ptr` when the collective runs
  uint64_t scalar;        // ncclScalarHostImmediate: the scalar's bytes, copied at creation
  const void* scalar_ptr;
};

class Comm {
 public:
  Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // config.blocking after NCCL_COMM_BLOCKING; set by the API before any use.
  void set_blocking(bool blocking) { blocking_ = blocking; }
  bool blocking() const { return blocking_; }

  // Joins the clique named by `id` as `rank` of `nranks` on CUDA device `device`; blocks until every rank has
  // joined. Errors (logged, and kept as the communicator's error): ncclInvalidArgument (bad id), ncclInvalidUsage
  // (rank joined twice, nranks mismatch, two ranks on one device), ncclSystemError (OS failure, timeout),
  // ncclRemoteError (a peer died).
  ncclResult_t InitRank(int nranks, const ncclUniqueId& id, int rank, int device);
  // Makes comms[i] rank i on devices[i] of one clique held by this process.
  static ncclResult_t InitAll(const std::vector<Comm*>& comms, const std::vector<int>& devices);
  // ncclCommSplit's work on this (parent) communicator: exchanges (color, key) with every rank (all of them
  // call Split, in the same order of splits), then, unless color is NCCL_SPLIT_NOCOLOR, makes `child` rank
  // i of the ranks that gave the same color, ordered by key and then by parent rank (as NCCL's
  // commGetSplitInfo). The child's identity (hash() and its segment's name) derives from (this hash(), the
  // number of splits of this communicator so far, color), as NCCL's child commHash does, so all its members
  // meet without exchanging an id. Errors of the exchange fail this communicator; errors of the join, the child.
  ncclResult_t Split(int color, int key, Comm* child);
  // For ncclCommInitRank inside a group: status() is ncclInProgress until InitRank runs at ncclGroupEnd.
  void MarkInitPending() { init_pending_.store(true); }
  // ncclCommFinalize: true the first time.
  bool MarkFinalized() { return !finalized_.exchange(true); }

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  uint64_t hash() const { return hash_; }
  Segment* segment() const { return seg_.get(); }
  WaitContext wait_context() const { return WaitContext{seg_.get(), rank_, &local_abort_}; }

  // The first error (failed init, asynchronous failure, abort); ncclSuccess while healthy.
  ncclResult_t error() const { return static_cast<ncclResult_t>(error_.load()); }
  // ncclCommGetAsyncError: error() if any; else ncclInProgress while an init is pending or a background job
  // runs; else ncclSuccess.
  ncclResult_t status() const;

  // Background jobs (group.h): BeginAsync on the host before the job starts, EndAsync from the job when done.
  void BeginAsync();
  void EndAsync();
  void WaitAsync();  // host: returns once no job is running

  // Execution order: the host takes a ticket per task; workers run tickets in order, one task at a time.
  uint64_t BeginIssue();
  void WaitTurn(uint64_t ticket);
  void EndTurn(uint64_t ticket);
  // Tasks recorded by stream capture run once per graph launch, so they cannot hold a ticket taken at issue:
  // they run when their stream reaches them, one task at a time with the ticketed ones (BeginCapturedTurn waits
  // only for the running task, never for a ticket, which may be queued behind the launch on the same stream).
  void BeginCapturedTurn();
  void EndCapturedTurn();
  void WaitIdle();  // host: returns once every issued task has run and no captured task is running

  // Worker, inside a turn: the epoch the next Barrier will arrive at (its parity picks the staging buffer).
  uint64_t next_epoch() const { return epoch_ + 1; }
  ncclResult_t Barrier(const char* what, std::string* error);

  // Worker or host: an operation failed. Logs `message` (always printed), tells the peers through the segment
  // and makes every later call on this communicator return `code`.
  void Fail(ncclResult_t code, const std::string& message);
  // Host (ncclCommAbort): stops this rank's pending waits and tells the peers.
  void Abort();
  // Why the communicator failed (the first Fail/Abort message), empty while it is healthy.
  std::string failure() const;

  // Reduction operators of this communicator (ncclRedOpCreatePreMulSum / ncclRedOpDestroy). Handles are
  // ncclNumOps + slot, mangled with a hash of this object's address as NCCL does (ncclUserRedOpMangle), so a
  // handle of another communicator is almost never accepted.
  ncclRedOp_t AddRedOp(const UserRedOp& op);
  bool FindRedOp(ncclRedOp_t handle, UserRedOp* out) const;
  bool RemoveRedOp(ncclRedOp_t handle);

 private:
  ncclResult_t Join(int device);
  int RedOpSlot(ncclRedOp_t handle) const;

  int rank_ = -1;
  int nranks_ = 0;
  int device_ = 0;
  bool blocking_ = true;
  uint64_t hash_ = 0;
  std::shared_ptr<Segment> seg_;
  std::atomic<int> error_{ncclSuccess};
  std::atomic<bool> init_pending_{false};
  std::atomic<bool> local_abort_{false};
  std::atomic<bool> finalized_{false};
  uint64_t epoch_ = 0;       // stream barriers passed (workers)
  uint64_t host_epoch_ = 0;  // host exchanges passed (Split)
  int splits_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string failure_;  // guarded by mu_
  uint64_t issued_ = 0;  // guarded by mu_
  uint64_t ran_ = 0;     // guarded by mu_
  bool busy_ = false;    // a task is running; guarded by mu_
  int jobs_ = 0;         // guarded by mu_
  std::vector<std::pair<bool, UserRedOp>> red_ops_;  // (live, op) per slot; guarded by mu_
};

}  // namespace simgpu::nccl

// The opaque type behind ncclComm_t.
struct ncclComm : public simgpu::nccl::Comm {};

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_COMM_H_
