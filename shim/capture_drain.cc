// The drain thread of CaptureEngine: the only writer of the sink. Woken by a batch of records, a finished copy, a
// flush request or its flush tick, it writes the records that are in order, finishes tensors in ring order (a wait
// on our own event each, WaitCopy), and flushes the sink at every tick (flush_ms), so that a killed process leaves
// a stream readable up to about its last flush_ms.
#include <algorithm>
#include <cstring>
#include <thread>

#include "shim/capture_engine.h"
#include "shim/log.h"
#include "store/float_codec.h"
#include "ttrace/byte_shuffle.h"

namespace ttrace::shim {
namespace {

// The element types whose payloads are float-coded: the codec's sign rotation makes their top byte the exponent
// (FP8: the whole value, which zstd's Huffman stage would code as well, but through the writer's zstd 3 at a third
// to two thirds of the codec's speed; coded, the writer stores it as is: docs/codec.md). Integers stay
// byte-shuffled (zstd finds their runs and repeats, which a per-byte code does not).
bool IsFloat(format::DType d) {
  switch (d) {
    case format::DType::kF32: case format::DType::kF16: case format::DType::kBF16: case format::DType::kF64:
    case format::DType::kE4M3: case format::DType::kE5M2:
      return true;
    default:
      return false;
  }
}

}  // namespace

void CaptureEngine::DrainLoop() {
  const RelaxedCaptureMode relaxed(driver_);
  const auto interval = std::chrono::milliseconds(config_.flush_ms);
  Clock::time_point next_flush = Clock::now() + interval;
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<std::pair<uint64_t, QueuedRecord>> overflow;
  while (true) {
    overflow.swap(overflow_);
    lock.unlock();
    const size_t written = WriteRecordsDue(&overflow);
    lock.lock();
    const bool tensor_ready = !tensors_.empty() && tensors_.front().state != CopyState::kCopying;
    const bool requested = FlushTargetReachedLocked();
    const bool tick = Clock::now() >= next_flush;
    if (stop_ && ExitDeadlinePassed()) break;  // what is left is the final drain's, which drops the payloads
    if (written == 0 && overflow_.empty() && !tensor_ready && !requested && !tick) {
      if (stop_) break;
      work_cv_.wait_until(lock, next_flush);
      continue;
    }
    TensorItem item;
    if (tensor_ready) item = tensors_.front();
    const uint64_t generation = flush_requested_;
    lock.unlock();
    if (tensor_ready) {
      WriteTensor(item);
      if (item.event != nullptr && item.ctx == nullptr && item.last_of_group) driver_->EventDestroy(item.event);
    }
    if ((requested || tick) && !sink_failed_ && !sink_->Flush()) SinkFailed();
    lock.lock();
    if (tensor_ready) {
      tensors_.pop_front();
      if (item.owned)
        graph_bytes_used_ -= item.plan.staging_bytes;
      else if (item.last_of_group)  // the group's one ring allocation
        ring_.ReleaseOldest();
      ++tensors_done_;
      if (item.event != nullptr && item.ctx != nullptr && item.last_of_group)
        event_pool_.emplace_back(item.ctx, item.event);
      space_cv_.notify_all();
    }
    if (requested || tick) next_flush = Clock::now() + interval;
    if (requested) {
      flush_done_ = generation;
      flushed_cv_.notify_all();
    }
  }
  FinalDrain(lock);
}

// Without mu_: the locked path's records into records_, then everything due; when too many records wait behind a
// call that has not returned (a hung vendor call), gives up that call's record.
size_t CaptureEngine::WriteRecordsDue(std::vector<std::pair<uint64_t, QueuedRecord>>* overflow) {
  for (auto& [ticket, record] : *overflow) records_.Put(ticket, std::move(record));
  overflow->clear();
  size_t written = MergeBuffers(/*all=*/false);
  if (records_.waiting() > config_.max_waiting_records) {
    std::vector<uint64_t> stalled;
    std::vector<QueuedRecord> records;
    records_.SkipStalled(&stalled, &records);
    written += records.size();
    WriteRecords(&records);
    for (uint64_t ticket : stalled) RecordDropped(ticket);
  }
  return written;
}

// A notice for the call record of `ticket`, skipped; its seq when it is an op. Without mu_ held.
void CaptureEngine::RecordDropped(uint64_t ticket) {
  const uint64_t seq = RunningSeq(ticket);
  uint64_t count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    count = ++records_dropped_;
  }
  if (count == 1) {
    Log("a call has not returned while %zu later records waited (a hung vendor call?): writing them without its "
        "record", config_.max_waiting_records);
  }
  Notice(format::NoticeCode::kRecordDropped, seq, count,
         "call record dropped: the call had not returned while " + std::to_string(config_.max_waiting_records) +
             " later records waited");
}

