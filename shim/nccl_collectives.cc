// Every NCCL collective and point-to-point call: each is one TraceCollective (nccl_capture.h) over the row of the
// semantics table (ttrace/collectives.h) that says which buffers the call reads and writes on this rank. This
// file includes nccl.h so that an interceptor whose signature drifts from the vendor's declaration does not
// compile; the real functions are the strong pnccl* aliases (interception.cc).
#include <nccl.h>

#include "shim/interception.h"
#include "shim/nccl_capture.h"

#define TTRACE_LIBRARY kNccl
#define TTRACE_UNRESOLVED_STATUS ncclInternalError

using ttrace::format::ApiId;
using ttrace::shim::TraceCollective;

namespace {
constexpr int kNoOp = -1, kNone = -1;
}  // namespace

TTRACE_INTERCEPTOR(ncclResult_t, ncclAllReduce,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, op, comm, stream)) {
  return TraceCollective({ApiId::kNcclAllReduce, sendbuff, recvbuff, count, datatype, op, kNone, comm, stream},
                         [&] { return REAL(ncclAllReduce)(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclAllGather,
                   (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                    cudaStream_t stream),
                   (sendbuff, recvbuff, sendcount, datatype, comm, stream)) {
  return TraceCollective({ApiId::kNcclAllGather, sendbuff, recvbuff, sendcount, datatype, kNoOp, kNone, comm, stream},
                         [&] { return REAL(ncclAllGather)(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclReduceScatter,
                   (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, recvcount, datatype, op, comm, stream)) {
  return TraceCollective(
      {ApiId::kNcclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, kNone, comm, stream},
      [&] { return REAL(ncclReduceScatter)(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclBroadcast,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, root, comm, stream)) {
  return TraceCollective({ApiId::kNcclBroadcast, sendbuff, recvbuff, count, datatype, kNoOp, root, comm, stream},
                         [&] { return REAL(ncclBroadcast)(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

// In place: the root's buffer before the call is its input, every rank's buffer after it the output.
TTRACE_INTERCEPTOR(ncclResult_t, ncclBcast,
                   (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream),
                   (buff, count, datatype, root, comm, stream)) {
  return TraceCollective({ApiId::kNcclBcast, buff, buff, count, datatype, kNoOp, root, comm, stream},
                         [&] { return REAL(ncclBcast)(buff, count, datatype, root, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclReduce,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                    int root, ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, op, root, comm, stream)) {
  return TraceCollective({ApiId::kNcclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream},
                         [&] { return REAL(ncclReduce)(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclAlltoAll,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                    cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, comm, stream)) {
  return TraceCollective({ApiId::kNcclAlltoAll, sendbuff, recvbuff, count, datatype, kNoOp, kNone, comm, stream},
                         [&] { return REAL(ncclAlltoAll)(sendbuff, recvbuff, count, datatype, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclGather,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, root, comm, stream)) {
  return TraceCollective({ApiId::kNcclGather, sendbuff, recvbuff, count, datatype, kNoOp, root, comm, stream},
                         [&] { return REAL(ncclGather)(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclScatter,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, root, comm, stream)) {
  return TraceCollective({ApiId::kNcclScatter, sendbuff, recvbuff, count, datatype, kNoOp, root, comm, stream},
                         [&] { return REAL(ncclScatter)(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclSend,
                   (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                    cudaStream_t stream),
                   (sendbuff, count, datatype, peer, comm, stream)) {
  return TraceCollective({ApiId::kNcclSend, sendbuff, nullptr, count, datatype, kNoOp, peer, comm, stream},
                         [&] { return REAL(ncclSend)(sendbuff, count, datatype, peer, comm, stream); });
}

TTRACE_INTERCEPTOR(ncclResult_t, ncclRecv,
                   (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                    cudaStream_t stream),
                   (recvbuff, count, datatype, peer, comm, stream)) {
  return TraceCollective({ApiId::kNcclRecv, nullptr, recvbuff, count, datatype, kNoOp, peer, comm, stream},
                         [&] { return REAL(ncclRecv)(recvbuff, count, datatype, peer, comm, stream); });
}
