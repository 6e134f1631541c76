// The HTML report: parsed by a strict little HTML parser (every element closed in order, attributes quoted, no raw
// '<' or '>' in text, only the entities the writer uses), every finding with its evidence in the findings table,
// trace strings as text (a <script> in an API name or message stays text), the not-checked ops by reason and name,
// the heatmap's cells, the timeline's decimation (bounded, order-independent, the worst op kept) and its note, the
// first divergence of `ttrace diff`, and `ttrace check --html` end to end.
#include "analyzer/html_report.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/cli.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

struct Node {
  std::string tag;  // empty: a text node
  std::map<std::string, std::string> attrs;
  std::string text;
  std::vector<std::unique_ptr<Node>> children;

  std::string AllText() const {
    std::string s = text;
    for (const auto& c : children) s += c->AllText();
    return s;
  }
  void Find(const std::string& tag_name, std::vector<const Node*>* out) const {
    if (tag == tag_name) out->push_back(this);
    for (const auto& c : children) c->Find(tag_name, out);
  }
  const Node* ById(const std::string& id) const {
    auto it = attrs.find("id");
    if (it != attrs.end() && it->second == id) return this;
    for (const auto& c : children)
      if (const Node* n = c->ById(id)) return n;
    return nullptr;
  }
};

// Decodes the entities the writer uses; false on any other.
bool Decode(const std::string& s, std::string* out) {
  static const std::map<std::string, std::string> kEntities = {
      {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"#39", "'"}, {"mdash", "\xe2\x80\x94"}};
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '>' || s[i] == '<') return false;
    if (s[i] != '&') {
      out->push_back(s[i]);
      continue;
    }
    const size_t semi = s.find(';', i);
    if (semi == std::string::npos) return false;
    auto it = kEntities.find(s.substr(i + 1, semi - i - 1));
    if (it == kEntities.end()) return false;
    *out += it->second;
    i = semi;
  }
  return true;
}

// Parses the page; returns the root (children: <html>) or an error in `error`.
std::unique_ptr<Node> Parse(const std::string& html, std::string* error) {
  auto root = std::make_unique<Node>();
  root->tag = "#root";
  std::vector<Node*> open = {root.get()};
  size_t i = 0;
  if (html.rfind("<!DOCTYPE html>\n", 0) != 0) return *error = "no doctype", nullptr;
  i = 16;
  while (i < html.size()) {
    if (html[i] != '<') {
      const size_t end = html.find('<', i);
      auto text = std::make_unique<Node>();
      if (!Decode(html.substr(i, end - i), &text->text)) return *error = "bad text at " + std::to_string(i), nullptr;
      open.back()->children.push_back(std::move(text));
      i = end == std::string::npos ? html.size() : end;
      continue;
    }
    const size_t close = html.find('>', i);
    if (close == std::string::npos) return *error = "unclosed tag", nullptr;
    std::string inside = html.substr(i + 1, close - i - 1);
    i = close + 1;
    if (!inside.empty() && inside[0] == '/') {
      if (open.size() < 2 || open.back()->tag != inside.substr(1))
        return *error = "</" + inside.substr(1) + "> closes <" + open.back()->tag + ">", nullptr;
      open.pop_back();
      continue;
    }
    const bool self_closing = !inside.empty() && inside.back() == '/';
    if (self_closing) inside.pop_back();
    auto node = std::make_unique<Node>();
    size_t p = 0;
    while (p < inside.size() && inside[p] != ' ') node->tag.push_back(inside[p++]);
    if (node->tag.empty() || !std::isalpha(static_cast<unsigned char>(node->tag[0])))
      return *error = "bad tag '" + inside + "'", nullptr;
    while (p < inside.size()) {
      while (p < inside.size() && inside[p] == ' ') ++p;
      if (p >= inside.size()) break;
      const size_t eq = inside.find("=\"", p);
      if (eq == std::string::npos) return *error = "unquoted attribute in <" + inside + ">", nullptr;
      const size_t end = inside.find('"', eq + 2);
      if (end == std::string::npos) return *error = "unterminated attribute", nullptr;
      std::string value;
      if (!Decode(inside.substr(eq + 2, end - eq - 2), &value)) return *error = "bad attribute value", nullptr;
      node->attrs[inside.substr(p, eq - p)] = value;
      p = end + 1;
    }
    Node* raw = node.get();
    open.back()->children.push_back(std::move(node));
    if (raw->tag == "style") {  // raw text up to </style>
      const size_t end = html.find("</style>", i);
      if (end == std::string::npos) return *error = "unclosed style", nullptr;
      i = end + 8;
    } else if (!self_closing && raw->tag != "meta" && raw->tag != "br") {
      open.push_back(raw);
    }
  }
  if (open.size() != 1) return *error = "<" + open.back()->tag + "> never closed", nullptr;
  return root;
}