// Runs with `lock` held, after stop_: waits a bounded time for copies still being enqueued by other threads,
// writes what is left (records in ticket order, skipping calls that never returned), and closes the sink.
void CaptureEngine::FinalDrain(std::unique_lock<std::mutex>& lock) {
  const RelaxedCaptureMode relaxed(driver_);
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(1);
  auto copying = [this] {
    for (size_t i = 0; i < tensors_.size(); ++i)
      if (tensors_[i].state == CopyState::kCopying) return true;
    return false;
  };
  while (copying() && work_cv_.wait_until(lock, deadline) != std::cv_status::timeout) {
  }
  TensorQueue tensors;
  tensors.swap(tensors_);
  lock.unlock();
  // Every record published so far, in ticket order, skipping calls that never returned.
  auto write_all = [&] {
    std::vector<std::pair<uint64_t, QueuedRecord>> overflow;
    lock.lock();
    overflow.swap(overflow_);
    lock.unlock();
    for (auto& [ticket, record] : overflow) records_.Put(ticket, std::move(record));
    MergeBuffers(/*all=*/true);
    std::vector<QueuedRecord> records;
    records_.TakeAll(order_.tickets(), &records);
    WriteRecords(&records);
  };
  write_all();
  // Payloads still waiting when exit_wait_ms has passed are dropped, counted in one notice: a backlog of packing and
  // writing (the drain behind a fast producer) must not keep the end record from being written before a signal's
  // close gives up (signal_close.h).
  uint64_t late = 0, first_late = kNoSeq;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].state == CopyState::kCopying) continue;
    if (late == 0 && !ExitDeadlinePassed()) {
      WriteTensor(tensors[i]);
      continue;
    }
    if (tensors[i].state == CopyState::kReady && late++ == 0) first_late = tensors[i].seq;
  }
  if (late > 0) {
    uint64_t count;
    {
      std::lock_guard<std::mutex> guard(mu_);
      stats_.dropped += late;
      stats_.dropped_by_reason[static_cast<uint32_t>(format::DropReason::kExitTimeout)] += late;
      count = stats_.dropped;
    }
    Log("%llu tensor payloads not written: TTRACE_EXIT_WAIT_MS (%d ms) passed while they waited to be written",
        static_cast<unsigned long long>(late), config_.exit_wait_ms);
    Notice(format::NoticeCode::kPayloadDropped, first_late, count,
           std::to_string(late) + " payloads dropped (this op's and later ones): not written " +
               std::to_string(config_.exit_wait_ms) + " ms after exit began (TTRACE_EXIT_WAIT_MS)",
           static_cast<uint32_t>(format::DropReason::kExitTimeout));
  }
  write_all();  // notices about tensors that failed just now
  WriteEnd();
  if (!sink_failed_ && !sink_->Close()) SinkFailed();
  flushed_cv_.notify_all();
  lock.lock();
}

void CaptureEngine::WriteRecords(std::vector<QueuedRecord>* records) {
  for (const QueuedRecord& r : *records)
    Append(r.type, r.body.data(), r.body.size(), r.payload.data(), r.payload.size());
  records->clear();
}

bool CaptureEngine::ExitDeadlinePassed() const {
  const int64_t deadline = exit_deadline_.load(std::memory_order_relaxed);
  return deadline != 0 && Clock::now().time_since_epoch().count() >= deadline;
}

