// The host side of issuing work: groups (ncclGroupStart/End, per calling thread, as in NCCL), per-communicator
// tasks, the hand-off to stream workers, and the background jobs of non-blocking communicators.
//
// Every API call that issues work runs inside a group (an implicit one of its own when the application opened
// none), as NCCL's ncclEnqueueCheck does. The outermost ncclGroupEnd first runs the communicator inits and
// splits deferred in the group (concurrently, since each waits for its peers), then issues the queued operations
// as one task per communicator: the task runs that communicator's collectives in call order, then all its sends
// and receives in one progress loop. A task whose operations use several streams runs on the first one, after
// the others have reached the group, and they wait for it.
//
// Under CUDA stream capture (a communicator's streams in a group all captured by the same capture, else
// ncclGroupEnd returns ncclInvalidUsage and issues nothing, as NCCL), the task is recorded into the graph and
// runs again, on the buffers' contents then, at every launch of the graph; every rank must launch its graphs,
// and issue its other calls on the communicator, in the same order. A captured collective keeps the
// SIMGPU_FAULT call number it took at capture, so a fault naming it applies at every launch.
//
// Blocking mode (ncclConfig_t.blocking, NCCL group.cc): a group is non-blocking when its communicators are.
// Then ncclGroupEnd marks each of them ncclInProgress (Comm::BeginAsync), does the work above on a background
// thread and returns ncclInProgress; the communicators return to ncclSuccess (or their error) when it is done.
// Inits and splits of blocking and non-blocking communicators may not share a group (ncclInvalidArgument).
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_GROUP_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_GROUP_H_

#include <nccl.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "tools/simgpu/nccl/op.h"

namespace simgpu::nccl {

bool InGroup();
ncclResult_t GroupStart();
// Returns the first error of the group's calls (then none of its operations is issued) or of its deferred
// inits and splits; ncclInProgress for a non-blocking group; ncclInvalidUsage without a matching
// ncclGroupStart.
ncclResult_t GroupEnd();

// Queues a validated operation in the current group (GroupStart must have been called).
void Submit(const Op& op);
// Remembers the error a call inside the group returned, so that ncclGroupEnd reports it too (ncclInProgress is
// not an error).
void RecordGroupError(ncclResult_t error);
// Deferred to the outermost ncclGroupEnd. Return ncclInvalidArgument (logged, and recorded for the group) when
// the communicator's blocking mode differs from that of the group's other inits and splits.
ncclResult_t DeferInit(ncclComm* comm, int nranks, const ncclUniqueId& id, int rank, int device);
// ncclCommSplit of `parent`; `child` is null for NCCL_SPLIT_NOCOLOR. *newcomm receives the child once it has
// joined (NCCL stores it when the split completes); a failed blocking split deletes the child.
ncclResult_t DeferSplit(ncclComm* parent, int color, int key, ncclComm* child, ncclComm_t* newcomm);

// Runs `job` now for a blocking communicator, or on a background thread for a non-blocking one (after
// SIMGPU_NCCL_ASYNC_DELAY_MS), the communicator reporting ncclInProgress meanwhile; returns ncclSuccess or
// ncclInProgress accordingly. Used by ncclCommFinalize.
ncclResult_t RunJob(ncclComm* comm, const std::function<void()>& job);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_GROUP_H_
