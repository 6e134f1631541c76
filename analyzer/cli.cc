// Flags are parsed by hand: two subcommands with two flags do not justify a flags library, and absl's flags
// would make RunCli depend on process-global state.
#include "analyzer/cli.h"

#include <unistd.h>

#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/check.h"
#include "analyzer/diff_cli.h"
#include "analyzer/dump.h"
#include "analyzer/export.h"
#include "analyzer/html_report.h"
#include "analyzer/json.h"
#include "analyzer/progress.h"
#include "analyzer/run_cli.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

namespace {

constexpr char kUsage[] =
    "usage: ttrace <command> [args]\n"
    "\n"
    "commands:\n"
    "  check DIR [--json FILE] [--html FILE] [--allow-incomplete] [--memory-limit S] [--max-gemm-work N]\n"
    "            [--gemm-method full|full-fp32|projection|auto] [--gemm-full-16bit N] [--bound deterministic|probabilistic] [--threads N]\n"
    "      Check every rank stream (*.ttr) in DIR: replay each captured GEMM in FP64 against the\n"
    "      gemm.deterministic error bound, check each all-reduce against all ranks' inputs and for bitwise\n"
    "      identical outputs. Prints a report; --json FILE also writes it as JSON. The verdict is clean only\n"
    "      when every op was checked, every rank is present and every stream ends with its end record;\n"
    "      otherwise incomplete (exit 3), naming what is missing.\n"
    "      --allow-incomplete  exit 0 on an incomplete verdict (what was checked is accepted)\n"
    "      --memory-limit S    memory the checks may hold at once (N MiB, or NK, NM, NG; default 4G or a quarter\n"
    "                          of the machine's memory): tensors are read op by op as they are checked, so any\n"
    "                          trace size fits; an op needing more is not checked. --max-memory-mb N: the same\n"
    "      --max-gemm-work N   multiply-adds one GEMM replay may cost (default 2^36); larger: not checked\n"
    "                          (auto: verified by projection instead)\n"
    "      --gemm-method M     full (replay every element in FP64), full-fp32 (the same verdicts for BF16/FP16/\n"
    "                          FP8 inputs: FP32 GEMMs over slices of k, each element decided with both\n"
    "                          sides' errors bounded, the undecided ones replayed in FP64), projection\n"
    "                          (Freivalds: random projections, then replay of suspect rows/columns and random\n"
    "                          tiles), auto (default: full up to m*n*k = 2^30; above, full-fp32 for BF16/FP16\n"
    "                          outputs of inputs it fits, whose FP32 multiply-adds count 1/4 of\n"
    "                          --max-gemm-work; projection otherwise, or over --max-gemm-work)\n"
    "      --gemm-full-16bit N auto: BF16/FP16 outputs of other inputs (FP32) replayed in full (FP64) up to\n"
    "                          m*n*k = N per batch (default 2^33; the projection misses flips of small\n"
    "                          16-bit elements)\n"
    "      --threads N         worker threads for the per-op checks (default: one per core); the report is the\n"
    "                          same at any count\n"
    "      --bound B           deterministic (default: gemm.deterministic, any order) or probabilistic\n"
    "                          (gemm.probabilistic: sqrt(k) growth, each element fails with probability <= 2^-40\n"
    "                          when rounding errors are independent)\n"
    TTRACE_DIFF_USAGE
    TTRACE_RUN_USAGE
    TTRACE_EXPORT_USAGE
    "  dump FILE|DIR [--allow-truncated] [--rank R] [--seq S] [--manifest]\n"
    "      Print every record of a stream (or of each stream in DIR), one per line. --rank R: only rank R's\n"
    "      stream; --seq S: only the records of op S (its call, tensors, notices), found through the stream's\n"
    "      index (a missing or stale index: the stream is scanned, with one note); --manifest: the job's\n"
    "      manifest, one line per stream (who wrote it, its state, counts and drops).\n"
    "  --help\n"
    "      This text.\n"
    "\n"
    "exit status: 0 clean, 1 findings, 2 usage or data error, 3 incomplete (run: also the command's own)\n"
    "docs: docs/format.md (trace format), docs/error-models.md (bounds)\n";

struct Args {
  std::vector<std::string> positional;
  std::string json;
  std::string html;
  bool allow_truncated = false;
  bool allow_incomplete = false;
  uint64_t max_memory_mb = 0;  // 0: default
  uint64_t max_gemm_work = kDefaultMaxGemmWork;
  uint64_t gemm_full_16bit = GemmCheckOptions().full_16bit_up_to;
  GemmMethod gemm_method = GemmMethod::kAuto;
  BoundKind bound = BoundKind::kDeterministic;
  int threads = 0;  // 0: hardware concurrency
  int rank = -1;        // dump --rank
  bool has_seq = false;  // dump --seq
  uint64_t seq = 0;
  bool manifest = false;  // dump --manifest
};

bool ParseUnsigned(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoull(text);
  return true;
}

bool ParseCount(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoull(text);
  return *out > 0;
}

// Parses the arguments after the subcommand; returns an error message or "".
std::string ParseArgs(int argc, const char* const* argv, bool json_allowed, Args* args) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--allow-truncated") {
      args->allow_truncated = true;
    } else if (json_allowed && a == "--allow-incomplete") {
      args->allow_incomplete = true;
    } else if (json_allowed && (a == "--memory-limit" || a.rfind("--memory-limit=", 0) == 0)) {
      std::string v = a.size() > 14 ? a.substr(15) : (i + 1 < argc ? argv[++i] : "");
      uint64_t shift = 20;  // MiB without a suffix
      if (!v.empty() && (v.back() == 'K' || v.back() == 'M' || v.back() == 'G')) {
        shift = v.back() == 'K' ? 10 : v.back() == 'M' ? 20 : 30;
        v.pop_back();
      }
      uint64_t n = 0;
      if (!ParseCount(v, &n) || n > (uint64_t{1} << (63 - shift)))
        return "--memory-limit needs a size: N (MiB), NK, NM or NG";
      args->max_memory_mb = std::max<uint64_t>(1, (n << shift) >> 20);
    } else if (json_allowed && (a == "--max-memory-mb" || a == "--max-gemm-work" || a == "--gemm-full-16bit")) {
      uint64_t* target = a == "--max-memory-mb" ? &args->max_memory_mb
                         : a == "--max-gemm-work" ? &args->max_gemm_work
                                                  : &args->gemm_full_16bit;
      if (i + 1 >= argc || !ParseCount(argv[i + 1], target)) return absl::StrCat(a, " needs a positive integer");
      ++i;
    } else if (json_allowed && (a == "--gemm-method" || a.rfind("--gemm-method=", 0) == 0)) {
      std::string v = a.size() > 13 ? a.substr(14) : (i + 1 < argc ? argv[++i] : "");
      if (v == "full") args->gemm_method = GemmMethod::kFull;
      else if (v == "projection") args->gemm_method = GemmMethod::kProjection;
      else if (v == "full-fp32") args->gemm_method = GemmMethod::kFullFp32;
      else if (v == "auto") args->gemm_method = GemmMethod::kAuto;
      else return "--gemm-method needs full, full-fp32, projection or auto";
    } else if (json_allowed && (a == "--bound" || a.rfind("--bound=", 0) == 0)) {
      std::string v = a.size() > 7 ? a.substr(8) : (i + 1 < argc ? argv[++i] : "");
      if (v == "deterministic") args->bound = BoundKind::kDeterministic;
      else if (v == "probabilistic") args->bound = BoundKind::kProbabilistic;
      else return "--bound needs deterministic or probabilistic";
    } else if (json_allowed && (a == "--threads" || a.rfind("--threads=", 0) == 0)) {
      std::string v = a.size() > 9 ? a.substr(10) : (i + 1 < argc ? argv[++i] : "");
      uint64_t t = 0;
      if (!ParseCount(v, &t) || t > 1024) return "--threads needs an integer from 1 to 1024";
      args->threads = static_cast<int>(t);
    } else if (!json_allowed && (a == "--rank" || a == "--seq")) {
      uint64_t v = 0;
      if (i + 1 >= argc || !ParseUnsigned(argv[i + 1], &v) || (a == "--rank" && v > INT32_MAX))
        return absl::StrCat(a, " needs a non-negative integer");
      ++i;
      if (a == "--rank") {
        args->rank = static_cast<int>(v);
      } else {
        args->has_seq = true;
        args->seq = v;
      }
    } else if (!json_allowed && a == "--manifest") {
      args->manifest = true;
    } else if (json_allowed && a == "--json") {
      if (i + 1 >= argc) return "--json needs a file name";
      args->json = argv[++i];
    } else if (json_allowed && a == "--html") {
      if (i + 1 >= argc) return "--html needs a file name";
      args->html = argv[++i];
    } else if (json_allowed && a.rfind("--html=", 0) == 0) {
      args->html = a.substr(7);
      if (args->html.empty()) return "--html needs a file name";
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
  if (args->manifest && (args->has_seq || args->rank >= 0)) return "--manifest takes no --rank or --seq";
  return "";
}

