// An ordered map suffices: records wait only while an earlier call is still inside its vendor function, so the
// map stays as small as the number of concurrently running intercepted calls, unless one of them hangs: then
// CaptureEngine bounds it with SkipStalled.
#include "shim/record_queue.h"

#include <utility>

namespace ttrace::shim {

bool RecordQueue::Put(uint64_t ticket, QueuedRecord record) {
  if (ticket < next_take_ || ticket >= next_reserve_) return false;
  published_.emplace(ticket, std::move(record));
  return true;
}

void RecordQueue::TakeReady(std::vector<QueuedRecord>* out) {
  while (!published_.empty() && published_.begin()->first == next_take_) {
    out->push_back(std::move(published_.begin()->second));
    published_.erase(published_.begin());
    ++next_take_;
  }
}

void RecordQueue::TakeAll(std::vector<QueuedRecord>* out) {
  for (auto& [ticket, record] : published_) out->push_back(std::move(record));
  published_.clear();
  next_take_ = next_reserve_;
}

void RecordQueue::SkipStalled(std::vector<uint64_t>* skipped, std::vector<QueuedRecord>* out) {
  if (published_.empty()) return;
  for (; next_take_ < published_.begin()->first; ++next_take_) skipped->push_back(next_take_);
  TakeReady(out);
}

}  // namespace ttrace::shim
