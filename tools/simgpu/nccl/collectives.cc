// Every collective is a loop over chunks with one barrier per chunk: each rank writes its part of the chunk to
// its staging buffer of the barrier epoch's parity, all ranks pass the barrier, and each rank computes its
// output from all staging buffers. Staging buffers alternate between two parities, so a rank refills a buffer
// only after the next barrier, which no rank passes before it has finished reading that buffer.
//
// Reductions combine the staged contributions in the order order.h defines for each element (NCCL's ring by
// default), which depends only on the element's index, so every rank computes bitwise-identical results,
// independent of timing and of the staging chunk size.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/op.h"
#include "tools/simgpu/nccl/order.h"
#include "tools/simgpu/nccl/params.h"
#include "tools/simgpu/nccl/reduce_kernels.h"

namespace simgpu::nccl {
namespace {

// User-defined operators are stamped as one value: their handles differ between ranks.
constexpr uint32_t kUserOpStamp = ncclNumOps;

OpStamp MakeStamp(const Op& op) {
  OpStamp s{};
  s.kind = static_cast<uint32_t>(op.kind);
  if (IsReduction(op.kind)) {
    s.dtype = static_cast<uint32_t>(op.dtype);
    s.redop = op.redop < ncclNumOps ? static_cast<uint32_t>(op.redop) : kUserOpStamp;
    s.count = op.count;
  } else {
    s.count = op.count * DataTypeSize(op.dtype);  // data movement: only the byte count must agree
  }
  s.root = HasRoot(op.kind) ? op.root : -1;
  return s;
}

std::string Describe(const OpStamp& s) {
  char buf[160];
  OpKind kind = static_cast<OpKind>(s.kind);
  if (IsReduction(kind)) {
    std::snprintf(buf, sizeof buf, "%s(count=%llu, %s, %s", OpName(kind), static_cast<unsigned long long>(s.count),
                  DataTypeName(static_cast<ncclDataType_t>(s.dtype)),
                  RedOpName(static_cast<ncclRedOp_t>(s.redop)));
  } else {
    std::snprintf(buf, sizeof buf, "%s(bytes=%llu", OpName(kind), static_cast<unsigned long long>(s.count));
  }
  std::string out = buf;
  if (s.root >= 0) out += ", root=" + std::to_string(s.root);
  return out + ")";
}

bool SameStamp(const OpStamp& a, const OpStamp& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.redop == b.redop && a.root == b.root && a.count == b.count;
}

// Runs nchunks steps of stage (write own staging buffer) / barrier / consume (read all staging buffers).
template <class Stage, class Consume>
ncclResult_t ChunkLoop(Comm& c, const Op& op, size_t nchunks, Stage stage, Consume consume, std::string* error) {
  Segment* seg = c.segment();
  const OpStamp mine = MakeStamp(op);
  for (size_t i = 0; i < nchunks; ++i) {
    const int parity = static_cast<int>(c.next_epoch() & 1);
    stage(parity, i);
    if (i == 0) seg->slot(c.rank())->stamp[parity] = mine;
    ncclResult_t r = c.Barrier(OpName(op.kind), error);
    if (r != ncclSuccess) return r;
    if (i == 0) {
      for (int peer = 0; peer < c.nranks(); ++peer) {
        const OpStamp& theirs = seg->slot(peer)->stamp[parity];
        if (!SameStamp(mine, theirs)) {
          *error = "mismatched collectives: rank " + std::to_string(c.rank()) + " called " + Describe(mine) +
                   " while rank " + std::to_string(peer) + " called " + Describe(theirs);
          return ncclInvalidUsage;
        }
      }
    }
    consume(parity, i);
  }
  return ncclSuccess;
}

size_t Chunks(size_t total, size_t per) { return (total + per - 1) / per; }

// out[0..m) = the chain src(first), src(first+1), ..., src(first+n-1) (ranks mod n) without rank `drop`.
template <class Src>
void ReduceChain(const Reduction& red, char* out, Src src, size_t m, int first, int n, int drop) {
  bool started = false;
  for (int k = 0; k < n; ++k) {
    const int r = (first + k) % n;
    if (r == drop) continue;
    if (started) {
      ReduceNext(red, out, src(r), m);
    } else {
      ReduceFirst(red, out, src(r), m);
      started = true;
    }
  }
  ReduceFinish(red, out, m);
}

// A PreMulSum's scalar is the contributing rank's own (each rank may pass its own): every rank stages its input
// already multiplied (`stage`, rounded to the type as NCCL's preOp), and the chain then only adds (`combine`).
struct SplitReduction {
  Reduction stage;
  Reduction combine;
  bool premul;
};

SplitReduction Resolve(const Op& op) {
  Reduction red = op.red;
  if (op.scalar_ptr != nullptr) {
    red.scalar = 0;
    std::memcpy(&red.scalar, op.scalar_ptr, DataTypeSize(op.dtype));
  }
  SplitReduction s{red, red, red.op == DevOp::kPreMulSum};
  if (s.premul) s.combine.op = DevOp::kSum;
  return s;
}

void Stage(const SplitReduction& r, char* dst, const char* src, size_t m, size_t es) {
  if (r.premul) {
    ReduceFirst(r.stage, dst, src, m);
  } else {
    std::memcpy(dst, src, m * es);
  }
}

}  // namespace

const char* OpName(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce: return "ncclAllReduce";
    case OpKind::kAllGather: return "ncclAllGather";
    case OpKind::kReduceScatter: return "ncclReduceScatter";
    case OpKind::kBroadcast: return "ncclBroadcast";
    case OpKind::kReduce: return "ncclReduce";
    case OpKind::kSend: return "ncclSend";
    case OpKind::kRecv: return "ncclRecv";
    case OpKind::kAlltoAll: return "ncclAlltoAll";
    case OpKind::kGather: return "ncclGather";
    case OpKind::kScatter: return "ncclScatter";
  }
  return "ncclUnknown";
}