// 4 GiB, or a quarter of the physical memory when that is less: what the checks hold at once (estimated; check.h).
uint64_t DefaultMemoryBudget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{4} << 30;
  return std::min(uint64_t{4} << 30, static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4);
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
  lo.allow_truncated = true;  // a cut stream is incomplete evidence, not an error (check.h)
  lo.defer_tensors = true;  // payloads are streamed op by op within the memory limit (check.h)
  const uint64_t limit = args.max_memory_mb > 0 ? args.max_memory_mb << 20 : DefaultMemoryBudget();
  // A trace whose payloads fit a quarter of the limit is read once: kept by the load, released as they are checked
  // (the check's batches share the rest of the limit).
  lo.keep_tensor_bytes = limit / 4;
  lo.on_file = [&](const std::string& path) { progress.Update("ttrace: reading " + BaseName(path), true); };
  absl::StatusOr<TraceSet> set = LoadTraceDir(args.positional[0], lo);
  progress.Clear();
  if (!set.ok()) return DataError(err, set.status());
  for (const RankTrace& t : set->ranks)
    if (t.truncated) err << "ttrace: warning: " << t.truncation << "; checking the complete frames\n";
  CheckOptions co;
  co.max_gemm_work = args.max_gemm_work;
  co.gemm.method = args.gemm_method;
  co.gemm.full_16bit_up_to = args.gemm_full_16bit;
  co.gemm.bound = args.bound;
  co.threads = args.threads;
  co.memory_limit = limit;
  const double start = progress.seconds();
  CheckReport report = RunChecks(
      *set,
      [&](const CheckCounts& c) {
        progress.Update(FormatProgress(c.ops_done, c.ops_total, c.bytes_done, c.bytes_total,
                                       progress.seconds() - start),
                        c.ops_done == c.ops_total);
      },
      co);
  progress.Clear();
  PrintReport(report, out);
  if (!args.json.empty()) {
    absl::Status s = WriteReportJson(report, args.json);
    if (!s.ok()) return DataError(err, s);
  }
  if (!args.html.empty()) {
    absl::Status s = WriteReportHtml(report, args.html);
    if (!s.ok()) return DataError(err, s);
  }
  switch (report.verdict()) {
    case Verdict::kClean: return kExitClean;
    case Verdict::kFindings: return kExitFindings;
    case Verdict::kIncomplete: break;
  }
  if (args.allow_incomplete) {
    err << "ttrace: the verdict is incomplete; accepted (--allow-incomplete)\n";
    return kExitClean;
  }
  return kExitIncomplete;
}

