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

namespace simgpu::nccl {

class Comm;

enum class OpKind : uint32_t { kAllReduce = 1, kAllGather, kReduceScatter, kBroadcast, kReduce, kSend, kRecv };

const char* OpName(OpKind kind);  // "ncclAllReduce", ...
inline bool IsP2P(OpKind k) { return k == OpKind::kSend || k == OpKind::kRecv; }

struct Op {
  OpKind kind;
  Comm* comm;
  simgpu::Stream* stream;
  const void* send;  // kRecv: unused
  void* recv;        // kSend: unused
  size_t count;      // elements: AllReduce/Broadcast/Reduce/Send/Recv count, AllGather sendcount,
                     // ReduceScatter recvcount
  ncclDataType_t dtype;
  ncclRedOp_t redop;   // reductions only
  int root;            // Broadcast/Reduce root, Send/Recv peer
  int64_t fault_call;  // index of this collective among the process's collectives; -1 for Send/Recv
};

// Runs one collective for this rank.
ncclResult_t RunCollective(Comm& comm, const Op& op, std::string* error);

// Runs this rank's sends and receives of one group together, progressing whichever can move, so that any
// set of matching sends and receives completes regardless of buffer sizes. Sends to one peer are matched, in
// order, with that peer's receives from this rank.
ncclResult_t RunP2P(Comm& comm, const std::vector<const Op*>& ops, std::string* error);

// Number of elements the op writes on this rank (the extent of its result for fault injection).
size_t ResultElements(const Comm& comm, const Op& op);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_OP_H_
