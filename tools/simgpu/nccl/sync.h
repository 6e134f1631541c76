// Waiting on peers through a segment: the bell (a process-shared futex word), barriers, and the watchdog that
// turns a peer that never comes into an error instead of a hang.
//
// Every state change another rank may wait for (barrier arrival, ring transfer, failure) is followed by
// RingBell. A waiter reads the bell, checks its condition, and sleeps only while the bell is unchanged, so no
// wake-up is lost. Called from stream workers and from host threads inside ncclCommInitRank.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_SYNC_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_SYNC_H_

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/simgpu/nccl/segment.h"

namespace simgpu::nccl {

struct WaitContext {
  Segment* seg;
  int rank;
  const std::atomic<bool>* local_abort;  // set by ncclCommAbort; may be null
};

void RingBell(Segment* seg);

// Records the first failure in the segment (rank and reason) so that every peer stops waiting.
void PublishFailure(Segment* seg, int rank, const std::string& why);

enum class Step { kDone, kProgress, kIdle };

// Calls step() until it returns kDone, sleeping on the bell while it returns kIdle. Gives up with
//   ncclSystemError  after SIMGPU_NCCL_TIMEOUT_S seconds without progress (the message names the ranks
//                    missing() returns), or when local_abort is set;
//   ncclRemoteError  when one of those ranks has exited, or another rank published a failure.
// `what` names the operation in the message written to *error.
ncclResult_t Drive(const WaitContext& ctx, const char* what, const std::function<Step()>& step,
                   const std::function<std::vector<int>()>& missing, std::string* error);

// Arrives at barrier `epoch` (every rank passes the same epochs 1, 2, 3, ... in order) and waits for all ranks.
// Stream barriers (RankSlot::epoch) order the collectives run by stream workers; host barriers
// (RankSlot::host_epoch) order host-side exchanges (ncclCommSplit), which must not disturb the former.
enum class BarrierKind { kStream, kHost };
ncclResult_t Barrier(const WaitContext& ctx, uint64_t epoch, const char* what, std::string* error,
                     BarrierKind kind = BarrierKind::kStream);

// True when the process is gone or a zombie (it will never make progress again).
bool ProcessGone(int pid);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_SYNC_H_