int Dump(const Args& args, std::ostream& out, std::ostream& err) {
  store::ReaderOptions ro;
  ro.allow_truncated = args.allow_truncated;
  const std::string& path = args.positional[0];
  if (args.manifest) {
    std::string warning;
    absl::Status s = DumpManifest(path, out, &warning);
    if (!warning.empty()) err << "ttrace: warning: " << warning << "\n";
    return s.ok() ? kExitClean : DataError(err, s);
  }
  std::vector<std::string> paths;
  absl::StatusOr<std::vector<std::string>> listed = ListStreams(path);
  if (listed.ok()) {
    paths = std::move(*listed);
  } else if (absl::IsInvalidArgument(listed.status())) {  // not a directory: a stream file
    paths.push_back(path);
  } else {
    return DataError(err, listed.status());
  }
  if (args.rank >= 0 && listed.ok()) {
    absl::StatusOr<std::string> found = FindRankStream(path, args.rank);
    if (!found.ok()) return DataError(err, found.status());
    paths = {*found};
  } else if (args.rank >= 0) {
    absl::StatusOr<std::unique_ptr<store::TraceReader>> reader = store::TraceReader::Open(path, ro);
    if (!reader.ok()) return DataError(err, reader.status());
    if ((*reader)->header().rank != args.rank)
      return DataError(err, absl::NotFoundError(absl::StrCat(path, " is rank ", (*reader)->header().rank,
                                                             "'s stream, not rank ", args.rank, "'s")));
  }
  if (args.has_seq && paths.size() != 1)
    return UsageError(err, absl::StrCat("dump: --seq needs one stream: ", path, " holds ", paths.size(),
                                        " (name it, or add --rank R)"));
  for (const std::string& p : paths) {
    std::string warning, note;
    absl::Status s = args.has_seq ? DumpSeq(p, args.seq, ro, out, &note, &warning) : DumpStream(p, ro, out, &warning);
    out.flush();
    if (!note.empty()) err << "ttrace: note: " << note << "\n";
    if (!s.ok()) return DataError(err, s);
    if (!warning.empty()) err << "ttrace: warning: " << warning << "\n";
  }
  return kExitClean;
}

int RunCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace

std::string CheckOptionsProblem(const std::vector<std::string>& options) {
  std::vector<const char*> argv = {"ttrace", "check", "DIR"};
  for (const std::string& o : options) argv.push_back(o.c_str());
  Args args;
  return ParseArgs(static_cast<int>(argv.size()), argv.data(), true, &args);
}

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    return RunCommand(argc, argv, out, err);
  } catch (const std::bad_alloc&) {
    err << "ttrace: error: out of memory (the trace needs more memory than this machine gives; "
           "--memory-limit bounds what the checks hold)\n";
    return kExitError;
  }
}

namespace {

int RunCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  if (argc < 2) return UsageError(err, "missing command");
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    out << kUsage;
    return kExitClean;
  }
  if (cmd == "diff") return RunDiffCommand(argc, argv, out, err);
  if (cmd == "run") return RunRunCommand(argc, argv, out, err);
  if (cmd == "export") return RunExportCommand(argc, argv, out, err);
  if (cmd != "check" && cmd != "dump") return UsageError(err, absl::StrCat("unknown command '", cmd, "'"));
  Args args;
  std::string problem = ParseArgs(argc, argv, cmd == "check", &args);
  if (!problem.empty()) return UsageError(err, absl::StrCat(cmd, ": ", problem));
  return cmd == "check" ? Check(args, out, err) : Dump(args, out, err);
}

}  // namespace

}  // namespace ttrace::analyzer
