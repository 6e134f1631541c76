// `ttrace dump`: every record of a stream as one line of text, for people and for scripts (tools/demo.sh reads
// it). Line shapes, fields separated by single spaces:
//   seq=N <api> key=value ...              an op record (GEMM, collective): field 2 is the API symbol
//   tensor seq=N slot=<A|B|C_in|C_out|send|recv|alpha|beta|bias|aux_in|aux_out|bias_grad|scale_a|...> kind=full dtype=<f32|...> shape=RxCxB bytes=N
//   setup <api> status=N ...               communicator and group calls
//   notice code=N seq=N count=N message="..."
//   unknown type=N bytes=N                 a record type this build does not know
// Each stream starts with a comment line "# <file>: rank R of W, job '...', host ..., pid P". Lines starting with
// '#' are comments for people; scripts skip them.
#ifndef TTRACE_ANALYZER_DUMP_H_
#define TTRACE_ANALYZER_DUMP_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/trace_reader.h"

namespace ttrace::analyzer {

// The text line of one record (no newline).
std::string RecordLine(const store::RecordView& r);

// "A", "C_out", "send", "graph_in", ... (format.h TensorSlot); "?" for an unknown slot.
const char* TensorSlotName(uint8_t slot);

// Writes the stream's header comment and one line per record to `out`. A read error is returned after the
// records before it were written; a truncation allowed by `options` is reported in `*warning`.
absl::Status DumpStream(const std::string& path, const store::ReaderOptions& options, std::ostream& out,
                        std::string* warning);

// `ttrace dump --seq S`: the header comment, then every record of op `seq` (its op record, tensors, notices) in
// stream order, found through the stream's index (store/stream_index.h), then a comment line saying how many
// frames were read: "# seq S: N records, read F of T frames (index)" or "(scan)". When the index could not be
// used (missing, stale, inconsistent) `*note` says why, once, and the stream is scanned. NotFound when the stream
// holds no record of `seq`.
absl::Status DumpSeq(const std::string& path, uint64_t seq, const store::ReaderOptions& options, std::ostream& out,
                     std::string* note, std::string* warning);

// The stream of rank `rank` in the store directory `dir`: `dir`/rank-<rank>.ttr when its header says that rank,
// else the stream whose header does. NotFound when no stream of `dir` is that rank's.
absl::StatusOr<std::string> FindRankStream(const std::string& dir, int rank);

// `ttrace dump DIR --manifest`: one line per stream of the directory's manifest (store/manifest.h), the last
// state its writers recorded: "<stream> open|closed|cut rank=R world=W pid=P host=H writer=shim|collector
// frames=F records=N bytes=B job=J tool="..." libraries="..." [ops=... tensors=... payloads_dropped=...
// [reason]=n ...] [frames_lost=...]".
absl::Status DumpManifest(const std::string& dir, std::ostream& out, std::string* warning);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DUMP_H_
