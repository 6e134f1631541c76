// One validated NCCL operation, and the executors that run it on a stream worker.
//
// Executors run inside the communicator's turn (Comm::WaitTurn), on the stream worker of the op's stream. They
// block until the peers take part, bounded by SIMGPU_NCCL_TIMEOUT_S; on failure they return the NCCL code and
// a message and leave the output partially written.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_OP_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_OP_H_

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/reduce_kernels.h"

namespace simgpu::nccl {

class Comm;

enum class OpKind : uint32_t {
  kAllReduce = 1, kAllGather, kReduceScatter, kBroadcast, kReduce, kSend, kRecv, kAlltoAll, kGather, kScatter
};

const char* OpName(OpKind kind);  // "ncclAllReduce", ...
inline bool IsP2P(OpKind k) { return k == OpKind::kSend || k == OpKind::kRecv; }
inline bool IsReduction(OpKind k) {
  return k == OpKind::kAllReduce || k == OpKind::kReduceScatter || k == OpKind::kReduce;
}
inline bool HasRoot(OpKind k) {
  return k == OpKind::kBroadcast || k == OpKind::kReduce || k == OpKind::kGather || k == OpKind::kScatter;
}

struct Op {
  OpKind kind = OpKind::kAllReduce;
  Comm* comm = nullptr;
  simgpu::Stream* stream = nullptr;
  const void* send = nullptr;  // kRecv: unused
  void* recv = nullptr;        // kSend: unused
  size_t count = 0;  // elements: AllReduce/Broadcast/Reduce/Send/Recv count, AllGather sendcount,
                     // ReduceScatter recvcount, AlltoAll/Gather/Scatter count per rank
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;  // reductions only: as the application passed it
  int root = 0;                 // Broadcast/Reduce/Gather/Scatter root, Send/Recv peer
  Reduction red{};              // reductions only: what runs (red.scalar is read through scalar_ptr if set)
  const void* scalar_ptr = nullptr;  // PreMulSum with ncclScalarDevice: read when the collective runs
  int64_t fault_call = -1;           // the collective's SIMGPU_FAULT call number; -1 for Send/Recv
  std::vector<simgpu::Fault> faults;  // the coll faults matching this call on this rank (coll_faults.h)
};

// Runs one collective for this rank. A reduction omits rank `drop`'s contribution from this rank's result when
// drop >= 0 (the coll:drop fault).
ncclResult_t RunCollective(Comm& comm, const Op& op, int drop, std::string* error);

// Runs this rank's sends and receives of one group together, progressing whichever can move, so that any
// set of matching sends and receives completes regardless of buffer sizes. Sends to one peer are matched, in
// order, with that peer's receives from this rank.
ncclResult_t RunP2P(Comm& comm, const std::vector<const Op*>& ops, std::string* error);

// Number of elements the op writes on this rank (the extent of its result for fault injection).
size_t ResultElements(const Comm& comm, const Op& op);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_OP_H_