std::unique_ptr<Node> MustParse(const std::string& html) {
  std::string error;
  std::unique_ptr<Node> root = Parse(html, &error);
  EXPECT_NE(root, nullptr) << error;
  return root;
}

ElementStats Stats(double ratio, uint64_t elements = 100) {
  ElementStats s;
  s.elements = elements;
  s.worst_ratio = ratio;
  return s;
}

// Two ranks of GEMMs and all-reduces, two findings (one with a hostile API name), ops not checked, a gap.
CheckReport SyntheticReport() {
  CheckReport report;
  CheckSummary& s = report.summary();
  s.dir = "/traces/job<1>";
  s.job = "job<1>";
  s.world_size = 2;
  s.streams = 2;
  s.ops = 26;
  for (int rank = 0; rank < 2; ++rank)
    for (uint64_t seq = 0; seq < 10; ++seq) {
      const bool bad = rank == 1 && seq == 7;
      report.AddChecked(seq % 5 == 4 ? "allreduce" : "gemm",
                        OpName{rank, seq, seq % 5 == 4 ? "ncclAllReduce" : "cublasGemmEx"},
                        Stats(bad ? 3e4 : 0.001 * (seq + 1)), !bad);
    }
  Finding f;
  f.check = "gemm.replay";
  f.rank = 1;
  f.seq = 7;
  f.api = "cublasGemmEx";
  f.message = "rank 1 seq 7: 1 of 100 elements over the bound";
  f.model = "gemm.deterministic";
  f.method = "full";
  f.max_abs_err = 0.5;
  f.max_rel_err = 0.25;
  f.threshold = 1.5e-5;
  f.ratio = 3e4;
  f.elements = 100;
  f.violations = 1;
  f.has_element = true;
  f.first = ElementDetail{37, 5, 3, 0, 2.5, 2.0, 1.5e-5};
  f.detail = "FP32 accumulation, k = 64";
  report.AddFinding(f);
  Finding g;
  g.check = "replica.identical";
  g.rank = 0;
  g.seq = 12;
  g.api = "<script>alert(1)</script>";
  g.message = "operand A differs from ranks {1} & the majority <b>";
  g.model = "exact";
  report.AddFinding(g);
  report.AddNotChecked("tensors dropped (ring full)", 3);
  report.NameNotChecked("tensors dropped (ring full)", OpName{0, 11, "cublasSgemm"});
  report.NameNotChecked("tensors dropped (ring full)", OpName{1, 11, "cublasSgemm"});
  report.AddNotChecked("no error model", 1);
  report.Warn("rank 0: the capture dropped 3 tensors");
  report.Finish();
  return report;
}

