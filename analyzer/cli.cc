// Flags are parsed by hand: two subcommands with two flags do not justify a flags library, and absl's flags
// would make RunCli depend on process-global state.
#include "analyzer/cli.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/check.h"
#include "analyzer/dump.h"
#include "analyzer/json.h"
#include "analyzer/progress.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

namespace {

constexpr char kUsage[] =
    "usage: ttrace <command> [args]\n"
    "\n"
    "commands:\n"
    "  check DIR [--json FILE] [--allow-truncated]\n"
    "      Check every rank stream (*.ttr) in DIR: replay each captured GEMM in FP64 against the\n"
    "      gemm.deterministic error bound, check each all-reduce against all ranks' inputs and for bitwise\n"
    "      identical outputs. Prints a report; --json FILE also writes it as JSON.\n"
    "      --allow-truncated  check the complete frames of streams cut short by a killed writer (warns)\n"
    "  dump FILE|DIR [--allow-truncated]\n"
    "      Print every record of a stream (or of each stream in DIR), one per line.\n"
    "  --help\n"
    "      This text.\n"
    "\n"
    "exit status: 0 clean, 1 findings, 2 usage or data error\n"
    "docs: docs/format.md (trace format), docs/error-models.md (bounds)\n";

struct Args {
  std::vector<std::string> positional;
  std::string json;
  bool allow_truncated = false;
};

// Parses the arguments after the subcommand; returns an error message or "".
std::string ParseArgs(int argc, const char* const* argv, bool json_allowed, Args* args) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--allow-truncated") {
      args->allow_truncated = true;
    } else if (json_allowed && a == "--json") {
      if (i + 1 >= argc) return "--json needs a file name";
      args->json = argv[++i];
    } else if (json_allowed && a.rfind("--json=", 0) == 0) {
      args->json = a.substr(7);
      if (args->json.empty()) return "--json needs a file name";
    } else if (a.size() > 1 && a[0] == '-') {
      return absl::StrCat("unknown option ", a);
    } else {
      args->positional.push_back(a);
    }
  }
  if (args->positional.size() != 1) return "expected exactly one path";
  return "";
}

int UsageError(std::ostream& err, const std::string& message) {
  err << "ttrace: " << message << "\n" << kUsage;
  return kExitError;
}

int DataError(std::ostream& err, const absl::Status& status) {
  err << "ttrace: error: " << status.message() << "\n";
  return kExitError;
}

int Check(const Args& args, std::ostream& out, std::ostream& err) {
  Progress progress;
  LoadOptions lo;
  lo.allow_truncated = args.allow_truncated;
  lo.on_file = [&](const std::string& path) { progress.Update("ttrace: reading " + BaseName(path), true); };
  absl::StatusOr<TraceSet> set = LoadTraceDir(args.positional[0], lo);
  progress.Clear();
  if (!set.ok()) return DataError(err, set.status());
  for (const RankTrace& t : set->ranks)
    if (t.truncated) err << "ttrace: warning: " << t.truncation << "; checking the complete frames\n";
  CheckReport report = RunChecks(*set, [&](uint64_t done, uint64_t total) {
    progress.Update(absl::StrCat("ttrace: checked ", done, " of ", total, " ops"), done == total);
  });
  progress.Clear();
  PrintReport(report, out);
  if (!args.json.empty()) {
    absl::Status s = WriteReportJson(report, args.json);
    if (!s.ok()) return DataError(err, s);
  }
  return report.clean() ? kExitClean : kExitFindings;
}

int Dump(const Args& args, std::ostream& out, std::ostream& err) {
  ReaderOptions ro;
  ro.allow_truncated = args.allow_truncated;
  std::vector<std::string> paths;
  const std::string& path = args.positional[0];
  absl::StatusOr<std::vector<std::string>> listed = ListStreams(path);
  if (listed.ok()) {
    paths = std::move(*listed);
  } else if (absl::IsInvalidArgument(listed.status())) {  // not a directory: a stream file
    paths.push_back(path);
  } else {
    return DataError(err, listed.status());
  }
  for (const std::string& p : paths) {
    std::string warning;
    absl::Status s = DumpStream(p, ro, out, &warning);
    out.flush();
    if (!s.ok()) return DataError(err, s);
    if (!warning.empty()) err << "ttrace: warning: " << warning << "\n";
  }
  return kExitClean;
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  if (argc < 2) return UsageError(err, "missing command");
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    out << kUsage;
    return kExitClean;
  }
  if (cmd != "check" && cmd != "dump") return UsageError(err, absl::StrCat("unknown command '", cmd, "'"));
  Args args;
  std::string problem = ParseArgs(argc, argv, cmd == "check", &args);
  if (!problem.empty()) return UsageError(err, absl::StrCat(cmd, ": ", problem));
  return cmd == "check" ? Check(args, out, err) : Dump(args, out, err);
}

}  // namespace ttrace::analyzer
