// `ttrace run [--dir DIR] [--job NAME] [--preload LIB] [--no-check] [check options] -- CMD [ARGS...]`, called by
// RunCli (cli.h) with the whole argv (argv[1] == "run"): runs CMD under the shim, like `nsys profile` or
// `compute-sanitizer`, then checks its trace.
//
// - LD_PRELOAD gets libttrace.so prepended (--preload LIB, else the one installed beside this executable:
//   <dir of ttrace>/../lib/libttrace.so, the layout of build/ and of an install); TTRACE_DIR and TTRACE_JOB are
//   set for CMD and everything it starts (torchrun's workers included), so every rank writes to one directory.
// - The trace directory: --dir, else $TTRACE_DIR, else ./ttrace-out/<job>; the job: --job, else $TTRACE_JOB, else
//   run-<UTC date and time>-<pid>. A directory that already holds streams (*.ttr) is refused before CMD runs:
//   streams of two runs must not mix.
// - CMD runs as a child in this process group. While it runs, SIGINT and SIGQUIT are ignored here (the terminal
//   sends them to CMD too; the shim closes its streams on SIGINT), SIGTERM and SIGHUP are forwarded to CMD.
// - After CMD ends: "ttrace: trace in DIR" on `err`, then, unless --no-check, `ttrace check DIR [check options]`
//   in process, its report on `out`. Check options (--json, --allow-incomplete, ...) are validated before CMD
//   runs.
//
// Exit status (beside `check`'s, cli.h): 1 when the check has findings, whatever CMD did; else CMD's own status
// when it failed (its exit code, 128 + N when signal N killed it); else the check's (0 clean, 2 no trace or
// unreadable trace, 3 incomplete, 0 with --allow-incomplete). With --no-check, CMD's status. 2 for a usage error
// or a missing libttrace.so, 126 when CMD cannot be executed, 127 when it is not found (as shells do).
#ifndef TTRACE_ANALYZER_RUN_CLI_H_
#define TTRACE_ANALYZER_RUN_CLI_H_

#include <ostream>

namespace ttrace::analyzer {

// The run lines of `ttrace --help` (a macro so cli.cc can splice it into its usage literal).
#define TTRACE_RUN_USAGE \
    "  run [--dir DIR] [--job NAME] [--preload LIB] [--no-check] [check options] -- CMD [ARGS...]\n" \
    "      Run CMD (torchrun, simrun, any command) with libttrace.so preloaded and TTRACE_DIR set, print\n" \
    "      where the trace is, then check it (check options as for `check`). Exit status: 1 on findings,\n" \
    "      else CMD's status when it failed, else the check's. DIR: --dir, $TTRACE_DIR or\n" \
    "      ./ttrace-out/<job>; it must not hold a trace already. LIB: beside this executable (../lib).\n"

int RunRunCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_RUN_CLI_H_
