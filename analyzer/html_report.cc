// The page is generated whole on the server side, SVG included, so that it needs no script to be read (a report
// is often opened from a mail or an artefact store that blocks scripts) and its pixels are what the screenshot
// test checks. Charts share one x axis (seq 0 to the largest seq of any rank) so ranks line up; y is log10 of
// err/bound, clamped to [1e-6, the worst finite ratio rounded up to a decade, at least 10]; a ratio of 0 (an exact
// check that matched) sits on the floor as a hollow mark, +Inf on the ceiling as a triangle.
#include "analyzer/html_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ttrace::analyzer {

namespace {

constexpr double kPlotLeft = 70, kPlotWidth = 1000;
constexpr double kFloorLog = -6;

// Length of the UTF-8 sequence starting at s[i], or 0 when it is not a valid one.
size_t Utf8Length(absl::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  if (n == 2 && c < 0xc2) return 0;  // overlong
  return n;
}

std::string Num(double v) { return HtmlEscape(FormatNumber(v)); }

// A coordinate for SVG: fixed, short, locale-free.
std::string Px(double v) { return absl::StrFormat("%.1f", v); }

std::string OpLabel(int rank, uint64_t seq, absl::string_view api) {
  return absl::StrCat("rank ", rank, " seq ", seq, " ", api);
}

const char* BannerColour(Verdict v) {
  switch (v) {
    case Verdict::kClean: return kCleanBannerColour;
    case Verdict::kFindings: return kFindingsBannerColour;
    case Verdict::kIncomplete: return kIncompleteBannerColour;
  }
  return kIncompleteBannerColour;
}

// Heatmap colour of a cell whose worst clean ratio is `r` (no finding).
const char* CleanCellColour(double r) {
  if (!(r >= 1e-3)) return "#dafbe1";
  if (r < 1e-2) return "#aceebb";
  if (r < 1e-1) return "#6fdd8b";
  if (r < 0.5) return "#2da44e";
  return "#d4a72c";  // within the bound, but close to it
}

constexpr char kStyle[] = R"(<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;margin:0;background:#fff}
main{max-width:1160px;margin:0 auto;padding:0 16px 32px}
.banner{color:#fff;padding:14px 20px;font-size:22px;font-weight:600}
.banner small{font-size:14px;font-weight:400;opacity:.9;margin-left:12px}
h2{font-size:17px;margin:22px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
pre{background:#f6f8fa;padding:10px;overflow-x:auto;font:12px/1.45 ui-monospace,Menlo,Consolas,monospace;margin:8px 0}
table{border-collapse:collapse;font-size:12px;width:100%}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.msg td{border-top:none;color:#57606a}
.box{border:2px solid #a40e26;padding:8px 12px;margin:12px 0;background:#fff5f5}
.note{color:#57606a;font-size:12px;margin:2px 0 10px}
.legend span{display:inline-block;width:12px;height:12px;vertical-align:middle;margin:0 4px 0 12px;border:1px solid #d0d7de}
svg{display:block}
svg text{font:11px system-ui,sans-serif;fill:#57606a}
</style>
)";

class Writer {
 public:
  Writer(const CheckReport& report, const HtmlOptions& options) : report_(report), options_(options) {
    const auto& findings = report.findings();
    for (const auto& [rank, r] : report.timeline().ranks()) {
      ranks_.insert(rank);
      if (!r.buckets.empty()) max_seq_ = std::max(max_seq_, r.buckets.rbegin()->second.seq);
      for (const auto& [b, p] : r.buckets)
        if (std::isfinite(p.ratio)) max_ratio_ = std::max(max_ratio_, p.ratio);
    }
    for (const Finding& f : findings) {
      if (f.rank < 0) continue;
      ranks_.insert(f.rank);
      max_seq_ = std::max(max_seq_, f.seq);
      by_rank_[f.rank].push_back(&f);
    }
    ceil_log_ = std::max(1.0, std::ceil(std::log10(std::max(max_ratio_, 1.0))));
  }

  std::string Page() {
    const CheckSummary& s = report_.summary();
    const Verdict verdict = report_.verdict();
    out_ << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
         << HtmlEscape(absl::StrCat(s.title, " ", s.dir, ": ", VerdictName(verdict))) << "</title>\n"
         << kStyle << "</head><body>\n";
    out_ << "<div class=\"banner\" id=\"verdict\" style=\"background:" << BannerColour(verdict) << "\">"
         << VerdictHeadline(verdict) << "<small>" << HtmlEscape(absl::StrCat(s.title, " ", s.dir)) << "</small></div>\n";
    out_ << "<main>\n";
    Summary();
    DivergenceBox();
    Gaps();
    Heatmap();
    Timelines();
    Findings();
    NotChecked();
    Warnings();
    out_ << "<p class=\"note\">Written by ttrace; this page is self-contained (no script, nothing loaded from the "
            "network).</p>\n</main></body></html>\n";
    return out_.str();
  }

 private:
  std::string VerdictHeadline(Verdict v) const {
    switch (v) {
      case Verdict::kFindings:
        return absl::StrCat("FINDINGS (", report_.findings().size(), ")");
      case Verdict::kIncomplete: return "INCOMPLETE (evidence missing)";
      case Verdict::kClean: return "CLEAN (every op checked)";
    }
    return "";
  }

  // The summary lines of the terminal report: everything before its first blank line.
  void Summary() {
    std::ostringstream terminal;
    PrintReport(report_, terminal, 0);
    std::string text = terminal.str();
    const size_t blank = text.find("\n\n");
    if (blank != std::string::npos) text.resize(blank + 1);
    if (!options_.mode.empty()) text = absl::StrCat("mode:        ", options_.mode, "\n", text);
    out_ << "<pre id=\"summary\">" << HtmlEscape(text) << "</pre>\n";
  }

  void DivergenceBox() {
    const analyzer::Divergence* d = options_.divergence;
    if (d == nullptr) return;
    out_ << "<h2>First divergence</h2>\n";
    if (!d->valid) {
      out_ << "<p>None: every compared op matched the reference.</p>\n";
      return;
    }
    out_ << "<div class=\"box\" id=\"divergence\"><b>" << HtmlEscape(d->kind) << " "
         << HtmlEscape(OpLabel(d->op.rank, d->op.seq, d->op.api)) << "</b> (reference seq " << d->ref_seq
         << "), operand " << HtmlEscape(d->operand) << "<br>model " << HtmlEscape(d->model);
    if (d->model != "bitwise")
      out_ << ": error " << Num(d->err_eps) << " eps, " << Num(d->ratio) << " x the threshold " << Num(d->threshold);
    if (d->kind == "between") {
      out_ << "<br>last matching op: "
           << (d->has_last_matching ? HtmlEscape(OpLabel(d->last_matching.rank, d->last_matching.seq,
                                                         d->last_matching.api))
                                    : std::string("none (the first compared op already differs)"))
           << "; code between the two ops changed the data";
    }
    out_ << "</div>\n";
  }

  void Gaps() {
    const auto& gaps = report_.summary().gaps;
    if (gaps.empty()) return;
    out_ << "<h2>" << (report_.verdict() == Verdict::kIncomplete ? "Incomplete" : "Also incomplete") << "</h2>\n<ul>";
    for (const std::string& g : gaps) out_ << "<li>" << HtmlEscape(g) << "</li>";
    out_ << "</ul>\n";
  }

  // Each seq owns an equal slot of the x axis; an op is drawn at its slot's centre, a heatmap column spans its seqs'
  // slots, so charts and heatmap line up.
  double Edge(uint64_t seq) const {
    return kPlotLeft + kPlotWidth * static_cast<double>(seq) / (static_cast<double>(max_seq_) + 1);
  }
  double X(uint64_t seq) const { return (Edge(seq) + Edge(seq + 1)) / 2; }

  // Ticks at multiples of a round step (1, 2 or 5 times a power of ten), at most 6 besides 0.
  void SeqAxis(double y) {
    uint64_t step = 1;
    for (uint64_t decade = 1; max_seq_ / step > 6; decade *= 10) {
      for (uint64_t m : {1, 2, 5}) {
        step = m * decade;
        if (max_seq_ / step <= 6) break;
      }
    }
    for (uint64_t seq = 0; seq <= max_seq_; seq += step)
      out_ << "<text x=\"" << Px(X(seq)) << "\" y=\"" << Px(y) << "\" text-anchor=\"middle\">" << FormatCount(seq)
           << "</text>";
  }

  void Heatmap() {
    out_ << "<h2>Findings by rank and op</h2>\n";
    if (ranks_.empty()) {
      out_ << "<p>No op was checked.</p>\n";
      return;
    }
    const std::vector<int> ranks(ranks_.begin(), ranks_.end());
    const size_t per_row = (ranks.size() + kMaxHeatmapRows - 1) / kMaxHeatmapRows;
    const size_t rows = (ranks.size() + per_row - 1) / per_row;
    const uint64_t columns = std::min<uint64_t>(max_seq_ + 1, kMaxHeatmapColumns);
    const uint64_t width = (max_seq_ + 1 + columns - 1) / columns;  // seqs per column
    const double row_h = std::max(3.0, std::min(22.0, 360.0 / rows));
    const double top = 4, height = top + rows * row_h + 24;
    const size_t label_every = static_cast<size_t>(std::ceil(12 / row_h));  // labels 12 px apart at least
    // Per cell: worst clean ratio (or -1: no op), findings.
    std::vector<double> worst(rows * columns, -1);
    std::vector<uint32_t> found(rows * columns, 0);
    std::map<int, size_t> row_of;
    for (size_t i = 0; i < ranks.size(); ++i) row_of[ranks[i]] = i / per_row;
    for (const auto& [rank, r] : report_.timeline().ranks())
      for (const auto& [b, p] : r.buckets) {
        double& w = worst[row_of[rank] * columns + p.seq / width];
        w = std::max(w, std::isnan(p.ratio) ? HUGE_VAL : p.ratio);
      }
    for (const Finding& f : report_.findings())
      if (f.rank >= 0) ++found[row_of[f.rank] * columns + f.seq / width];
    out_ << "<svg id=\"heatmap\" width=\"1120\" height=\"" << Px(height) << "\" role=\"img\">";
    for (size_t row = 0; row < rows; ++row) {
      const double y = top + row * row_h;
      if (row % label_every == 0) {
        const int first = ranks[row * per_row], last = ranks[std::min(ranks.size(), (row + 1) * per_row) - 1];
        out_ << "<text x=\"" << Px(kPlotLeft - 6) << "\" y=\"" << Px(y + row_h / 2 + 4) << "\" text-anchor=\"end\">"
             << (first == last ? absl::StrCat("rank ", first) : absl::StrCat("ranks ", first, "-", last)) << "</text>";
      }
      for (uint64_t c = 0; c < columns; ++c) {
        const size_t cell = row * columns + c;
        const char* fill = found[cell] > 0 ? kFindingCellColour
                           : worst[cell] < 0 ? kEmptyCellColour
                           : worst[cell] > 1 ? kFindingCellColour
                                             : CleanCellColour(worst[cell]);
        const double x0 = Edge(c * width), x1 = Edge(std::min(max_seq_ + 1, (c + 1) * width));
        out_ << "<rect x=\"" << Px(x0) << "\" y=\"" << Px(y) << "\" width=\"" << Px(x1 - x0)
             << "\" height=\"" << Px(row_h) << "\" fill=\"" << fill << "\"><title>seq " << c * width;
        if (width > 1) out_ << "-" << std::min(max_seq_, (c + 1) * width - 1);
        out_ << ": " << (found[cell] > 0 ? absl::StrCat(found[cell], found[cell] == 1 ? " finding" : " findings")
                         : worst[cell] < 0 ? std::string("no checked op")
                                           : absl::StrCat("worst err/bound ", FormatNumber(worst[cell])))
             << "</title></rect>";
      }
    }
    out_ << "<rect x=\"" << Px(kPlotLeft - 1) << "\" y=\"" << Px(top - 1) << "\" width=\"" << Px(kPlotWidth + 2)
         << "\" height=\"" << Px(rows * row_h + 2) << "\" fill=\"none\" stroke=\"" << kHeatmapFrameColour
         << "\" stroke-width=\"2\"/>";
    SeqAxis(top + rows * row_h + 16);
    out_ << "</svg>\n<div class=\"note legend\">x: seq";
    if (width > 1) out_ << " (" << width << " per column)";
    if (per_row > 1) out_ << ", " << per_row << " ranks per row";
    out_ << ". <span style=\"background:" << kFindingCellColour << "\"></span>finding"
         << "<span style=\"background:#dafbe1\"></span>err/bound &lt; 1e-3"
         << "<span style=\"background:#6fdd8b\"></span>&lt; 0.1"
         << "<span style=\"background:#2da44e\"></span>&lt; 0.5"
         << "<span style=\"background:#d4a72c\"></span>0.5-1"
         << "<span style=\"background:" << kEmptyCellColour << "\"></span>no checked op</div>\n";
  }

  double Y(double ratio, double top, double h) const {
    const double l = ratio > 0 ? std::clamp(std::log10(ratio), kFloorLog, ceil_log_) : kFloorLog;
    return top + h * (ceil_log_ - l) / (ceil_log_ - kFloorLog);
  }

  void Chart(int rank) {
    const double top = 8, h = 110, height = top + h + 22;
    out_ << "<h3 style=\"font-size:13px;margin:10px 0 2px\">rank " << rank << "</h3>\n";
    out_ << "<svg class=\"timeline\" width=\"1120\" height=\"" << Px(height) << "\" role=\"img\">";
    out_ << "<rect x=\"" << Px(kPlotLeft) << "\" y=\"" << Px(top) << "\" width=\"" << Px(kPlotWidth) << "\" height=\""
         << Px(h) << "\" fill=\"#fbfcfd\" stroke=\"#d0d7de\"/>";
    for (int d = static_cast<int>(kFloorLog); d <= static_cast<int>(ceil_log_); d += 2) {
      const double y = Y(std::pow(10.0, d), top, h);
      out_ << "<line x1=\"" << Px(kPlotLeft) << "\" x2=\"" << Px(kPlotLeft + kPlotWidth) << "\" y1=\"" << Px(y)
           << "\" y2=\"" << Px(y) << "\" stroke=\"#eaeef2\"/><text x=\"" << Px(kPlotLeft - 6) << "\" y=\""
           << Px(y + 4) << "\" text-anchor=\"end\">1e" << d << "</text>";
    }
    const double bound_y = Y(1, top, h);
    out_ << "<line x1=\"" << Px(kPlotLeft) << "\" x2=\"" << Px(kPlotLeft + kPlotWidth) << "\" y1=\"" << Px(bound_y)
         << "\" y2=\"" << Px(bound_y) << "\" stroke=\"#57606a\" stroke-dasharray=\"4 3\"/><text x=\""
         << Px(kPlotLeft + kPlotWidth + 4) << "\" y=\"" << Px(bound_y + 4) << "\">bound</text>";
    auto f = by_rank_.find(rank);
    if (f != by_rank_.end()) {
      for (size_t i = 0; i < f->second.size() && i < 200; ++i) {
        const Finding& g = *f->second[i];
        out_ << "<line x1=\"" << Px(X(g.seq)) << "\" x2=\"" << Px(X(g.seq)) << "\" y1=\"" << Px(top) << "\" y2=\""
             << Px(top + h) << "\" stroke=\"" << kFindingCellColour << "\" stroke-width=\"2\" opacity=\"0.6\"><title>"
             << HtmlEscape(absl::StrCat(OpLabel(g.rank, g.seq, g.api), " [", g.check, "]: ", g.message))
             << "</title></line>";
      }
    }
    const OpTimeline::Rank* r = nullptr;
    auto it = report_.timeline().ranks().find(rank);
    if (it != report_.timeline().ranks().end()) r = &it->second;
    if (r != nullptr) {
      for (const auto& [b, p] : r->buckets) {
        const double x = X(p.seq), y = Y(p.ratio, top, h);
        std::string title = absl::StrCat(OpLabel(rank, p.seq, p.api), " (", p.kind, "): err/bound ",
                                         FormatNumber(p.ratio));
        if (p.ops > 1)
          absl::StrAppend(&title, ", the worst of ", p.ops, " ops in seq ", b << r->shift, "-",
                          ((b + 1) << r->shift) - 1);
        const bool bad = !p.clean || !(p.ratio <= 1);
        if (bad && !std::isfinite(p.ratio)) {
          out_ << "<path d=\"M" << Px(x - 4) << " " << Px(top + 7) << "L" << Px(x) << " " << Px(top) << "L" << Px(x + 4)
               << " " << Px(top + 7) << "Z\" fill=\"" << kFindingCellColour << "\">";
        } else if (bad) {
          out_ << "<circle cx=\"" << Px(x) << "\" cy=\"" << Px(y) << "\" r=\"3.5\" fill=\"" << kFindingCellColour
               << "\">";
        } else if (p.ratio > 0) {
          out_ << "<circle cx=\"" << Px(x) << "\" cy=\"" << Px(y) << "\" r=\"2\" fill=\"#0969da\">";
        } else {
          out_ << "<circle cx=\"" << Px(x) << "\" cy=\"" << Px(y - 2) << "\" r=\"2\" fill=\"none\" stroke=\"#8c959f\">";
        }
        out_ << "<title>" << HtmlEscape(title) << "</title>" << (bad && !std::isfinite(p.ratio) ? "</path>" : "</circle>");
      }
    }
    SeqAxis(top + h + 16);
    out_ << "</svg>\n<div class=\"note\">";
    if (r == nullptr) {
      out_ << "no checked op";
    } else {
      out_ << FormatCount(r->ops) << " checked ops";
      if (r->shift > 0)
        out_ << "; decimated to " << FormatCount(r->buckets.size()) << " points, the worst op of every "
             << FormatCount(uint64_t{1} << r->shift) << " consecutive seqs";
    }
    if (f != by_rank_.end()) out_ << "; " << f->second.size() << (f->second.size() == 1 ? " finding" : " findings");
    out_ << "</div>\n";
  }

  void Timelines() {
    if (ranks_.empty()) return;
    out_ << "<h2>Error over bound along each rank's ops</h2>\n<div class=\"note\">y: worst |got - expected| / bound "
            "of each checked op (log scale; 1 is the bound; hollow marks on the floor: exact checks that matched); "
            "x: seq; red: findings.</div>\n";
    std::vector<int> shown;
    for (const auto& [rank, list] : by_rank_)
      if (shown.size() < kMaxRankCharts) shown.push_back(rank);
    for (int rank : ranks_)
      if (shown.size() < kMaxRankCharts && by_rank_.count(rank) == 0) shown.push_back(rank);
    std::sort(shown.begin(), shown.end());
    for (int rank : shown) Chart(rank);
    if (ranks_.size() > shown.size())
      out_ << "<p class=\"note\">" << ranks_.size() - shown.size() << " more ranks without findings not charted.</p>\n";
  }

  void Findings() {
    const auto& findings = report_.findings();
    out_ << "<h2>Findings (" << findings.size() << ")</h2>\n";
    if (findings.empty()) {
      out_ << "<p>None.</p>\n";
      return;
    }
    out_ << "<table id=\"findings\"><tr><th>rank</th><th>seq</th><th>api</th><th>check</th><th>err/bound</th>"
            "<th>max abs err</th><th>max rel err</th><th>threshold</th><th>violations</th>"
            "<th>first violation</th><th>model</th><th>method</th></tr>\n";
    for (size_t i = 0; i < findings.size() && i < kMaxFindingRows; ++i) {
      const Finding& f = findings[i];
      out_ << "<tr class=\"finding\"><td class=\"n\">" << f.rank << "</td><td class=\"n\">" << f.seq << "</td><td>"
           << HtmlEscape(f.api) << "</td><td>" << HtmlEscape(f.check) << "</td><td class=\"n\">" << Num(f.ratio)
           << "</td><td class=\"n\">" << Num(f.max_abs_err) << "</td><td class=\"n\">" << Num(f.max_rel_err)
           << "</td><td class=\"n\">" << Num(f.threshold) << "</td><td class=\"n\">" << FormatCount(f.violations)
           << " of " << FormatCount(f.elements) << "</td><td>";
      if (f.has_element) {
        out_ << "element " << f.first.index << " (row " << f.first.row << ", col " << f.first.col << ", batch "
             << f.first.batch << "): expected " << Num(f.first.expected) << ", got " << Num(f.first.got)
             << ", threshold " << Num(f.first.threshold);
      } else {
        out_ << "&mdash;";
      }
      out_ << "</td><td>" << HtmlEscape(f.model) << "</td><td>" << HtmlEscape(f.method) << "</td></tr>\n";
      out_ << "<tr class=\"msg\"><td colspan=\"12\">" << HtmlEscape(f.message);
      if (!f.detail.empty()) out_ << "<br>" << HtmlEscape(f.detail);
      if (f.context.valid) out_ << "<br>context: " << HtmlEscape(ContextText(f.context));
      out_ << "</td></tr>\n";
    }
    out_ << "</table>\n";
    if (findings.size() > kMaxFindingRows)
      out_ << "<p class=\"note\">" << findings.size() - kMaxFindingRows << " more findings: see --json.</p>\n";
  }

  void NotChecked() {
    const CheckSummary& s = report_.summary();
    out_ << "<h2>Not checked (" << FormatCount(s.not_checked_total()) << " of " << FormatCount(s.ops)
         << " ops)</h2>\n";
    if (s.not_checked.empty()) {
      out_ << "<p>Every op was checked.</p>\n";
      return;
    }
    out_ << "<table id=\"not-checked\"><tr><th>reason</th><th>ops</th><th>which</th></tr>\n";
    for (const auto& [reason, n] : s.not_checked) {
      out_ << "<tr><td>" << HtmlEscape(reason) << "</td><td class=\"n\">" << FormatCount(n) << "</td><td>";
      auto named = s.not_checked_ops.find(reason);
      uint64_t shown = 0;
      if (named != s.not_checked_ops.end()) {
        for (const OpName& op : named->second) {
          out_ << (shown++ > 0 ? "; " : "") << HtmlEscape(OpLabel(op.rank, op.seq, op.api));
        }
      }
      if (n > shown) out_ << (shown > 0 ? "; and " : "") << FormatCount(n - shown) << (shown > 0 ? " more" : " unnamed");
      out_ << "</td></tr>\n";
    }
    out_ << "</table>\n";
  }

  void Warnings() {
    const CheckSummary& s = report_.summary();
    if (s.warnings.empty()) return;
    out_ << "<h2>Warnings</h2>\n<ul>";
    for (const std::string& w : s.warnings) out_ << "<li>" << HtmlEscape(w) << "</li>";
    if (s.warnings_suppressed > 0) out_ << "<li>" << s.warnings_suppressed << " more warnings suppressed</li>";
    out_ << "</ul>\n";
  }

  const CheckReport& report_;
  const HtmlOptions& options_;
  std::ostringstream out_;
  std::set<int> ranks_;
  std::map<int, std::vector<const Finding*>> by_rank_;
  uint64_t max_seq_ = 0;
  double max_ratio_ = 0;
  double ceil_log_ = 1;
};

}  // namespace

std::string HtmlEscape(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
      default: break;
    }
    const size_t n = Utf8Length(s, i);
    const unsigned char u = static_cast<unsigned char>(c);
    if (n == 0 || (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", u));
      ++i;
      continue;
    }
    out.append(s.data() + i, n);
    i += n;
  }
  return out;
}

std::string ReportToHtml(const CheckReport& report, const HtmlOptions& options) {
  return Writer(report, options).Page();
}

absl::Status WriteReportHtml(const CheckReport& report, const std::string& path, const HtmlOptions& options) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f << ReportToHtml(report, options);
  f.close();
  if (!f) return absl::UnavailableError(absl::StrCat(path, ": cannot write the HTML report"));
  return absl::OkStatus();
}

}  // namespace ttrace::analyzer
