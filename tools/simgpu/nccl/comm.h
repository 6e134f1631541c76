// A communicator: one rank's membership in a clique whose ranks share a Segment.
//
// Threads: the host thread that created it calls Init*, BeginIssue, WaitIdle, Abort and the getters; stream
// workers run the issued tasks, one at a time and in issue order (WaitTurn/EndTurn), so that everything a task
// touches (the barrier epoch, the segment's staging buffers and rings) is used by one thread at a time.
// Ownership: created with `new ncclComm` by the API, deleted by ncclCommDestroy/ncclCommAbort after WaitIdle.
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

class Comm {
 public:
  Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // Joins the clique named by `id` as `rank` of `nranks` on CUDA device `device`; blocks until every rank has
  // joined. Errors (logged): ncclInvalidArgument (bad id), ncclInvalidUsage (rank joined twice, nranks
  // mismatch, two ranks on one device), ncclSystemError (OS failure, timeout), ncclRemoteError (a peer died).
  ncclResult_t InitRank(int nranks, const ncclUniqueId& id, int rank, int device);
  // Makes comms[i] rank i on devices[i] of one clique held by this process.
  static ncclResult_t InitAll(const std::vector<Comm*>& comms, const std::vector<int>& devices);
  // For ncclCommInitRank inside a group: status() is ncclInProgress until InitRank runs at ncclGroupEnd.
  void MarkInitPending() { status_.store(ncclInProgress); }

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  Segment* segment() const { return seg_.get(); }
  WaitContext wait_context() const { return WaitContext{seg_.get(), rank_, &local_abort_}; }

  // ncclSuccess while usable; otherwise the init error or the first asynchronous failure.
  ncclResult_t status() const { return static_cast<ncclResult_t>(status_.load()); }

  // Execution order: the host takes a ticket per task; workers run tickets in order.
  uint64_t BeginIssue();
  void WaitTurn(uint64_t ticket);
  void EndTurn(uint64_t ticket);
  void WaitIdle();  // host: returns once every issued task has run

  // Worker, inside a turn: the epoch the next Barrier will arrive at (its parity picks the staging buffer).
  uint64_t next_epoch() const { return epoch_ + 1; }
  ncclResult_t Barrier(const char* what, std::string* error);

  // Worker: an operation failed. Logs `message` (always printed), tells the peers through the segment and
  // makes every later call on this communicator return `code`.
  void Fail(ncclResult_t code, const std::string& message);
  // Host (ncclCommAbort): stops this rank's pending waits and tells the peers.
  void Abort();
  // Why the communicator failed (the first Fail/Abort message), empty while it is healthy.
  std::string failure() const;

 private:
  ncclResult_t Join(int device);

  int rank_ = -1;
  int nranks_ = 0;
  int device_ = 0;
  std::shared_ptr<Segment> seg_;
  std::atomic<int> status_{ncclSuccess};
  std::atomic<bool> local_abort_{false};
  uint64_t epoch_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string failure_;  // guarded by mu_
  uint64_t issued_ = 0;
  uint64_t ran_ = 0;
};

}  // namespace simgpu::nccl

// The opaque type behind ncclComm_t.
struct ncclComm : public simgpu::nccl::Comm {};

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_COMM_H_
