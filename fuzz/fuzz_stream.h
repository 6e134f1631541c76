// How a fuzzer's input becomes a trace stream (include/ttrace/format.h), shared by the fuzz harnesses of this
// folder and by the generator of their seed corpus.
//
// Two kinds of input, told apart by their first bytes:
// - A whole stream (it starts with format::kFileMagic): used as it is. Mutations of it exercise the framing
//   checks (magic, version, sizes, checksums, truncation) and mostly end at a checksum.
// - Anything else is the uncompressed content of one frame (records: RecordHeader + body + payload, ...). It is
//   wrapped into a stream with a valid file header (rank 0 of 1, job "fuzz") and one frame whose sizes, record
//   count and checksums are right, so mutations reach the record parsing and everything behind it rather than
//   the checksums. The record count is that of the records that walk cleanly (as the reader walks them), so a
//   malformed record is found by the reader's size checks, not by the count check.
#ifndef TTRACE_FUZZ_FUZZ_STREAM_H_
#define TTRACE_FUZZ_FUZZ_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace ttrace::fuzz {

// The stream bytes for a fuzzer input (see above).
std::string StreamFromInput(const uint8_t* data, size_t size);

// A stream of one frame holding `records` (uncompressed record bytes), with valid headers and checksums.
std::string WrapRecords(const std::string& records);

// The uncompressed content of every frame of a well-formed stream, concatenated (the seed of the second kind
// for a stream of the first); empty when `stream` is not well-formed.
std::string RecordsOf(const std::string& stream);

// Writes `bytes` to `path` (replacing it); false on an I/O error.
bool WriteFile(const std::string& path, const std::string& bytes);

// Removes `path` and everything under it (no error if it does not exist).
void RemoveTree(const std::string& path);

// A directory of this process's own under $TMPDIR (else /tmp), created once.
const std::string& ScratchDir();

}  // namespace ttrace::fuzz

#endif  // TTRACE_FUZZ_FUZZ_STREAM_H_
