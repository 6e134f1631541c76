// JSON output of `ttrace check` (DESIGN.md §4, README.md): the contract scripts rely on.
//
//   {"verdict": "clean"|"findings",
//    "findings": [{"check", "rank", "seq", "api", "message", "max_abs_err", "max_rel_err", "threshold",
//                  "ratio", "model", "elements", "violations", "first_violation": {...}|null, "detail"}, ...],
//    "first_divergence": null | {"seq", "rank", "api", "operand", "kind": "inside"|"between", "ref_seq",
//                                "err_eps", "ratio", "threshold", "model",
//                                "last_matching": {"seq", "rank", "api"}|null},
//    "summary": {...}}
// `ttrace diff` adds "mode" after "verdict" and fills "first_divergence" (docs/diff.md).
//
// Each finding is written on one line with "rank" and "seq" adjacent, so line tools can grep a finding by
// `"rank": R, "seq": S,`. Non-finite numbers are written as null (JSON has no Inf/NaN). Numbers round-trip
// (%.17g). Single-threaded.
#ifndef TTRACE_ANALYZER_JSON_H_
#define TTRACE_ANALYZER_JSON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "analyzer/report.h"

namespace ttrace::analyzer {

// A JSON string literal (quotes included) for UTF-8 text; control characters and invalid bytes are escaped as
// \u00XX so the output is always valid JSON.
std::string JsonString(absl::string_view s);
// A JSON number, or null for Inf/NaN.
std::string JsonNumber(double v);

// `divergence` (may be null: "first_divergence": null) and `mode` (empty: not written) are `ttrace diff`'s.
std::string ReportToJson(const CheckReport& report, const Divergence* divergence = nullptr,
                         absl::string_view mode = {});
// Writes ReportToJson to `path` (replacing it); an error names the path.
absl::Status WriteReportJson(const CheckReport& report, const std::string& path);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_JSON_H_
