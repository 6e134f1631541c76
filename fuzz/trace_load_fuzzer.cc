// libFuzzer harness: the analyzer over a trace directory of one hostile stream (fuzz_stream.h says how an input
// becomes a stream), through the command line's own entry point, as `ttrace check DIR --json F --threads 2` (the
// worker threads and their merge in trace order) and `ttrace dump FILE` run it. It asserts the CLI's contract
// (cli.h): exit 0, 1, 2 or 3 and nothing else, an exit 2 explains itself in a "ttrace: error:" line, and a stream
// that dump rejects is never called clean. Memory stays bounded by --max-memory-mb (libFuzzer's -malloc_limit_mb
// and -rss_limit_mb catch what escapes the budget) and time by --max-gemm-work (libFuzzer's -timeout).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <sys/stat.h>

#include "analyzer/cli.h"
#include "fuzz/fuzz_assert.h"
#include "fuzz/fuzz_stream.h"

namespace {

int Cli(std::initializer_list<const char*> args, std::string* err_text) {
  std::vector<const char*> argv(args);
  std::ostringstream out, err;
  int rc = ttrace::analyzer::RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  *err_text = err.str();
  return rc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ttrace::analyzer::kExitClean;
  using ttrace::analyzer::kExitError;
  using ttrace::analyzer::kExitIncomplete;
  static const std::string dir = [] {
    std::string d = ttrace::fuzz::ScratchDir() + "/trace";
    mkdir(d.c_str(), 0700);
    return d;
  }();
  static const std::string stream = dir + "/rank-0.ttr";
  static const std::string json = ttrace::fuzz::ScratchDir() + "/report.json";
  FUZZ_ASSERT(ttrace::fuzz::WriteFile(stream, ttrace::fuzz::StreamFromInput(data, size)));

  std::string err;
  int check = Cli({"ttrace", "check", dir.c_str(), "--json", json.c_str(), "--max-memory-mb", "64",
                   "--max-gemm-work", "1000000", "--threads", "2"},
                  &err);
  FUZZ_ASSERT(check >= kExitClean && check <= kExitIncomplete);
  if (check == kExitError) FUZZ_ASSERT(err.find("ttrace: error: ") != std::string::npos);

  int dump = Cli({"ttrace", "dump", stream.c_str(), "--allow-truncated"}, &err);
  FUZZ_ASSERT(dump == kExitClean || dump == kExitError);
  if (dump == kExitError) {
    FUZZ_ASSERT(err.find("ttrace: error: ") != std::string::npos);
    FUZZ_ASSERT(check != kExitClean);  // a stream dump cannot read is not a clean trace
  }
  return 0;
}