TEST(HtmlReportTest, ParsesAndShowsEveryFindingWithItsEvidence) {
  const CheckReport report = SyntheticReport();
  const std::string html = ReportToHtml(report);
  auto root = MustParse(html);
  ASSERT_NE(root, nullptr);
  // Self-contained: nothing refers outside the page, no script.
  for (const char* bad : {"<script", "src=", "href=", "url(", "@import", "<link", "http"})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;

  const Node* banner = root->ById("verdict");
  ASSERT_NE(banner, nullptr);
  EXPECT_NE(banner->AllText().find("FINDINGS (2)"), std::string::npos);
  EXPECT_NE(banner->attrs.at("style").find(kFindingsBannerColour), std::string::npos);
  const Node* summary = root->ById("summary");
  ASSERT_NE(summary, nullptr);
  std::ostringstream terminal;
  PrintReport(report, terminal, 0);
  const std::string t = terminal.str();
  EXPECT_EQ(summary->AllText(), t.substr(0, t.find("\n\n") + 1));  // the terminal's summary, verbatim

  const Node* table = root->ById("findings");
  ASSERT_NE(table, nullptr);
  std::vector<const Node*> rows;
  table->Find("tr", &rows);
  ASSERT_EQ(rows.size(), 1 + 2 * report.findings().size());
  for (size_t i = 0; i < report.findings().size(); ++i) {
    const Finding& f = report.findings()[i];
    std::vector<const Node*> cells;
    rows[1 + 2 * i]->Find("td", &cells);
    ASSERT_EQ(cells.size(), 12u);
    EXPECT_EQ(cells[0]->AllText(), std::to_string(f.rank));
    EXPECT_EQ(cells[1]->AllText(), std::to_string(f.seq));
    EXPECT_EQ(cells[2]->AllText(), f.api);  // the <script> name, as text
    EXPECT_EQ(cells[3]->AllText(), f.check);
    EXPECT_EQ(cells[4]->AllText(), FormatNumber(f.ratio));
    EXPECT_EQ(cells[7]->AllText(), FormatNumber(f.threshold));
    EXPECT_EQ(cells[10]->AllText(), f.model);
    EXPECT_EQ(cells[11]->AllText(), f.method);
    EXPECT_NE(rows[2 + 2 * i]->AllText().find(f.message), std::string::npos);
  }
  // Findings are ordered by seq: the GEMM (seq 7) first, with its first violating element.
  std::vector<const Node*> cells;
  rows[1]->Find("td", &cells);
  EXPECT_EQ(cells[9]->AllText(), "element 37 (row 5, col 3, batch 0): expected 2, got 2.5, threshold 1.5e-05");
  EXPECT_NE(rows[2]->AllText().find("FP32 accumulation, k = 64"), std::string::npos);

  const Node* not_checked = root->ById("not-checked");
  ASSERT_NE(not_checked, nullptr);
  const std::string nc = not_checked->AllText();
  EXPECT_NE(nc.find("tensors dropped (ring full)3rank 0 seq 11 cublasSgemm; rank 1 seq 11 cublasSgemm; and 1 more"),
            std::string::npos) << nc;
  EXPECT_NE(nc.find("no error model11 unnamed"), std::string::npos) << nc;
  EXPECT_NE(root->AllText().find("rank 0: the capture dropped 3 tensors"), std::string::npos);
  EXPECT_NE(root->AllText().find("4 of 26 ops not checked"), std::string::npos);  // the gap
}

TEST(HtmlReportTest, HeatmapMarksTheCellsOfFindingsOnly) {
  const CheckReport report = SyntheticReport();
  auto root = MustParse(ReportToHtml(report));
  ASSERT_NE(root, nullptr);
  const Node* heatmap = root->ById("heatmap");
  ASSERT_NE(heatmap, nullptr);
  std::vector<const Node*> rects;
  heatmap->Find("rect", &rects);
  ASSERT_EQ(rects.size(), 2 * 13 + 1u);  // 2 ranks x seq 0..12, and the frame
  std::vector<std::string> red;
  for (const Node* r : rects)
    if (r->attrs.at("fill") == kFindingCellColour) red.push_back(r->AllText());
  EXPECT_EQ(red, (std::vector<std::string>{"seq 12: 1 finding", "seq 7: 1 finding"}));
  EXPECT_EQ(rects.back()->attrs.at("stroke"), kHeatmapFrameColour);
  // Rank 0's seq 10 and 11 have no checked op.
  EXPECT_EQ(rects[10]->attrs.at("fill"), kEmptyCellColour);
  EXPECT_EQ(rects[10]->AllText(), "seq 10: no checked op");
  EXPECT_EQ(rects[3]->AllText(), "seq 3: worst err/bound 0.004");

  // Row labels, and seq ticks at a round step.
  std::vector<const Node*> texts;
  heatmap->Find("text", &texts);
  std::vector<std::string> labels;
  for (const Node* t : texts) labels.push_back(t->AllText());
  EXPECT_EQ(labels, (std::vector<std::string>{"rank 0", "rank 1", "0", "2", "4", "6", "8", "10", "12"}));

  // One chart per rank, with the finding's marker.
  std::vector<const Node*> svgs;
  root->Find("svg", &svgs);
  ASSERT_EQ(svgs.size(), 3u);
  std::vector<const Node*> lines;
  svgs[2]->Find("line", &lines);
  bool marked = false;
  for (const Node* l : lines) marked |= l->AllText().find("rank 1 seq 7 cublasGemmEx [gemm.replay]") == 0;
  EXPECT_TRUE(marked);
}

