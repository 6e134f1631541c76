// What the NCCL interceptors share (nccl_interceptors.cc: communicators and groups; nccl_collectives.cc: every
// collective and point-to-point call): the one way a collective is recorded and its buffers captured, driven by
// the semantics table (ttrace/collectives.h), and the per-thread group state and pending snapshots that decide
// when a capture may be enqueued. Private to libttrace.so; includes nccl.h.
//
// Capture timing (the reasons are at the top of nccl_capture.cc):
// - outside a group: the send buffer is copied before the call and the receive buffer after it, on its stream;
// - inside a group: both wait for the outermost ncclGroupEnd (inputs just before it, outputs just after it);
// - a call (or group end) that answers ncclInProgress on a non-blocking communicator: its outputs wait until
//   ncclCommGetAsyncError, on the issuing thread, reports that communicator ncclSuccess (ReleasePending).
// Threads: any; group state is per thread, as NCCL's groups are.
#ifndef TTRACE_SHIM_NCCL_CAPTURE_H_
#define TTRACE_SHIM_NCCL_CAPTURE_H_

#include <nccl.h>

#include <cstdint>
#include <string>

#include "shim/comm_registry.h"
#include "ttrace/format.h"

namespace ttrace::shim {

class CaptureEngine;

// One collective or point-to-point call, as the application made it.
struct CollectiveCall {
  format::ApiId api;          // a row of TTRACE_COLLECTIVES
  const void* sendbuff;       // nullptr for ncclRecv
  void* recvbuff;             // nullptr for ncclSend
  size_t count;               // as the API defines it (per rank for all-gather's sendcount, etc.)
  ncclDataType_t datatype;
  int red_op;                 // ncclRedOp_t, -1 for calls that do not reduce
  int root_or_peer;           // -1 when the call has neither
  ncclComm_t comm;
  cudaStream_t stream;
};

using RealCall = ncclResult_t (*)(const void* context);
ncclResult_t TraceCollective(const CollectiveCall& call, RealCall real, const void* context);

// Records `call` (a seq, a CollectiveRecord), captures its buffers as the table and the timing above say, and
// makes the vendor call `real()` exactly once; returns its status unchanged.
template <typename Real>
ncclResult_t TraceCollective(const CollectiveCall& call, const Real& real) {
  return TraceCollective(call, [](const void* r) { return (*static_cast<const Real*>(r))(); }, &real);
}

// ncclGroupStart / ncclGroupEnd around `real()`: group depth, deferred snapshots, the GroupRecord.
ncclResult_t TraceGroupStart(RealCall real, const void* context);
ncclResult_t TraceGroupEnd(RealCall real, const void* context);
template <typename Real>
ncclResult_t TraceGroup(bool start, const Real& real) {
  auto call = [](const void* r) { return (*static_cast<const Real*>(r))(); };
  return start ? TraceGroupStart(call, &real) : TraceGroupEnd(call, &real);
}

// Captures or drops the output snapshots pending on `comm` now that NCCL reported `async` for it (see above).
void ReleasePending(CaptureEngine* engine, uint64_t comm, ncclResult_t async, const std::string& why);

// What NCCL can tell about a communicator the shim did not see created (or not completely): rank, size, device.
CommInfo DescribeComm(ncclComm_t comm);

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_NCCL_CAPTURE_H_
