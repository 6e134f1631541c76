// `ttrace diff REF_DIR CAND_DIR [--json FILE] [--mapping FILE] [--max-gap N] [--calibrate CLEAN_DIR]
// [--calibration-multiple K] [--allow-incomplete]`, called by
// RunCli (cli.h) with the whole argv (argv[1] == "diff"). Exit status as for `check`: 0 clean, 1 findings,
// 2 usage or data error (one line "ttrace: error: ..."), 3 incomplete (ops not aligned or not compared);
// --allow-incomplete turns 3 into 0. Report to `out`, errors to `err`.
#ifndef TTRACE_ANALYZER_DIFF_CLI_H_
#define TTRACE_ANALYZER_DIFF_CLI_H_

#include <ostream>

namespace ttrace::analyzer {

// The diff lines of `ttrace --help` (a macro so cli.cc can splice it into its usage literal).
#define TTRACE_DIFF_USAGE \
    "  diff REF_DIR CAND_DIR [--json FILE] [--html FILE] [--mapping FILE] [--max-gap N] [--calibrate CLEAN_DIR]\n" \
    "       [--calibration-multiple K] [--allow-incomplete]\n" \
    "      Compare a run (CAND_DIR) with a trusted reference run of the same program (REF_DIR: one rank, or\n" \
    "      the same layout for a bitwise comparison). Reports the first divergent op, inside it or between\n" \
    "      ops (docs/diff.md). --mapping FILE sets shard layouts by reference op and the reference ops\n" \
    "      each pipeline stage owns; --max-gap N bounds the ops\n" \
    "      alignment may skip or reorder (default 64). --calibrate CLEAN_DIR: a second trusted one-rank run\n" \
    "      (the reference with inputs perturbed by one rounding) whose spread from REF_DIR sets the threshold\n" \
    "      of each input operand (K x spread + u, K = 12 unless --calibration-multiple says otherwise).\n" \
    "      --html FILE: the HTML report (as check's), with the first divergent op at the top.\n"

int RunDiffCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DIFF_CLI_H_
