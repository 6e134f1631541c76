// Collective, point-to-point and group entry points of libnccl.so.2. Each call is checked as NCCL's
// ncclEnqueueCheck/ArgsCheck does (invalid comm, datatype, op, root or peer: ncclInvalidArgument), plus the
// NULL-buffer checks NCCL makes with NCCL_CHECK_POINTERS=1, then queued on the communicator's stream. The work
// runs later on the stream worker; a failure there surfaces through ncclCommGetAsyncError and later calls.
#include <cstdint>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/group.h"
#include "tools/simgpu/nccl/log.h"
#include "tools/simgpu/nccl/nccl_api.h"
#include "tools/simgpu/nccl/op.h"
#include "tools/simgpu/nccl/reduce_kernels.h"

namespace {

using simgpu::nccl::OpKind;
using simgpu::nccl::Warn;

bool Reduces(OpKind k) { return k == OpKind::kAllReduce || k == OpKind::kReduceScatter || k == OpKind::kReduce; }

// The stream as the comm's device sees it: NCCL launches on comm->cudaDev, so the legacy default stream is
// that device's.
simgpu::Stream* ResolveOnDevice(int device, cudaStream_t stream) {
  int saved = simgpu::CurrentDevice();
  if (saved != device) simgpu::SetCurrentDevice(device);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (saved != device) simgpu::SetCurrentDevice(saved);
  return s;
}

ncclResult_t Validate(simgpu::nccl::Op& op, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = simgpu::nccl::OpName(op.kind);
  if (comm == nullptr) {
    Warn("%s: comm argument is NULL", fn);
    return ncclInvalidArgument;
  }
  ncclResult_t st = comm->status();
  if (st != ncclSuccess && !(st == ncclInProgress && simgpu::nccl::InGroup())) {
    Warn("%s: the communicator is unusable after an earlier error (%s): %s", fn, pncclGetErrorString(st),
         comm->failure().c_str());
    return st;
  }
  const size_t es = simgpu::nccl::DataTypeSize(op.dtype);
  if (es == 0) {
    Warn("%s: invalid type %d", fn, static_cast<int>(op.dtype));
    return ncclInvalidArgument;
  }
  const int n = comm->nranks();
  const bool has_root = op.kind == OpKind::kBroadcast || op.kind == OpKind::kReduce || IsP2P(op.kind);
  if (has_root && (op.root < 0 || op.root >= n)) {
    Warn("%s: invalid %s %d (should be in the 0..%d range)", fn, IsP2P(op.kind) ? "peer" : "root", op.root,
         n - 1);
    return ncclInvalidArgument;
  }
  if (Reduces(op.kind)) {
    if (op.redop < ncclSum || op.redop >= ncclNumOps) {
      Warn("%s: invalid reduction operation %d", fn, static_cast<int>(op.redop));
      return ncclInvalidArgument;
    }
    if (!simgpu::nccl::ReductionSupported(op.dtype, op.redop)) {
      Warn("%s: %s reductions are not supported by simgpu (NCCL reduces FP8 only on sm_90 and newer)", fn,
           simgpu::nccl::DataTypeName(op.dtype));
      return ncclInvalidArgument;
    }
  }
  const bool multi = op.kind == OpKind::kAllGather || op.kind == OpKind::kReduceScatter;
  if (op.count > SIZE_MAX / es / (multi ? static_cast<size_t>(n) : 1)) {
    Warn("%s: count %zu is too large", fn, op.count);
    return ncclInvalidArgument;
  }
  if (op.count > 0) {
    const bool needs_send = op.kind != OpKind::kRecv && (op.kind != OpKind::kBroadcast || comm->rank() == op.root);
    const bool needs_recv = op.kind != OpKind::kSend && (op.kind != OpKind::kReduce || comm->rank() == op.root);
    if (needs_send && op.send == nullptr) {
      Warn("%s: sendbuff is NULL", fn);
      return ncclInvalidArgument;
    }
    if (needs_recv && op.recv == nullptr) {
      Warn("%s: recvbuff is NULL", fn);
      return ncclInvalidArgument;
    }
  }
  op.comm = comm;
  op.stream = ResolveOnDevice(comm->device(), stream);
  if (op.stream == nullptr) {
    Warn("%s: invalid stream %p", fn, static_cast<void*>(stream));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

ncclResult_t Submit(OpKind kind, const void* send, void* recv, size_t count, ncclDataType_t dtype,
                    ncclRedOp_t redop, int root, ncclComm_t comm, cudaStream_t stream) {
  simgpu::nccl::Op op{kind, nullptr, nullptr, send, recv, count, dtype, redop, root, -1};
  ncclResult_t r = Validate(op, comm, stream);
  if (r != ncclSuccess) {
    simgpu::nccl::RecordGroupError(r);
    return r;
  }
  if (!IsP2P(kind)) op.fault_call = simgpu::nccl::NextCollectiveCall();
  simgpu::nccl::Submit(op);
  return ncclSuccess;
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return Submit(OpKind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclGroupStart) { return simgpu::nccl::GroupStart(); }

NCCL_API(ncclResult_t, ncclGroupEnd) { return simgpu::nccl::GroupEnd(); }
