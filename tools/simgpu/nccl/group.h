// The host side of issuing work: groups (ncclGroupStart/End, per calling thread, as in NCCL), per-communicator
// tasks, and the hand-off to stream workers.
//
// A validated operation is issued at once outside a group. Inside a group it is queued, and the outermost
// ncclGroupEnd first runs the communicator inits deferred in the group (concurrently, since each waits for its
// peers), then issues the queued operations as one task per communicator: the task runs that communicator's
// collectives in call order, then all its sends and receives in one progress loop. A task whose operations use
// several streams runs on the first one, after the others have reached the group, and they wait for it.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_GROUP_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_GROUP_H_

#include <nccl.h>

#include <cstdint>

#include "tools/simgpu/nccl/op.h"

namespace simgpu::nccl {

bool InGroup();
ncclResult_t GroupStart();
// Returns the first error of the group's calls (then none of its operations is issued) or of its deferred
// inits; ncclInvalidUsage without a matching ncclGroupStart.
ncclResult_t GroupEnd();

void Submit(const Op& op);
// Remembers the error a call inside the group returned, so that ncclGroupEnd reports it too.
void RecordGroupError(ncclResult_t error);
void DeferInit(ncclComm* comm, int nranks, const ncclUniqueId& id, int rank, int device);

// The 0-based index of the next collective of this process (AllReduce, AllGather, ReduceScatter, Broadcast,
// Reduce; Send and Recv are not collectives and do not count), in host call order: the `call` of SIMGPU_FAULT
// coll specs. A call counts once it passed its argument checks (even inside a group that is later dropped).
// The fault applies to the call's result on this rank: recvbuff of AllReduce, AllGather (all nranks blocks),
// ReduceScatter and Broadcast; for Reduce only the root has a result, so a fault aimed at a non-root rank's
// Reduce cannot be applied and stops the process (simgpu::ApplyFaults).
int64_t NextCollectiveCall();

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_GROUP_H_
