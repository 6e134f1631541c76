// What each NCCL collective and point-to-point call moves: the one semantics table, shared by the shim (which
// buffers to capture, how many elements each) and the analyzer (what each rank's output must be). Hermetic: needs
// only format.h. The reference arithmetic (FP64 reductions, error bounds) lives in the analyzer alone.
//
// One row per entry point (TTRACE_COLLECTIVES, an X-macro):
//
//   X(Api, "check", Send, Recv, Result, Param, Identical)
//
// - Api: the apis.inc entry; "check": the prefix of the analyzer's check names ("allgather" -> "allgather.exact").
// - Send, Recv (Extent): elements this rank's send buffer holds before the call and its receive buffer after it,
//   from the record's `count` (as the API defines it), the communicator size n, this rank and the root. kNone:
//   the buffer is not part of the call on this rank (it is neither read nor captured).
// - Result: how each receiving rank's output element j follows from the members' inputs (SourceOf below).
// - Param: what CollectiveRecord.root_or_peer holds (a root, a peer, or nothing: -1).
// - Identical: every rank's output is bitwise the same (NCCL guarantees it for all-reduce; for copies it follows
//   from exactness).
//
// A new collective is one row here, one apis.inc line, and one TTRACE_INTERCEPTOR of a few lines in the shim.
#ifndef TTRACE_INCLUDE_TTRACE_COLLECTIVES_H_
#define TTRACE_INCLUDE_TTRACE_COLLECTIVES_H_

#include <cstdint>

#include "ttrace/format.h"

namespace ttrace::format {

enum class Extent : uint8_t {
  kNone,              // no buffer on any rank
  kCount,             // count elements, every rank
  kCountTimesRanks,   // count * n elements, every rank
  kCountOnRoot,       // count elements, on the root only
  kCountTimesRanksOnRoot,  // count * n elements, on the root only
};

enum class CollectiveResult : uint8_t {
  kReduce,         // out_r[j] = reduce over ranks k of in_k[j]                   (all-reduce; reduce, on the root)
  kReduceChunk,    // out_r[j] = reduce over ranks k of in_k[r*count + j]         (reduce-scatter)
  kConcat,         // out_r[j] = in_{j / count}[j % count]                       (all-gather; gather, on the root)
  kCopyRoot,       // out_r[j] = in_root[j]                                       (broadcast, bcast)
  kRootChunk,      // out_r[j] = in_root[r*count + j]                             (scatter)
  kTranspose,      // out_r[j] = in_{j / count}[r*count + j % count]              (all-to-all)
  kSend,           // no output: the input is what the peer's matching receive must hold
  kRecv,           // out_r[j] = the matching send's in[j]                        (paired by the analyzer)
};

enum class CollectiveParam : uint8_t { kNone, kRoot, kPeer };

#define TTRACE_COLLECTIVES(X)                                                                                \
  X(kNcclAllReduce, "allreduce", kCount, kCount, kReduce, kNone, true)                                       \
  X(kNcclAllGather, "allgather", kCount, kCountTimesRanks, kConcat, kNone, true)                             \
  X(kNcclReduceScatter, "reducescatter", kCountTimesRanks, kCount, kReduceChunk, kNone, false)               \
  X(kNcclBroadcast, "broadcast", kCountOnRoot, kCount, kCopyRoot, kRoot, true)                               \
  X(kNcclBcast, "broadcast", kCountOnRoot, kCount, kCopyRoot, kRoot, true)                                   \
  X(kNcclReduce, "reduce", kCount, kCountOnRoot, kReduce, kRoot, false)                                      \
  X(kNcclAlltoAll, "alltoall", kCountTimesRanks, kCountTimesRanks, kTranspose, kNone, false)                 \
  X(kNcclGather, "gather", kCount, kCountTimesRanksOnRoot, kConcat, kRoot, false)                            \
  X(kNcclScatter, "scatter", kCountTimesRanksOnRoot, kCount, kRootChunk, kRoot, false)                       \
  X(kNcclSend, "sendrecv", kCount, kNone, kSend, kPeer, false)                                               \
  X(kNcclRecv, "sendrecv", kNone, kCount, kRecv, kPeer, false)

struct CollectiveInfo {
  ApiId api;
  const char* check;
  Extent send, recv;
  CollectiveResult result;
  CollectiveParam param;
  bool identical;

  bool reduces() const {
    return result == CollectiveResult::kReduce || result == CollectiveResult::kReduceChunk;
  }
  bool point_to_point() const { return param == CollectiveParam::kPeer; }
};

inline constexpr CollectiveInfo kCollectives[] = {
#define TTRACE_COLLECTIVE_ROW(api, check, send, recv, result, param, identical)                           \
  {ApiId::api, check, Extent::send, Extent::recv, CollectiveResult::result, CollectiveParam::param, identical},
    TTRACE_COLLECTIVES(TTRACE_COLLECTIVE_ROW)
#undef TTRACE_COLLECTIVE_ROW
};

// The row of an api id; nullptr when it is not a collective or point-to-point call.
inline const CollectiveInfo* FindCollective(uint16_t api) {
  for (const CollectiveInfo& c : kCollectives)
    if (static_cast<uint16_t>(c.api) == api) return &c;
  return nullptr;
}

// Elements of a buffer of extent `e`; false when it cannot be known (n or rank unknown where it matters) or does
// not fit 64 bits. 0 elements: the rank has no such buffer in this call.
inline bool ExtentElements(Extent e, uint64_t count, int32_t nranks, int32_t rank, int32_t root, uint64_t* out) {
  const bool on_root = e == Extent::kCountOnRoot || e == Extent::kCountTimesRanksOnRoot;
  const bool times_n = e == Extent::kCountTimesRanks || e == Extent::kCountTimesRanksOnRoot;
  *out = 0;
  if (e == Extent::kNone) return true;
  if (on_root && rank < 0) return false;
  if (on_root && rank != root) return true;
  if (!times_n) {
    *out = count;
    return true;
  }
  if (nranks < 1) return false;
  const unsigned __int128 n = static_cast<unsigned __int128>(count) * static_cast<uint64_t>(nranks);
  if (n > UINT64_MAX) return false;
  *out = static_cast<uint64_t>(n);
  return true;
}

// Where output element j of rank `rank` comes from, for the copying results (kConcat, kCopyRoot, kRootChunk,
// kTranspose): element `index` of rank `source`'s input. count > 0.
struct ElementSource {
  int32_t source;
  uint64_t index;
};
inline ElementSource SourceOf(CollectiveResult r, uint64_t count, int32_t rank, int32_t root, uint64_t j) {
  switch (r) {
    case CollectiveResult::kConcat: return {static_cast<int32_t>(j / count), j % count};
    case CollectiveResult::kCopyRoot: return {root, j};
    case CollectiveResult::kRootChunk: return {root, static_cast<uint64_t>(rank) * count + j};
    case CollectiveResult::kTranspose:
      return {static_cast<int32_t>(j / count), static_cast<uint64_t>(rank) * count + j % count};
    default: return {rank, j};
  }
}

// Element of each input a reducing result combines into output element j of `rank` (kReduce, kReduceChunk).
inline uint64_t ReducedIndex(CollectiveResult r, uint64_t count, int32_t rank, uint64_t j) {
  return r == CollectiveResult::kReduceChunk ? static_cast<uint64_t>(rank) * count + j : j;
}

}  // namespace ttrace::format

#endif  // TTRACE_INCLUDE_TTRACE_COLLECTIVES_H_