size_t ResultElements(const Comm& comm, const Op& op) {
  switch (op.kind) {
    case OpKind::kAllReduce:
    case OpKind::kReduceScatter:
    case OpKind::kBroadcast:
    case OpKind::kScatter:
      return op.count;
    case OpKind::kAllGather:
    case OpKind::kAlltoAll:
      return op.count * comm.nranks();
    case OpKind::kReduce:
      return comm.rank() == op.root ? op.count : 0;
    case OpKind::kGather:
      return comm.rank() == op.root ? op.count * comm.nranks() : 0;
    default:
      return 0;
  }
}

ncclResult_t RunCollective(Comm& c, const Op& op, int drop, std::string* error) {
  if (op.count == 0) return ncclSuccess;
  Segment* seg = c.segment();
  const int me = c.rank();
  const int n = c.nranks();
  const size_t es = DataTypeSize(op.dtype);
  const size_t chunk = seg->chunk_bytes();
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  const ReductionOrder order = Order();

  switch (op.kind) {
    case OpKind::kAllReduce:
    case OpKind::kReduce: {
      const SplitReduction red = Resolve(op);
      const size_t per = chunk / es;
      const bool writes = op.kind == OpKind::kAllReduce || me == op.root;
      const RingShape shape{op.count, n, es, RingChunkBytes()};
      return ChunkLoop(
          c, op, Chunks(op.count, per),
          [&](int p, size_t i) {
            size_t m = std::min(per, op.count - i * per);
            Stage(red, seg->staging(me, p), send + i * per * es, m, es);
          },
          [&](int p, size_t i) {
            if (!writes) return;
            const size_t lo = i * per, hi = std::min(op.count, lo + per);
            auto reduce = [&](size_t b, size_t e, int first) {
              auto src = [&](int r) { return seg->staging(r, p) + (b - lo) * es; };
              ReduceChain(red.combine, recv + b * es, src, e - b, first, n, drop);
            };
            if (op.kind == OpKind::kReduce) {
              reduce(lo, hi, ReduceFirstRank(order, op.root, n));
            } else {
              ForEachAllReduceRange(order, shape, lo, hi, reduce);
            }
          },
          error);
    }
    case OpKind::kReduceScatter: {
      const SplitReduction red = Resolve(op);
      const size_t per = chunk / (static_cast<size_t>(n) * es);
      const size_t rc = op.count;
      const int first = ReduceScatterFirst(order, me, n);
      return ChunkLoop(
          c, op, Chunks(rc, per),
          [&](int p, size_t i) {
            size_t m = std::min(per, rc - i * per);
            for (int b = 0; b < n; ++b) {
              Stage(red, seg->staging(me, p) + b * per * es, send + (b * rc + i * per) * es, m, es);
            }
          },
          [&](int p, size_t i) {
            size_t m = std::min(per, rc - i * per);
            size_t mine = static_cast<size_t>(me) * per * es;
            ReduceChain(
                red.combine, recv + i * per * es, [&](int r) { return seg->staging(r, p) + mine; }, m, first, n, drop);
          },
          error);
    }
    case OpKind::kAlltoAll:
    case OpKind::kScatter: {
      // Rank r's block b goes to rank b: staged as n blocks of `per` elements per step.
      const size_t per = chunk / (static_cast<size_t>(n) * es);
      const size_t rc = op.count;
      const bool all = op.kind == OpKind::kAlltoAll;
      return ChunkLoop(
          c, op, Chunks(rc, per),
          [&](int p, size_t i) {
            if (!all && me != op.root) return;
            size_t m = std::min(per, rc - i * per);
            for (int b = 0; b < n; ++b) {
              std::memcpy(seg->staging(me, p) + b * per * es, send + (b * rc + i * per) * es, m * es);
            }
          },
          [&](int p, size_t i) {
            size_t m = std::min(per, rc - i * per);
            size_t mine = static_cast<size_t>(me) * per * es;
            if (!all) {
              std::memmove(recv + i * per * es, seg->staging(op.root, p) + mine, m * es);
              return;
            }
            for (int r = 0; r < n; ++r) {
              std::memcpy(recv + (r * rc + i * per) * es, seg->staging(r, p) + mine, m * es);
            }
          },
          error);
    }
    case OpKind::kAllGather:
    case OpKind::kGather: {
      const size_t bytes = op.count * es;
      const bool writes = op.kind == OpKind::kAllGather || me == op.root;
      return ChunkLoop(
          c, op, Chunks(bytes, chunk),
          [&](int p, size_t i) {
            std::memcpy(seg->staging(me, p), send + i * chunk, std::min(chunk, bytes - i * chunk));
          },
          [&](int p, size_t i) {
            if (!writes) return;
            size_t m = std::min(chunk, bytes - i * chunk);
            for (int r = 0; r < n; ++r) std::memcpy(recv + r * bytes + i * chunk, seg->staging(r, p), m);
          },
          error);
    }
    case OpKind::kBroadcast: {
      const size_t bytes = op.count * es;
      return ChunkLoop(
          c, op, Chunks(bytes, chunk),
          [&](int p, size_t i) {
            if (me == op.root) {
              std::memcpy(seg->staging(me, p), send + i * chunk, std::min(chunk, bytes - i * chunk));
            }
          },
          [&](int p, size_t i) {
            std::memcpy(recv + i * chunk, seg->staging(op.root, p), std::min(chunk, bytes - i * chunk));
          },
          error);
    }
    default:
      *error = "internal error: not a collective";
      return ncclInternalError;
  }
}

}  // namespace simgpu::nccl
