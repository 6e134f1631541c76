// Sends and receives stream through the ring of their (sender, receiver) pair. A message is an 8-byte header
// holding its byte count, then the payload padded to a multiple of 8 bytes; ring size, head and tail stay
// multiples of 8, so a header never wraps and the receiver can check that the sizes agree. One progress loop
// moves whatever can move for all of the group's transfers, so a group where every rank sends to and
// receives from its neighbours completes even when messages are far larger than a ring.
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

#include "tools/simgpu/nccl/comm.h"
#include "tools/simgpu/nccl/op.h"
#include "tools/simgpu/nccl/reduce_kernels.h"

namespace simgpu::nccl {
namespace {

constexpr size_t kHeaderBytes = 8;

struct Transfer {
  bool send;
  int peer;
  char* buf;
  size_t bytes;
  size_t padded;
  size_t done = 0;
  bool header_done = false;
};

void CopyIn(char* ring, size_t ring_bytes, uint64_t pos, const char* src, size_t n) {
  size_t at = pos % ring_bytes;
  size_t first = std::min(n, ring_bytes - at);
  if (src != nullptr) {
    std::memcpy(ring + at, src, first);
    std::memcpy(ring, src + first, n - first);
  } else {
    std::memset(ring + at, 0, first);
    std::memset(ring, 0, n - first);
  }
}

void CopyOut(const char* ring, size_t ring_bytes, uint64_t pos, char* dst, size_t n) {
  size_t at = pos % ring_bytes;
  size_t first = std::min(n, ring_bytes - at);
  std::memcpy(dst, ring + at, first);
  std::memcpy(dst + first, ring, n - first);
}

// Moves as much of a send as the ring has room for. Returns true when anything moved.
bool PushSend(Segment* seg, int me, Transfer& t) {
  RingHeader* rh = seg->ring(me, t.peer);
  char* data = seg->ring_data(me, t.peer);
  const size_t size = seg->ring_bytes();
  uint64_t head = rh->head.load(std::memory_order_relaxed);
  size_t space = size - (head - rh->tail.load(std::memory_order_acquire));
  bool moved = false;
  if (!t.header_done) {
    if (space < kHeaderBytes) return false;
    uint64_t len = t.bytes;
    CopyIn(data, size, head, reinterpret_cast<const char*>(&len), kHeaderBytes);
    head += kHeaderBytes;
    space -= kHeaderBytes;
    t.header_done = true;
    moved = true;
  }
  size_t n = std::min(space, t.padded - t.done);
  if (n > 0) {
    size_t payload = t.done < t.bytes ? std::min(n, t.bytes - t.done) : 0;
    CopyIn(data, size, head, t.buf + t.done, payload);
    CopyIn(data, size, head + payload, nullptr, n - payload);
    head += n;
    t.done += n;
    moved = true;
  }
  if (moved) rh->head.store(head, std::memory_order_release);
  return moved;
}

// Moves as much of a receive as has arrived. Returns true when anything moved; false with *error set when the
// sender's message size differs.
bool PullRecv(Segment* seg, int me, Transfer& t, std::string* error) {
  RingHeader* rh = seg->ring(t.peer, me);
  const char* data = seg->ring_data(t.peer, me);
  const size_t size = seg->ring_bytes();
  uint64_t tail = rh->tail.load(std::memory_order_relaxed);
  size_t avail = rh->head.load(std::memory_order_acquire) - tail;
  bool moved = false;
  if (!t.header_done) {
    if (avail < kHeaderBytes) return false;
    uint64_t len;
    CopyOut(data, size, tail, reinterpret_cast<char*>(&len), kHeaderBytes);
    if (len != t.bytes) {
      *error = "ncclRecv on rank " + std::to_string(me) + " expects " + std::to_string(t.bytes) +
               " bytes from rank " + std::to_string(t.peer) + ", whose matching ncclSend sends " +
               std::to_string(len) + " bytes";
      return false;
    }
    tail += kHeaderBytes;
    avail -= kHeaderBytes;
    t.header_done = true;
    moved = true;
  }
  size_t n = std::min(avail, t.padded - t.done);
  if (n > 0) {
    size_t payload = t.done < t.bytes ? std::min(n, t.bytes - t.done) : 0;
    CopyOut(data, size, tail, t.buf + t.done, payload);
    tail += n;
    t.done += n;
    moved = true;
  }
  if (moved) rh->tail.store(tail, std::memory_order_release);
  return moved;
}

}  // namespace

ncclResult_t RunP2P(Comm& c, const std::vector<const Op*>& ops, std::string* error) {
  Segment* seg = c.segment();
  const int me = c.rank();
  std::vector<Transfer> xs;
  for (const Op* op : ops) {
    size_t bytes = op->count * DataTypeSize(op->dtype);
    if (bytes == 0) continue;
    char* buf = op->kind == OpKind::kSend ? const_cast<char*>(static_cast<const char*>(op->send))
                                          : static_cast<char*>(op->recv);
    xs.push_back(Transfer{op->kind == OpKind::kSend, op->root, buf, bytes, (bytes + 7) & ~size_t{7}});
  }
  // Per (direction, peer): the transfers in issue order; only the front one may move.
  std::map<std::pair<bool, int>, std::deque<Transfer*>> queues;
  for (Transfer& t : xs) queues[{t.send, t.peer}].push_back(&t);

  std::string mismatch;
  auto step = [&] {
    bool moved = false;
    bool pending = false;
    for (auto& [key, q] : queues) {
      while (!q.empty()) {
        Transfer& t = *q.front();
        bool m = t.send ? PushSend(seg, me, t) : PullRecv(seg, me, t, &mismatch);
        if (!mismatch.empty()) return Step::kDone;
        moved |= m;
        if (!t.header_done || t.done < t.padded) break;
        q.pop_front();
      }
      pending |= !q.empty();
    }
    if (moved) RingBell(seg);
    if (!pending) return Step::kDone;
    return moved ? Step::kProgress : Step::kIdle;
  };
  auto missing = [&] {
    std::vector<int> peers;
    for (auto& [key, q] : queues) {
      if (!q.empty()) peers.push_back(key.second);
    }
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    return peers;
  };
  ncclResult_t r = Drive(c.wait_context(), "ncclSend/ncclRecv", step, missing, error);
  if (r == ncclSuccess && !mismatch.empty()) {
    *error = mismatch;
    return ncclInvalidUsage;
  }
  return r;
}

}  // namespace simgpu::nccl
