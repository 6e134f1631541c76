// Why a 16-byte compare-and-swap: a ticket and a seq taken by two separate atomic increments could interleave
// across threads (thread A the lower ticket, thread B the lower seq), putting ops out of seq order in the stream;
// a mutex around both would be a lock every calling thread contends for. cmpxchg16b (x86-64, -mcx16) is inlined.
#include "shim/record_buffer.h"

#include <cstring>

namespace ttrace::shim {

OrderCounter::Pair OrderCounter::Load() const {
  // A compare-and-swap that never changes the value (0 -> 0) reads all 16 bytes at once.
  const unsigned __int128 v = __sync_val_compare_and_swap(&value_, 0, 0);
  return {static_cast<uint64_t>(v), static_cast<uint64_t>(v >> 64)};
}

OrderCounter::Pair OrderCounter::Next(bool op) {
  const unsigned __int128 step = 1 + (op ? static_cast<unsigned __int128>(1) << 64 : 0);
  // Two 8-byte loads guess the value; a torn guess only makes the first exchange fail and return the truth.
  const uint64_t* halves = reinterpret_cast<const uint64_t*>(&value_);
  unsigned __int128 old = __atomic_load_n(&halves[0], __ATOMIC_RELAXED) |
                          static_cast<unsigned __int128>(__atomic_load_n(&halves[1], __ATOMIC_RELAXED)) << 64;
  while (true) {
    const unsigned __int128 seen = __sync_val_compare_and_swap(&value_, old, old + step);
    if (seen == old) break;
    old = seen;
  }
  return {static_cast<uint64_t>(old), static_cast<uint64_t>(old >> 64)};
}

bool RecordBuffer::Push(uint64_t ticket, format::RecordType type, const void* body, size_t body_bytes,
                        const void* payload, size_t payload_bytes) {
  if (body_bytes + payload_bytes > kMaxRecordBytes) return false;
  SlotHeader h;
  memset(&h, 0, sizeof h);
  h.ticket = ticket;
  h.type = static_cast<uint16_t>(type);
  h.body_bytes = static_cast<uint32_t>(body_bytes);
  h.payload_bytes = static_cast<uint32_t>(payload_bytes);
  const size_t bytes = EntryBytes(h);
  const uint64_t head = head_.load(std::memory_order_relaxed);
  const size_t offset = head % kCapacity;
  const size_t skip = kCapacity - offset < bytes ? kCapacity - offset : 0;  // a record never wraps
  if (head + skip + bytes - cached_tail_ > kCapacity) {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (head + skip + bytes - cached_tail_ > kCapacity) return false;
  }
  if (skip >= sizeof h) {
    SlotHeader wrap;
    memset(&wrap, 0, sizeof wrap);
    wrap.type = kWrap;
    memcpy(ring_ + offset, &wrap, sizeof wrap);
  }
  char* entry = ring_ + (head + skip) % kCapacity;
  memcpy(entry, &h, sizeof h);
  memcpy(entry + sizeof h, body, body_bytes);
  if (payload_bytes > 0) memcpy(entry + sizeof h + body_bytes, payload, payload_bytes);
  head_.store(head + skip + bytes, std::memory_order_release);
  pushed_.store(pushed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (ticket < max_ticket_)
    reorders_.store(reorders_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  else
    max_ticket_ = ticket;
  return true;
}

bool RecordBuffer::Front(SlotHeader* header, const char** body, const char** payload) {
  const uint64_t head = head_.load(std::memory_order_acquire);
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  while (tail != head) {
    const size_t offset = tail % kCapacity;
    if (kCapacity - offset >= sizeof *header) {
      memcpy(header, ring_ + offset, sizeof *header);
      if (header->type != kWrap) {
        front_bytes_ = EntryBytes(*header);
        *body = ring_ + offset + sizeof *header;
        *payload = *body + header->body_bytes;
        if (tail != tail_.load(std::memory_order_relaxed)) tail_.store(tail, std::memory_order_release);
        return true;
      }
    }
    tail += kCapacity - offset;  // the unused end of the ring
  }
  tail_.store(tail, std::memory_order_release);
  return false;
}

void RecordBuffer::Pop() {
  tail_.store(tail_.load(std::memory_order_relaxed) + front_bytes_, std::memory_order_release);
  popped_.store(popped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

bool RecordBuffer::Running(uint64_t ticket, uint64_t* seq) const {
  if (running_ticket_.load(std::memory_order_acquire) != ticket) return false;
  *seq = running_seq_.load(std::memory_order_acquire);
  // The owner may have moved on to another op meanwhile (ClearRunning, then SetRunning): then the seq read may be
  // that op's, and the ticket is no longer ours.
  return running_ticket_.load(std::memory_order_acquire) == ticket;
}

}  // namespace ttrace::shim