TEST(HtmlReportTest, ManyRanksShareHeatmapRowsAndCharts) {
  CheckReport report;
  for (int rank = 0; rank < 300; ++rank) report.AddChecked("gemm", OpName{rank, 0, "cublasSgemm"}, Stats(0.1), true);
  Finding f;
  f.rank = 299;
  f.seq = 0;
  report.AddFinding(f);
  report.Finish();
  auto root = MustParse(ReportToHtml(report));
  ASSERT_NE(root, nullptr);
  std::vector<const Node*> rects, texts, svgs;
  root->ById("heatmap")->Find("rect", &rects);
  EXPECT_EQ(rects.size(), 100 + 1u);  // 3 ranks a row, one column
  EXPECT_EQ(rects[99]->attrs.at("fill"), kFindingCellColour);  // ranks 297-299
  EXPECT_NE(rects[98]->attrs.at("fill"), kFindingCellColour);
  root->ById("heatmap")->Find("text", &texts);
  ASSERT_EQ(texts.size(), 25 + 1u);  // every 4th row of 3.6 px, and seq 0
  EXPECT_EQ(texts[1]->AllText(), "ranks 12-14");
  root->Find("svg", &svgs);
  ASSERT_EQ(svgs.size(), 1 + kMaxRankCharts);
  std::vector<const Node*> h3;
  root->Find("h3", &h3);
  EXPECT_EQ(h3.back()->AllText(), "rank 299");  // the rank with a finding is charted
  EXPECT_EQ(h3[62]->AllText(), "rank 62");
  EXPECT_NE(root->AllText().find("236 more ranks without findings not charted."), std::string::npos);
}

TEST(HtmlReportTest, CleanReportHasNoFindingColour) {
  CheckReport report;
  report.summary().ops = 3;
  for (uint64_t seq = 0; seq < 3; ++seq) report.AddChecked("gemm", OpName{0, seq, "cublasSgemm"}, Stats(0.1), true);
  report.Finish();
  ASSERT_EQ(report.verdict(), Verdict::kClean);
  const std::string html = ReportToHtml(report);
  ASSERT_NE(MustParse(html), nullptr);
  EXPECT_NE(html.find(kCleanBannerColour), std::string::npos);
  size_t uses = 0;
  for (size_t at = html.find(kFindingCellColour); at != std::string::npos; at = html.find(kFindingCellColour, at + 1))
    ++uses;
  EXPECT_EQ(uses, 1u) << "the finding colour appears in the legend only";
  EXPECT_NE(html.find("CLEAN (every op checked)"), std::string::npos);
  EXPECT_NE(html.find("Every op was checked."), std::string::npos);
}

