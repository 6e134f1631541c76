// Collective, point-to-point, reduction-operator and group entry points of libnccl.so.2. Each call is checked
// as NCCL's ncclEnqueueCheck/ArgsCheck does (invalid comm, datatype, op, root or peer: ncclInvalidArgument; a
// non-blocking communicator still in ncclInProgress: ncclInvalidArgument, ncclCommEnsureReady), plus the
// NULL-buffer checks NCCL makes with NCCL_CHECK_POINTERS=1, then queued in a group (an implicit one when the
// application opened none) whose end issues it on the communicator's stream. The work runs later on the stream
// worker; a failure there surfaces through ncclCommGetAsyncError and later calls.
#include <cstdint>
#include <cstring>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/nccl/coll_faults.h"
#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/group.h"
#include "tools/simgpu/nccl/log.h"
#include "tools/simgpu/nccl/nccl_api.h"
#include "tools/simgpu/nccl/op.h"
#include "tools/simgpu/nccl/reduce_kernels.h"

namespace {

using simgpu::nccl::OpKind;
using simgpu::nccl::Warn;

// The stream as the comm's device sees it: NCCL launches on comm->cudaDev, so the legacy default stream is
// that device's.
simgpu::Stream* ResolveOnDevice(int device, cudaStream_t stream) {
  int saved = simgpu::CurrentDevice();
  if (saved != device) simgpu::SetCurrentDevice(device);
  simgpu::Stream* s = simgpu::ResolveStream(stream);
  if (saved != device) simgpu::SetCurrentDevice(saved);
  return s;
}

// ncclCommEnsureReady. A blocking communicator whose init is deferred to the end of the current group is
// accepted: its operations run after the init.
ncclResult_t EnsureReady(ncclComm_t comm, const char* fn) {
  ncclResult_t st = comm->status();
  if (st == ncclInProgress) {
    if (comm->blocking() && simgpu::nccl::InGroup()) return ncclSuccess;
    Warn("%s: Attempt to use communicator before the previous operation returned ncclSuccess", fn);
    return ncclInvalidArgument;
  }
  if (st != ncclSuccess) {
    Warn("%s: the communicator is unusable after an earlier error (%s): %s", fn, pncclGetErrorString(st),
         comm->failure().c_str());
  }
  return st;
}

ncclResult_t ResolveRedOp(simgpu::nccl::Op& op, const char* fn) {
  const int n = op.comm->nranks();
  if (static_cast<int>(op.redop) < 0) {
    Warn("%s: invalid reduction operation %d", fn, static_cast<int>(op.redop));
    return ncclInvalidArgument;
  }
  if (op.redop < ncclNumOps) {
    op.red = simgpu::nccl::BuiltinReduction(op.dtype, op.redop, n);
    return ncclSuccess;
  }
  simgpu::nccl::UserRedOp user;
  if (!op.comm->FindRedOp(op.redop, &user)) {
    Warn("%s: reduction operation %d unknown to this communicator", fn, static_cast<int>(op.redop));
    return ncclInvalidArgument;
  }
  if (user.dtype != op.dtype) {
    Warn("%s: Data type supplied to user-created ncclRedOp_t does not match type given to reduction operation",
         fn);
    return ncclInvalidArgument;
  }
  op.red = simgpu::nccl::Reduction{op.dtype, simgpu::nccl::DevOp::kPreMulSum, user.scalar, n};
  op.scalar_ptr = user.scalar_on_device ? user.scalar_ptr : nullptr;
  return ncclSuccess;
}

ncclResult_t Validate(simgpu::nccl::Op& op, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = simgpu::nccl::OpName(op.kind);
  if (comm == nullptr) {
    Warn("%s: comm argument is NULL", fn);
    return ncclInvalidArgument;
  }
  ncclResult_t st = EnsureReady(comm, fn);
  if (st != ncclSuccess) return st;
  op.comm = comm;
  const size_t es = simgpu::nccl::DataTypeSize(op.dtype);
  if (es == 0) {
    Warn("%s: invalid type %d", fn, static_cast<int>(op.dtype));
    return ncclInvalidArgument;
  }
  const int n = comm->nranks();
  const bool has_root = HasRoot(op.kind) || IsP2P(op.kind);
  if (has_root && (op.root < 0 || op.root >= n)) {
    Warn("%s: invalid %s %d (should be in the 0..%d range)", fn, IsP2P(op.kind) ? "peer" : "root", op.root,
         n - 1);
    return ncclInvalidArgument;
  }
  if (IsReduction(op.kind)) {
    st = ResolveRedOp(op, fn);
    if (st != ncclSuccess) return st;
  }
  const bool multi = op.kind == OpKind::kAllGather || op.kind == OpKind::kReduceScatter ||
                     op.kind == OpKind::kAlltoAll || op.kind == OpKind::kGather || op.kind == OpKind::kScatter;
  if (op.count > SIZE_MAX / es / (multi ? static_cast<size_t>(n) : 1)) {
    Warn("%s: count %zu is too large", fn, op.count);
    return ncclInvalidArgument;
  }
  if (op.count > 0) {
    const bool root_only_send = op.kind == OpKind::kBroadcast || op.kind == OpKind::kScatter;
    const bool root_only_recv = op.kind == OpKind::kReduce || op.kind == OpKind::kGather;
    const bool needs_send = op.kind != OpKind::kRecv && (!root_only_send || comm->rank() == op.root);
    const bool needs_recv = op.kind != OpKind::kSend && (!root_only_recv || comm->rank() == op.root);
    if (needs_send && op.send == nullptr) {
      Warn("%s: sendbuff is NULL", fn);
      return ncclInvalidArgument;
    }
    if (needs_recv && op.recv == nullptr) {
      Warn("%s: recvbuff is NULL", fn);
      return ncclInvalidArgument;
    }
  }
  op.stream = ResolveOnDevice(comm->device(), stream);
  if (op.stream == nullptr) {
    Warn("%s: invalid stream %p", fn, static_cast<void*>(stream));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

ncclResult_t Submit(OpKind kind, const void* send, void* recv, size_t count, ncclDataType_t dtype,
                    ncclRedOp_t redop, int root, ncclComm_t comm, cudaStream_t stream) {
  simgpu::nccl::Op op;
  op.kind = kind;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.dtype = dtype;
  op.redop = redop;
  op.root = root;
  simgpu::nccl::GroupStart();
  ncclResult_t r = Validate(op, comm, stream);
  if (r == ncclSuccess) {
    if (!IsP2P(kind)) simgpu::nccl::NumberCollective(*comm, &op);
    simgpu::nccl::Submit(op);
  } else {
    simgpu::nccl::RecordGroupError(r);
  }
  ncclResult_t end = simgpu::nccl::GroupEnd();
  if (r != ncclSuccess) return r;
  // As ncclEnqueueCheck: a non-blocking communicator reports its state after the (possibly implicit) group end.
  if (!comm->blocking()) return comm->status();
  return end;
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
  return Submit(OpKind::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return Submit(OpKind::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
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

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  if (comm == nullptr) {
    Warn("ncclRedOpCreatePreMulSum: comm argument is NULL");
    return ncclInvalidArgument;
  }
  ncclResult_t st = EnsureReady(comm, "ncclRedOpCreatePreMulSum");
  if (st != ncclSuccess) return st;
  const size_t size = simgpu::nccl::DataTypeSize(datatype);
  if (size == 0 || op == nullptr || scalar == nullptr) {
    Warn("ncclRedOpCreatePreMulSum: invalid argument (op %p, scalar %p, datatype %d)", static_cast<void*>(op),
         scalar, static_cast<int>(datatype));
    return size == 0 ? ncclInternalError : ncclInvalidArgument;
  }
  simgpu::nccl::UserRedOp user{datatype, residence != ncclScalarHostImmediate, 0, nullptr};
  if (user.scalar_on_device) {
    user.scalar_ptr = scalar;
  } else {
    std::memcpy(&user.scalar, scalar, size);
  }
  *op = comm->AddRedOp(user);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  if (0 <= static_cast<int>(op) && static_cast<int>(op) < static_cast<int>(ncclNumOps)) {
    Warn("ncclRedOpDestroy : operator is a NCCL builtin.");
    return ncclInvalidArgument;
  }
  if (static_cast<int>(op) < 0) {
    Warn("ncclRedOpDestroy :  operator is garbage.");
    return ncclInvalidArgument;
  }
  if (comm == nullptr) {
    Warn("ncclRedOpDestroy : invalid communicator passed.");
    return ncclInvalidArgument;
  }
  if (!comm->RemoveRedOp(op)) {
    Warn("ncclRedOpDestroy : operator unknown to this communicator.");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}
