// The `ttrace` command line (main.cc is a thin wrapper over RunCli, so tests drive it in process).
//
//   ttrace check DIR [--json FILE] [--allow-incomplete] [--max-memory-mb N] [--max-gemm-work N]
//   ttrace dump FILE|DIR [--allow-truncated]
//   ttrace diff REF_DIR CAND_DIR [...] (diff_cli.h)
//   ttrace run [--dir DIR] [--job NAME] [--preload LIB] [--no-check] [check options] -- CMD [ARGS...] (run_cli.h)
//   ttrace export DIR [--perfetto FILE] [--npy OUTDIR [--rank R] [--seq S]] (export.h)
//   ttrace --help
//
// Exit status (DESIGN.md §4): 0 clean, 1 findings, 2 usage or data error, 3 incomplete (no finding, but evidence
// is missing; --allow-incomplete accepts what was checked: exit 0, the report still says incomplete). Data
// errors (missing directory, no streams, corrupt stream, inconsistent streams, a trace over the memory budget,
// out of memory) print one line "ttrace: error: ..." naming the file. `check` reads a stream cut inside a frame
// to its last complete frame and calls it incomplete (--allow-truncated is accepted for old scripts).
// Reports go to `out`, errors and warnings to `err`; a progress line goes to the process's stderr when it is a
// terminal. `run` adds the job's own exit status (run_cli.h): 1 on findings, else the job's status when it
// failed, else the check's.
#ifndef TTRACE_ANALYZER_CLI_H_
#define TTRACE_ANALYZER_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace ttrace::analyzer {

inline constexpr int kExitClean = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitIncomplete = 3;

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// What is wrong with `options` as the options of `ttrace check DIR ...`, or "" (run_cli.h validates them before
// its job runs).
std::string CheckOptionsProblem(const std::vector<std::string>& options);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_CLI_H_