TEST(HtmlReportTest, EscapesTextAndBytes) {
  EXPECT_EQ(HtmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(HtmlEscape("caf\xc3\xa9 \xff\x01\x7f\n"), "caf\xc3\xa9 \\xff\\x01\\x7f\n");
  EXPECT_EQ(HtmlEscape("\xe2\x82"), "\\xe2\\x82");  // a cut sequence
  EXPECT_EQ(HtmlEscape("\xc0\xaf"), "\\xc0\\xaf");  // overlong '/'
}

TEST(HtmlReportTest, DiffShowsTheFirstDivergence) {
  CheckReport report;
  report.summary().title = "ttrace diff /ref vs";
  report.AddChecked("diff.gemm", OpName{1, 4, "cublasGemmEx"}, Stats(40), false);
  report.Finish();
  Divergence d;
  d.valid = true;
  d.op = OpName{1, 4, "cublasGemmEx"};
  d.ref_seq = 3;
  d.operand = "C";
  d.kind = "between";
  d.has_last_matching = true;
  d.last_matching = OpName{1, 2, "ncclAllReduce"};
  d.err_eps = 120;
  d.ratio = 40;
  d.threshold = 3;
  d.model = "diff.between";
  HtmlOptions o;
  o.divergence = &d;
  o.mode = "sharded";
  auto root = MustParse(ReportToHtml(report, o));
  ASSERT_NE(root, nullptr);
  const Node* box = root->ById("divergence");
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->AllText(),
            "between rank 1 seq 4 cublasGemmEx (reference seq 3), operand Cmodel diff.between: error 120 eps, 40 x the "
            "threshold 3last matching op: rank 1 seq 2 ncclAllReduce; code between the two ops changed the data");
  EXPECT_EQ(root->ById("summary")->AllText().rfind("mode:        sharded\n", 0), 0u);
}

TEST(OpTimelineTest, BoundedWorstKeptAndOrderIndependent) {
  std::vector<std::pair<int, OpPoint>> points;
  std::mt19937_64 rng(7);
  for (int rank = 0; rank < 2; ++rank)
    for (uint64_t seq = 0; seq < 5000; ++seq) {
      OpPoint p;
      p.seq = seq;
      p.ratio = (rng() % 1000) * 1e-4;
      p.api = "cublasSgemm";
      p.kind = "gemm";
      points.push_back({rank, p});
    }
  points[1234].second.ratio = HUGE_VAL;  // rank 0 seq 1234: a finding
  points[1234].second.clean = false;
  points[5000 + 9].second.ratio = std::nan("");
  points[5000 + 9].second.clean = false;
  OpTimeline sorted;
  for (const auto& [rank, p] : points) sorted.Add(rank, p);
  std::shuffle(points.begin(), points.end(), rng);
  OpTimeline shuffled, merged;
  for (const auto& [rank, p] : points) shuffled.Add(rank, p);
  // Merged from parts of one point each (as check.cc merges per-op reports), and from two halves.
  OpTimeline half_a, half_b;
  for (size_t i = 0; i < points.size(); ++i) (i % 2 ? half_a : half_b).Add(points[i].first, points[i].second);
  merged.Merge(half_a);
  merged.Merge(half_b);
  for (const OpTimeline* t : {&sorted, &shuffled, &merged}) {
    ASSERT_EQ(t->ranks().size(), 2u);
    for (const auto& [rank, r] : t->ranks()) {
      EXPECT_EQ(r.ops, 5000u);
      EXPECT_EQ(r.shift, 3u);  // 5000 seqs: 8 per bucket gives 625 <= 1024; 4 would give 1250
      EXPECT_LE(r.buckets.size(), OpTimeline::kMaxPointsPerRank);
      uint64_t ops = 0;
      for (const auto& [b, p] : r.buckets) ops += p.ops;
      EXPECT_EQ(ops, 5000u);
    }
    const OpPoint& inf = t->ranks().at(0).buckets.at(1234 >> 3);
    EXPECT_EQ(inf.seq, 1234u);
    EXPECT_FALSE(inf.clean);
    const OpPoint& nan = t->ranks().at(1).buckets.at(9 >> 3);
    EXPECT_EQ(nan.seq, 9u);
    EXPECT_TRUE(t->ranks().at(0).buckets.at(0).clean);
  }
  auto same = [](const OpTimeline& a, const OpTimeline& b) {
    for (const auto& [rank, r] : a.ranks()) {
      const auto& s = b.ranks().at(rank);
      if (r.buckets.size() != s.buckets.size() || r.shift != s.shift) return false;
      for (const auto& [k, p] : r.buckets) {
        const OpPoint& q = s.buckets.at(k);
        if (p.seq != q.seq || p.ops != q.ops || p.clean != q.clean) return false;
      }
    }
    return true;
  };
  EXPECT_TRUE(same(sorted, shuffled));
  EXPECT_TRUE(same(sorted, merged));
  // Each bucket keeps its worst op.
  for (const auto& [b, p] : sorted.ranks().at(0).buckets) {
    double worst = 0;
    for (const auto& [rank, q] : points)
      if (rank == 0 && (q.seq >> 3) == b) worst = std::max(worst, q.ratio);
    ASSERT_EQ(p.ratio, worst) << b;
  }
  // The chart says it is decimated.
  CheckReport report;
  report.timeline().Merge(sorted);
  const std::string html = ReportToHtml(report);
  EXPECT_NE(html.find("5,000 checked ops; decimated to 625 points, the worst op of every 8 consecutive seqs"),
            std::string::npos);
}

