// SIMGPU_FAULT coll specs (grammar in tools/simgpu/core/simgpu.h) as simgpu's NCCL carries them out. Each fault
// acts on the result of one collective (`call`, numbered by simgpu::NextCallIndex(kCollective) on the host) on
// the rank named, only there, as a corrupted receive on that GPU would:
//   bit=B / value=V  element `elem` of the result: recvbuff of AllReduce, ReduceScatter, Broadcast and Scatter;
//                    all nranks blocks of AllGather and AlltoAll; the root's recvbuff of Reduce and Gather.
//   stale            the result is replaced by this rank's result of the previous collective on the same
//                    communicator (its bytes, over the shorter of the two; the rest stays correct).
//   swap=I,J         AllGather: blocks I and J of the output are exchanged.
//   drop=S           AllReduce, ReduceScatter, Reduce: the reduction on this rank omits rank S's contribution
//                    (the other ranks' results are unaffected).
// Several faults on one call apply in this order: drop (during the reduction), then stale, swap, bit and
// value in spec order. A fault that cannot be applied to the call it names (an action the collective has no
// result for, a rank or element out of range, stale on a communicator's first collective) prints the spec and
// exits with status 2: a test must never pass because its fault silently did nothing.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_COLL_FAULTS_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_COLL_FAULTS_H_

#include <nccl.h>

#include <string>

#include "tools/simgpu/nccl/op.h"

namespace simgpu::nccl {

class Comm;

// Host, after argument checks: numbers the collective (op->fault_call) and attaches its matching faults
// (op->faults), stopping the process for a fault that cannot apply to this call.
void NumberCollective(const Comm& comm, Op* op);

// Worker, inside the communicator's turn: runs the collective with its faults.
ncclResult_t RunFaultedCollective(Comm& comm, const Op& op, std::string* error);

// ncclCommDestroy/Abort: drops the communicator's remembered result (kept only when a stale fault exists).
void ForgetCommResults(const Comm* comm);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_COLL_FAULTS_H_
