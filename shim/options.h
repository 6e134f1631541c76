// Options of libttrace.so: one X-macro list (options.inc) -> TTRACE_<NAME> environment variables, parsed once.
//
// The shim reads them on its first intercepted call (runtime.h: GetOptions); ParseOptions is the pure function
// behind that, exposed for tests and for the `ttrace-options` tool that prints the documentation table.
// Depends on no CUDA library and no Abseil (it is linked into libttrace.so).
#ifndef TTRACE_SHIM_OPTIONS_H_
#define TTRACE_SHIM_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ttrace/format.h"

namespace ttrace::shim {

enum class CaptureMode : uint8_t { kMeta = 0, kFull = 1 };

// Value types of options.inc entries.
using OptionBool = bool;
using OptionInt = int64_t;  // non-negative, < 2^31
using OptionString = std::string;
using OptionMode = CaptureMode;

struct Options {
#define TTRACE_OPTION(type, member, env, def, doc) Option##type member = def;
#include "shim/options.inc"
#undef TTRACE_OPTION
};

// Looks up an environment variable: its value, or nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

// Reads every option from `env`. Unparsable values keep the default and add a message to `warnings` (may be
// null). Afterwards `job` and `dir` hold resolved values: job = TTRACE_JOB, else TORCHELASTIC_RUN_ID, else
// "default" ('/' replaced by '_'); dir = TTRACE_DIR, else ./ttrace-out/<job>.
Options ParseOptions(const EnvLookup& env, std::vector<std::string>* warnings);

// The options as a Markdown table (| Variable | Default | Description |), one row per options.inc entry, in
// list order, ending with a newline. README.md embeds it between the lines
// <!-- ttrace-options:begin --> and <!-- ttrace-options:end -->.
std::string OptionsMarkdown();

// "TTRACE_<NAME>=<value>" lines of `options`, one per options.inc entry (job and dir as resolved).
std::string OptionsDump(const Options& options);

const char* CaptureModeName(CaptureMode mode);

// The libcupti the shim loads for TTRACE_CONTEXT (cupti_context.cc): the first of these that dlopen finds.
// `ttrace run` points NVTX_INJECTION64_PATH at the same library (run_cli.cc).
inline constexpr const char* kCuptiSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

// TTRACE_OPS, the call filter: selected[i] says whether calls of format::kApis[i] are recorded. `text` is a
// comma-separated list of library groups (gemm: every cuBLAS op, lt: cuBLASLt, cudnn, nccl) and exported op names
// (apis.inc symbols of kind kOp); the set-up calls of a library are selected with any of its ops, since its ops'
// records and captures need them (communicators, groups, cuDNN descriptor shadows). Empty: everything. Unknown
// names and set-up names are ignored with a warning; a list that selects no op selects everything, with a warning.
inline constexpr size_t kApiCount = sizeof(format::kApis) / sizeof(format::kApis[0]);
void ParseOpsFilter(const std::string& text, bool selected[kApiCount], std::vector<std::string>* warnings);

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_OPTIONS_H_
