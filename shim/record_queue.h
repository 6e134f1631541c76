// RecordQueue: puts call records in host call order although calls finish in any order.
//
// A call takes a ticket when it enters (CaptureEngine::Reserve, which also hands out its seq; tickets are 0, 1, 2,
// ...) and publishes its record when the vendor call has returned (the record holds the vendor's status). The
// drain thread puts each published record here and takes
// records in ticket order; a ticket that is reserved but not yet published holds back the ones after it. When too
// many wait (a hung call), SkipStalled gives up on the ticket holding them; at shutdown TakeAll also takes what
// waits behind a call that never returned. A skipped ticket's record is discarded when it comes.
// Not thread-safe: only CaptureEngine's drain uses it.
#ifndef TTRACE_SHIM_RECORD_QUEUE_H_
#define TTRACE_SHIM_RECORD_QUEUE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ttrace/format.h"

namespace ttrace::shim {

struct QueuedRecord {
  format::RecordType type;
  std::string body;
  std::string payload;
};

class RecordQueue {
 public:
  // Publishes the record of `ticket`. Returns false (record discarded) when the ticket was already skipped.
  bool Put(uint64_t ticket, QueuedRecord record);
  // The record of ticket taken() was written without passing through the queue.
  void MarkTaken() { ++next_take_; }
  // Appends, in ticket order, the published records up to the first unpublished ticket.
  void TakeReady(std::vector<QueuedRecord>* out);
  // Appends every published record in ticket order and skips the unpublished tickets below `reserved` (the
  // tickets handed out so far).
  void TakeAll(uint64_t reserved, std::vector<QueuedRecord>* out);
  // Skips the unpublished tickets that hold back the first published record (calls that have not returned while
  // records after them wait), appending them to *skipped, then takes what is ready. Tickets after that record are
  // untouched: their calls may still be running normally.
  void SkipStalled(std::vector<uint64_t>* skipped, std::vector<QueuedRecord>* out);

  uint64_t taken() const { return next_take_; }        // tickets before this one are taken or skipped
  size_t waiting() const { return published_.size(); }

 private:
  uint64_t next_take_ = 0;
  std::map<uint64_t, QueuedRecord> published_;
};

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_RECORD_QUEUE_H_
