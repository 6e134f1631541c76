// Kept beside cli.cc rather than in it so the diff command's flags live with the diff library.
#include "analyzer/diff_cli.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analyzer/cli.h"
#include "analyzer/diff.h"
#include "analyzer/html_report.h"

namespace ttrace::analyzer {

namespace {

int Usage(std::ostream& err, const std::string& message) {
  err << "ttrace: diff: " << message << "\nusage:\n" << TTRACE_DIFF_USAGE;
  return kExitError;
}

int Error(std::ostream& err, const absl::Status& s) {
  err << "ttrace: error: " << s.message() << "\n";
  return kExitError;
}

}  // namespace

int RunDiffCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string> dirs;
  std::string json, html, mapping, calibrate;
  bool allow_incomplete = false;
  DiffOptions options;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" || a == "--html" || a == "--mapping" || a == "--max-gap" || a == "--calibrate" ||
        a == "--calibration-multiple") {
      if (i + 1 >= argc) return Usage(err, a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--json") json = v;
      else if (a == "--html") html = v;
      else if (a == "--mapping") mapping = v;
      else if (a == "--calibrate") calibrate = v;
      else if (a == "--calibration-multiple") {
        if (!absl::SimpleAtod(v, &options.calibration_multiple) || !(options.calibration_multiple > 0))
          return Usage(err, "--calibration-multiple needs a positive number");
      }
      else if (!absl::SimpleAtoi(v, &options.max_gap) || options.max_gap < 0)
        return Usage(err, "--max-gap needs a non-negative integer");
    } else if (a == "--allow-incomplete") {
      allow_incomplete = true;
    } else if (!a.empty() && a[0] == '-') {
      return Usage(err, "unknown option '" + a + "'");
    } else {
      dirs.push_back(a);
    }
  }
  if (dirs.size() != 2) return Usage(err, "needs REF_DIR and CAND_DIR");
  if (!mapping.empty()) {
    absl::StatusOr<SplitMapping> m = ReadSplitMapping(mapping);
    if (!m.ok()) return Error(err, m.status());
    options.mapping = std::move(*m);
  }
  LoadOptions lo;
  lo.allow_truncated = true;
  absl::StatusOr<TraceSet> ref = LoadTraceDir(dirs[0], lo);
  if (!ref.ok()) return Error(err, ref.status());
  absl::StatusOr<TraceSet> cand = LoadTraceDir(dirs[1], lo);
  if (!cand.ok()) return Error(err, cand.status());
  Calibration calibration;
  if (!calibrate.empty()) {
    absl::StatusOr<TraceSet> clean = LoadTraceDir(calibrate, lo);
    if (!clean.ok()) return Error(err, clean.status());
    absl::StatusOr<Calibration> c = MeasureCalibration(*ref, *clean, options.max_gap);
    if (!c.ok()) return Error(err, c.status());
    calibration = std::move(*c);
    options.calibration = &calibration;
  }
  const DiffResult result = RunDiff(*ref, *cand, options);
  PrintDiff(result, out);
  if (!json.empty()) {
    std::ofstream f(json, std::ios::trunc);
    f << DiffToJson(result);
    if (!f.good()) return Error(err, absl::UnavailableError(absl::StrCat(json, ": cannot write the JSON report")));
  }
  if (!html.empty()) {
    HtmlOptions ho;
    ho.divergence = &result.first;
    ho.mode = result.mode;
    absl::Status s = WriteReportHtml(result.report, html, ho);
    if (!s.ok()) return Error(err, s);
  }
  switch (result.report.verdict()) {
    case Verdict::kClean: return kExitClean;
    case Verdict::kFindings: return kExitFindings;
    case Verdict::kIncomplete: break;
  }
  if (allow_incomplete) {
    err << "ttrace: the verdict is incomplete; accepted (--allow-incomplete)\n";
    return kExitClean;
  }
  return kExitIncomplete;
}

}  // namespace ttrace::analyzer
