// The `ttrace` command line (main.cc is a thin wrapper over RunCli, so tests drive it in process).
//
//   ttrace check DIR [--json FILE] [--allow-incomplete] [--max-memory-mb N] [--max-gemm-work N]
//   ttrace dump FILE|DIR [--allow-truncated]
//   ttrace --help
//
// Exit status (DESIGN.md §4): 0 clean, 1 findings, 2 usage or data error, 3 incomplete (no finding, but evidence
// is missing; --allow-incomplete accepts what was checked: exit 0, the report still says incomplete). Data
// errors (missing directory, no streams, corrupt stream, inconsistent streams, a trace over the memory budget,
// out of memory) print one line "ttrace: error: ..." naming the file. `check` reads a stream cut inside a frame
// to its last complete frame and calls it incomplete (--allow-truncated is accepted for old scripts).
// Reports go to `out`, errors and warnings to `err`; a progress line goes to the process's stderr when it is a
// terminal.
#ifndef TTRACE_ANALYZER_CLI_H_
#define TTRACE_ANALYZER_CLI_H_

#include <ostream>

namespace ttrace::analyzer {

inline constexpr int kExitClean = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitIncomplete = 3;

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_CLI_H_
