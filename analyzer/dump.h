// `ttrace dump`: every record of a stream as one line of text, for people and for scripts (tools/demo.sh reads
// it). Line shapes, fields separated by single spaces:
//   seq=N <api> key=value ...              an op record (GEMM, collective): field 2 is the API symbol
//   tensor seq=N slot=<A|B|C_in|C_out|send|recv|alpha|beta|bias|aux_in|aux_out|bias_grad|scale_a|...> kind=full dtype=<f32|...> shape=RxCxB bytes=N
//   setup <api> status=N ...               communicator and group calls
//   notice code=N seq=N count=N message="..."
//   unknown type=N bytes=N                 a record type this build does not know
// Each stream starts with a comment line "# <file>: rank R of W, job '...', host ..., pid P".
#ifndef TTRACE_ANALYZER_DUMP_H_
#define TTRACE_ANALYZER_DUMP_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "store/trace_reader.h"

namespace ttrace::analyzer {

// The text line of one record (no newline).
std::string RecordLine(const store::RecordView& r);

// Writes the stream's header comment and one line per record to `out`. A read error is returned after the
// records before it were written; a truncation allowed by `options` is reported in `*warning`.
absl::Status DumpStream(const std::string& path, const store::ReaderOptions& options, std::ostream& out,
                        std::string* warning);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DUMP_H_