// Polls rather than blocking in cuEventSynchronize, which could not be given up: 50 us sleeps doubling to 2 ms
// (a copy already done costs one query; one still running is noticed within 2 ms of its end).
CUresult CaptureEngine::WaitCopy(CUevent event) {
  auto pause = std::chrono::microseconds(50);
  while (true) {
    const CUresult e = driver_->EventQuery(event);
    if (e != CUDA_ERROR_NOT_READY) return e;
    const int64_t deadline = exit_deadline_.load(std::memory_order_relaxed);
    if (deadline != 0 && Clock::now().time_since_epoch().count() >= deadline) return CUDA_ERROR_NOT_READY;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

void CaptureEngine::WriteTensor(const TensorItem& item) {
  if (item.state != CopyState::kReady) {
    // The capturing thread already noted the drop. Copies queued before the failed one may still be writing
    // into the item's ring space: wait for them before it is handed back (at exit, no longer than exit_wait_ms:
    // nothing reuses the ring then).
    if (item.event != nullptr) WaitCopy(item.event);
    return;
  }
  const CUresult e = item.owned ? CUDA_SUCCESS : WaitCopy(item.event);
  if (e == CUDA_ERROR_NOT_READY) {
    Drop(item.seq, format::DropReason::kExitTimeout, "the device had not finished copying this tensor " + std::to_string(config_.exit_wait_ms) +
                       " ms after exit began (TTRACE_EXIT_WAIT_MS): its stream is still busy or hung");
    return;
  }
  if (e != CUDA_SUCCESS) {
    Drop(item.seq, format::DropReason::kCopyFailed,
         "waiting for the device-to-host copy failed: " + CudaErrorText(driver_, e));
    return;
  }
  if (sink_failed_) return;
  // Staged data that is already dense (ld == rows, batches back to back) is written straight from the ring.
  const char* staged = item.owned ? item.owned->data() : ring_base_ + item.offset;
  if (item.array_words > 0) {
    const size_t array_bytes = item.array_words * sizeof(void*);
    if (memcmp(staged, staged + array_bytes, array_bytes) != 0) {
      Drop(item.seq, format::DropReason::kOther,
           "the pointer array changed between the call and the op's turn on its stream: batches not captured");
      return;
    }
    staged += 2 * array_bytes;
  }
  const size_t bytes = item.plan.packed_bytes;
  const char* payload = staged;
  // Floating-point elements are float-coded (PayloadKind::kFloatCoded, TTRACE_CODEC); other elements wider than a
  // byte are byte-shuffled (PayloadKind::kShuffled, TTRACE_SHUFFLE): packed first when the staging is not dense,
  // then coded or shuffled from there into the second part of the buffer.
  const uint32_t elem = item.plan.elem_bytes;
  const bool code = config_.codec && IsFloat(item.spec.dtype) && store::FloatCodecSupports(elem);
  const bool shuffle = !code && config_.shuffle && elem > 1;
  const size_t need = (item.plan.staged_dense ? 0 : bytes) +
                      (code ? store::FloatCodecMaxBytes(bytes / elem, elem) : shuffle ? bytes : 0);
  if (payload_capacity_ < need) {
    payload_.reset(new char[need]);
    payload_capacity_ = need;
  }
  if (!item.plan.staged_dense) {
    PackDense(item.spec, item.plan, staged, payload_.get());
    payload = payload_.get();
  }
  if (shuffle) {
    char* shuffled = payload_.get() + (item.plan.staged_dense ? 0 : bytes);
    format::ShuffleBytes(payload, bytes / elem, elem, shuffled);
    payload = shuffled;
  }
  size_t payload_bytes = bytes;
  if (code) {
    char* coded = payload_.get() + (item.plan.staged_dense ? 0 : bytes);
    payload_bytes = store::FloatEncode(payload, bytes / elem, elem, coded);
    payload = coded;
  }
  format::TensorRecord t;
  memset(&t, 0, sizeof t);
  t.seq = item.seq;
  t.slot = static_cast<uint8_t>(item.spec.slot);
  t.index = item.spec.index;
  t.payload_kind = static_cast<uint8_t>(code      ? format::PayloadKind::kFloatCoded
                                        : shuffle ? format::PayloadKind::kShuffled
                                                  : format::PayloadKind::kFull);
  t.dtype = static_cast<uint8_t>(item.spec.dtype);
  t.rows = item.spec.rows;
  t.cols = item.spec.cols;
  t.batch = item.spec.batch;
  t.payload_bytes = payload_bytes;
  if (Append(format::RecordType::kTensor, &t, sizeof t, payload, payload_bytes)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.tensors;
    stats_.tensor_bytes += bytes;
  }
}

bool CaptureEngine::Append(format::RecordType type, const void* body, size_t body_bytes, const void* payload,
                           size_t payload_bytes) {
  if (sink_failed_) return false;
  if (!sink_->Append(type, body, body_bytes, payload, payload_bytes)) {
    SinkFailed();
    return false;
  }
  records_written_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void CaptureEngine::SinkFailed() {
  sink_failed_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.sink_failed = true;
  }
  tensors_on_.store(false);
  const std::string why = "writing " + sink_name_ + " failed: " + sink_->error();
  if (config_.on_failure) config_.on_failure(why);
}

}  // namespace ttrace::shim