TEST(OpTimelineTest, NamedNotCheckedKeepsTheLowest) {
  CheckReport report;
  for (uint64_t seq = 40; seq-- > 0;) report.NameNotChecked("r", OpName{static_cast<int>(seq % 2), seq / 2, "x"});
  report.NameNotChecked("r", OpName{0, 0, "x"});  // again: kept once
  const auto& named = report.summary().not_checked_ops.at("r");
  ASSERT_EQ(named.size(), CheckReport::kNamedPerReason);
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].seq, i / 2);
    EXPECT_EQ(named[i].rank, static_cast<int>(i % 2));
  }
}

TEST(HtmlReportTest, CheckWritesIt) {
  const std::string dir = testing::TempDir("html_cli");
  testing::StreamBuilder w(dir + "/rank-0.ttr", 0, 1, "html-job");
  w.Gemm(testing::GemmRec(0, 2, 2, 2, format::DType::kF32, format::DType::kF32));
  w.Tensor(0, format::TensorSlot::kA, format::DType::kF32, 2, 2, 1, testing::Encode(format::DType::kF32, {1, 2, 3, 4}));
  w.Tensor(0, format::TensorSlot::kB, format::DType::kF32, 2, 2, 1, testing::Encode(format::DType::kF32, {1, 0, 0, 1}));
  w.Tensor(0, format::TensorSlot::kCOut, format::DType::kF32, 2, 2, 1,
           testing::Encode(format::DType::kF32, {1, 2, 3, 5}));  // element 3 wrong
  w.Close();
  const std::string html = dir + "/report.html";
  std::vector<const char*> argv = {"ttrace", "check", dir.c_str(), "--html", html.c_str()};
  std::ostringstream out, err;
  EXPECT_EQ(RunCli(static_cast<int>(argv.size()), argv.data(), out, err), kExitFindings) << err.str();
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), {});
  auto root = MustParse(page);
  ASSERT_NE(root, nullptr);
  EXPECT_NE(root->ById("verdict")->AllText().find("FINDINGS (1)"), std::string::npos);
  EXPECT_NE(root->ById("findings")->AllText().find("element 3 (row 1, col 1, batch 0): expected 4, got 5"),
            std::string::npos) << root->ById("findings")->AllText();
  std::vector<const char*> bad = {"ttrace", "check", dir.c_str(), "--html"};
  EXPECT_EQ(RunCli(static_cast<int>(bad.size()), bad.data(), out, err), kExitError);
  std::vector<const char*> unwritable = {"ttrace", "check", dir.c_str(), "--html", "/nonexistent/x.html"};
  std::ostringstream err2;
  EXPECT_EQ(RunCli(static_cast<int>(unwritable.size()), unwritable.data(), out, err2), kExitError);
  EXPECT_NE(err2.str().find("/nonexistent/x.html: cannot write the HTML report"), std::string::npos) << err2.str();
}

}  // namespace
}  // namespace ttrace::analyzer
