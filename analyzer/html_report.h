// The HTML report of `ttrace check --html FILE` and `ttrace diff --html FILE`: one self-contained page (inline CSS
// and SVG, no script, nothing fetched from the network) for a person looking at a job:
//   - the verdict as a coloured banner, and the summary lines of the terminal report (PrintReport) verbatim;
//   - for `ttrace diff`, the first divergent op, prominently;
//   - what is incomplete (the report's gaps);
//   - a rank x op heatmap: a row per rank (ranks grouped into rows beyond kMaxHeatmapRows), a column per range of
//     seqs, each cell coloured by the worst err/bound of its checked ops, or as a finding when one of its ops has one;
//   - a chart per rank of err/bound (log scale, the bound at 1) along seq, findings marked (a chart for every rank
//     with a finding, then the others in rank order, kMaxRankCharts in all); a rank decimated by the report's
//     timeline (report.h OpTimeline: the worst op of each bucket of 2^shift seqs) says so under its chart;
//   - the findings table with each one's evidence (worst errors, threshold, violations, the first violating element
//     with its index, row, column, batch, expected and got value; model, method and what the check assumed; what
//     ran before the op, when the trace recorded it: op_context.h), at most kMaxFindingRows rows;
//   - the ops not checked, counted by reason, with the ops the report names for each (report.h NameNotChecked);
//   - the warnings.
// Colours the screenshot test (tests/html_chromium_test.cc) looks for are the k*Colour constants below; each is
// used for that role only.
//
// Every string that comes from a trace (API names, messages, the directory and job names) is escaped: text, never
// markup; bytes that are not UTF-8 and control characters are shown as \xNN. The page is a function of the report
// alone (no time, no host name), so it is byte for byte the same at any --threads. Single-threaded.
#ifndef TTRACE_ANALYZER_HTML_REPORT_H_
#define TTRACE_ANALYZER_HTML_REPORT_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "analyzer/report.h"

namespace ttrace::analyzer {

inline constexpr size_t kMaxRankCharts = 64;
inline constexpr size_t kMaxHeatmapRows = 128;
inline constexpr size_t kMaxHeatmapColumns = 200;
inline constexpr size_t kMaxFindingRows = 500;

// Colours with one role each ("#rrggbb").
inline constexpr char kCleanBannerColour[] = "#1a7f37";
inline constexpr char kFindingsBannerColour[] = "#a40e26";
inline constexpr char kIncompleteBannerColour[] = "#9a6700";
inline constexpr char kHeatmapFrameColour[] = "#6e40c9";    // the heatmap's frame
inline constexpr char kFindingCellColour[] = "#d62728";     // a heatmap cell with a finding, a finding's marker
inline constexpr char kEmptyCellColour[] = "#eaeef2";       // a heatmap cell with no checked op

struct HtmlOptions {
  const Divergence* divergence = nullptr;  // `ttrace diff`'s first divergence (may be null)
  std::string mode;                        // `ttrace diff`'s mode ("bitwise", "sharded"); empty for check
};

// `s` as HTML text (also safe inside a double- or single-quoted attribute value).
std::string HtmlEscape(absl::string_view s);

std::string ReportToHtml(const CheckReport& report, const HtmlOptions& options = {});
// Writes ReportToHtml to `path` (replacing it); an error names the path.
absl::Status WriteReportHtml(const CheckReport& report, const std::string& path, const HtmlOptions& options = {});

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_HTML_REPORT_H_
