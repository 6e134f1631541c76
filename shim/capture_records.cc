// How records travel from a calling thread to the drain (capture_engine.h, "Records").
//
// Why this shape (measured with bench/shim_call_bench: a mutex, a std::map insert and erase, two std::string
// copies and a condition-variable wake per record cost meta mode ~1.6 us per call; perf showed malloc/free and
// futex wake-ups at ~20% each):
// - Reserve is one lock-free compare-and-swap on the ticket/seq pair (record_buffer.h says why it is 16 bytes).
// - Publish copies the record into the thread's own single-producer ring: no lock, no allocation. The ring
//   belongs to the engine; the thread caches it in plain thread-locals (the engine's id and the pointer), so the
//   hot path reads two words of TLS. A thread-exit hook marks the ring retired; the next new thread reuses it
//   once the drain has emptied it, so buffers are bounded by the number of threads alive at once (kMaxBuffers;
//   beyond, and once a thread's exit hook has run, its records take the locked path).
// - The drain merges the rings by ticket and writes records from the rings in place; only records that wait for
//   an earlier ticket (a call still inside its vendor function) are copied into RecordQueue, the drain's own.
#include <memory>
#include <thread>

#include "shim/capture_engine.h"

namespace ttrace::shim {
namespace {

std::atomic<uint64_t> g_engine_ids{0};

// Plain thread-locals (no constructor, no destructor): reading them costs no guard check.
thread_local uint64_t t_buffer_engine = 0;        // id of the engine t_buffer belongs to; 0: none yet
thread_local RecordBuffer* t_buffer = nullptr;    // nullptr with a matching engine: this thread has no buffer
thread_local bool t_thread_exiting = false;

// Owns the thread's buffer reference; at thread exit marks the buffer retired (reusable once drained).
struct ThreadBufferHook {
  std::shared_ptr<RecordBuffer> buffer;
  void Set(std::shared_ptr<RecordBuffer> b) {
    if (buffer) buffer->retired.store(true, std::memory_order_release);
    buffer = std::move(b);
  }
  ~ThreadBufferHook() {
    t_thread_exiting = true;
    t_buffer_engine = 0;
    t_buffer = nullptr;
    if (buffer) buffer->retired.store(true, std::memory_order_release);
  }
};
thread_local ThreadBufferHook t_hook;

}  // namespace

uint64_t CaptureEngine::NextEngineId() { return ++g_engine_ids; }

CaptureEngine::Slot CaptureEngine::Reserve(bool op) {
  const OrderCounter::Pair p = order_.Next(op);
  const Slot slot{p.ticket, op ? p.seq : kNoSeq};
  if (op) {
    if (RecordBuffer* buffer = ThreadBuffer()) buffer->SetRunning(slot.ticket, slot.seq);
  }
  return slot;
}

void CaptureEngine::Publish(const Slot& slot, format::RecordType type, const void* body, size_t body_bytes,
                            const void* payload, size_t payload_bytes) {
  PublishRecord(slot, type, body, body_bytes, payload, payload_bytes);
  if (slot.seq != kNoSeq) PublishContext(slot.seq);
}

void CaptureEngine::PublishRecord(const Slot& slot, format::RecordType type, const void* body, size_t body_bytes,
                                  const void* payload, size_t payload_bytes) {
  if (has_graph_ops_.load(std::memory_order_acquire) && slot.seq != kNoSeq) {
    std::lock_guard<std::mutex> lock(mu_);
    NoteGraphRecord(slot.seq, type, body, body_bytes, payload, payload_bytes);
  }
  RecordBuffer* buffer = ThreadBuffer();
  if (buffer != nullptr) {
    if (slot.seq != kNoSeq) buffer->ClearRunning();
    if (buffer->Push(slot.ticket, type, body, body_bytes, payload, payload_bytes)) {
      // Every kRecordsPerWake records (a wake lost to a race costs one batch more, or the flush tick).
      if (buffer->size() % kRecordsPerWake == 0) work_cv_.notify_one();
      return;
    }
    if (WaitForRoom(buffer, slot, type, body, body_bytes, payload, payload_bytes)) return;
  }
  // The locked path: no buffer, a record larger than kMaxRecordBytes, or a buffer that stayed full.
  QueuedRecord r{type, std::string(static_cast<const char*>(body), body_bytes),
                 payload_bytes ? std::string(static_cast<const char*>(payload), payload_bytes) : std::string()};
  {
    std::lock_guard<std::mutex> lock(mu_);
    overflow_.emplace_back(slot.ticket, std::move(r));
  }
  work_cv_.notify_one();
}

// The drain is slower than this thread (or not scheduled): wait for it, as a tensor waits for ring space, up to
// ring_wait_ms; never on the drain thread itself, which is the one that makes room, nor once the engine stops.
bool CaptureEngine::WaitForRoom(RecordBuffer* buffer, const Slot& slot, format::RecordType type, const void* body,
                                size_t body_bytes, const void* payload, size_t payload_bytes) {
  if (body_bytes + payload_bytes > RecordBuffer::kMaxRecordBytes || std::this_thread::get_id() == drain_id_)
    return false;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(config_.ring_wait_ms);
  std::unique_lock<std::mutex> lock(mu_);
  ++record_waiters_;
  bool pushed = false;
  while (!stop_ && !(pushed = buffer->Push(slot.ticket, type, body, body_bytes, payload, payload_bytes))) {
    work_cv_.notify_one();
    if (space_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      pushed = buffer->Push(slot.ticket, type, body, body_bytes, payload, payload_bytes);
      break;
    }
  }
  --record_waiters_;
  return pushed;
}

RecordBuffer* CaptureEngine::ThreadBuffer() {
  if (t_buffer_engine == id_) return t_buffer;
  if (t_thread_exiting) return nullptr;
  return AttachThreadBuffer();
}

RecordBuffer* CaptureEngine::AttachThreadBuffer() {
  std::shared_ptr<RecordBuffer> buffer;
  {
    std::lock_guard<std::mutex> lock(buffers_mu_);
    for (const std::shared_ptr<RecordBuffer>& b : owned_buffers_) {
      bool retired = true;
      // Its last owner is gone and the drain has taken everything it pushed: a new owner may push.
      if (b->size() == 0 && b->retired.compare_exchange_strong(retired, false, std::memory_order_acquire)) {
        buffer = b;
        break;
      }
    }
    if (buffer == nullptr && owned_buffers_.size() < kMaxBuffers) {
      buffer = std::make_shared<RecordBuffer>();
      buffers_[owned_buffers_.size()].store(buffer.get(), std::memory_order_release);
      owned_buffers_.push_back(buffer);
      buffer_count_.store(owned_buffers_.size(), std::memory_order_release);
    }
  }
  t_buffer = buffer.get();
  t_buffer_engine = id_;
  t_hook.Set(std::move(buffer));
  return t_buffer;
}

size_t CaptureEngine::WriteReady() {
  std::vector<QueuedRecord>& ready = ready_scratch_;
  records_.TakeReady(&ready);
  const size_t n = ready.size();
  WriteRecords(&ready);
  return n;
}

// Writes, straight from the rings, each buffered record whose ticket is the next one due (a k-way merge: every
// ring is in ticket order but for the rare notice pushed inside an op); records that wait for an earlier ticket
// stay in their ring, unless `all` or their ring holds kRecordsPerWake of them: then they move to records_, so
// that a call running long on one thread neither fills another thread's ring nor makes each of its calls wake us.
// A ring that was pushed out of ticket order since we last took it moves too: the ticket due may be behind its
// front (an op's record behind the notices it pushed), and would otherwise wait for kRecordsPerWake more records.
size_t CaptureEngine::MergeBuffers(bool all) {
  struct WakeWaiters {  // threads waiting for room in their buffer (WaitForRoom)
    CaptureEngine* engine;
    ~WakeWaiters() {
      std::lock_guard<std::mutex> lock(engine->mu_);
      if (engine->record_waiters_ > 0) engine->space_cv_.notify_all();
    }
  } wake{this};
  size_t written = WriteReady();
  const size_t n = buffer_count_.load(std::memory_order_acquire);
  RecordBuffer::SlotHeader h;
  const char *body, *payload;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < n; ++i) {
      RecordBuffer* b = buffers_[i].load(std::memory_order_acquire);
      std::lock_guard<std::mutex> consumer(b->consumer_mu());
      while (b->Front(&h, &body, &payload) && h.ticket == records_.taken()) {
        Append(static_cast<format::RecordType>(h.type), body, h.body_bytes, payload, h.payload_bytes);
        b->Pop();
        records_.MarkTaken();
        written += 1 + WriteReady();
        progress = true;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    RecordBuffer* b = buffers_[i].load(std::memory_order_acquire);
    std::lock_guard<std::mutex> consumer(b->consumer_mu());
    const uint64_t reorders = b->reorders();
    if (!all && b->size() < kRecordsPerWake && reorders == seen_reorders_[i]) continue;
    seen_reorders_[i] = reorders;
    while (b->Front(&h, &body, &payload)) {
      records_.Put(h.ticket, QueuedRecord{static_cast<format::RecordType>(h.type), std::string(body, h.body_bytes),
                                          std::string(payload, h.payload_bytes)});
      b->Pop();
    }
  }
  return written + WriteReady();
}

uint64_t CaptureEngine::RunningSeq(uint64_t ticket) {
  const size_t n = buffer_count_.load(std::memory_order_acquire);
  uint64_t seq;
  for (size_t i = 0; i < n; ++i)
    if (buffers_[i].load(std::memory_order_acquire)->Running(ticket, &seq)) return seq;
  return kNoSeq;
}

}  // namespace ttrace::shim
