// Random access into a stream by seq: its index `<stream>.idx` (format::IndexHeader, IndexEntry; written by
// StreamFile) says which frames hold records of which seqs, so a reader seeks to those frames instead of reading
// the whole stream.
//
// The index is a hint, never trusted: LoadIndex keeps the longest prefix of entries that are intact (checksums),
// bound to this very stream (its header's CRC, start time and pid), consecutive and inside the file; every frame
// reached through an entry is checked against it (TraceReader::SeekFrame) and its records' seqs against the
// entry's range. A missing, stale or inconsistent index falls back to scanning, and `index_problem` says why, for
// the caller to print once. An index that merely lags its stream (a writer killed between a frame and its entry)
// is no problem: frames past its end are scanned.
//
// Example:
//   TTRACE_ASSIGN_OR_RETURN(SeqRecords found, ReadSeq("dir/rank-2.ttr", 4479, {}));
//   if (!found.index_problem.empty()) warn(found.index_problem);
//   for (const OwnedRecord& r : found.records) Print(r.view());
#ifndef TTRACE_STORE_STREAM_INDEX_H_
#define TTRACE_STORE_STREAM_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/trace_reader.h"
#include "ttrace/format.h"

namespace ttrace::store {

struct LoadedIndex {
  std::vector<format::IndexEntry> entries;  // usable entries: entry i describes frame i
  std::string problem;                      // why (part of) the index is not used; empty when all of it is
};

// Loads the index of the stream at `stream_path`, whose header is `header` and whose file is `stream_bytes` long.
LoadedIndex LoadIndex(const std::string& stream_path, const format::FileHeader& header, uint64_t stream_bytes);

// A record copied out of the reader's frame buffer.
struct OwnedRecord {
  format::RecordType type;
  std::string body;
  std::string payload;
  RecordView view() const { return RecordView{type, body, payload}; }
};

struct SeqRecords {
  std::vector<OwnedRecord> records;  // every record of the stream whose RecordSeq is the seq, in stream order
  bool used_index = false;           // the lookup went through the index
  std::string index_problem;         // why the index was not (fully) used, for one warning
  uint32_t frames_read = 0;          // frames decompressed for the lookup
  uint32_t frames_total = 0;         // frames the stream has (as far as read or indexed)
  bool truncated = false;            // the stream ends inside a frame (allowed by options)
  std::string truncation;
};

// Every record of op `seq` in the stream at `path` (the op's record, its tensors, notices about it).
absl::StatusOr<SeqRecords> ReadSeq(const std::string& path, uint64_t seq, const ReaderOptions& options = {});

}  // namespace ttrace::store

#endif  // TTRACE_STORE_STREAM_INDEX_H_
