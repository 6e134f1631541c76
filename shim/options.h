// Options of libttrace.so: one X-macro list (options.inc) -> TTRACE_<NAME> environment variables, parsed once.
//
// The shim reads them on its first intercepted call (runtime.h: GetOptions); ParseOptions is the pure function
// behind that, exposed for tests and for the `ttrace-options` tool that prints the documentation table.
// Depends on no CUDA library and no Abseil (it is linked into libttrace.so).
#ifndef TTRACE_SHIM_OPTIONS_H_
#define TTRACE_SHIM_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_OPTIONS_H_
