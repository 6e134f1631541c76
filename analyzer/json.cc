// JSON is written by hand: the schema is small and fixed, and Debian's JSON libraries would add a dependency
// for a few dozen lines. Bytes >= 0x80 are copied through only when they form valid UTF-8.
#include "analyzer/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ttrace::analyzer {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], 0 if invalid.
size_t Utf8Length(absl::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t j = 1; j < n; ++j)
    if ((static_cast<unsigned char>(s[i + j]) & 0xc0) != 0x80) return 0;
  const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f))
    return 0;  // overlong, surrogate, or above U+10FFFF (RFC 3629)
  return n;
}

std::string Str(const std::string& key, absl::string_view value) {
  return absl::StrCat(JsonString(key), ": ", JsonString(value));
}
std::string Num(const std::string& key, double value) { return absl::StrCat(JsonString(key), ": ", JsonNumber(value)); }
template <typename T>
std::string Int(const std::string& key, T value) {
  return absl::StrCat(JsonString(key), ": ", value);
}

std::string ContextJson(const OpContext& c) {
  if (!c.valid) return "null";
  std::string kernels = "[";
  for (const auto& [name, count] : c.kernel_names)
    absl::StrAppend(&kernels, kernels.size() > 1 ? ", " : "", "{", Str("name", name), ", ",
                    Str("short_name", ShortKernelName(name)), ", ", Int("count", count), "}");
  std::string nvtx = "[";
  for (const std::string& n : c.nvtx) absl::StrAppend(&nvtx, nvtx.size() > 1 ? ", " : "", JsonString(n));
  return absl::StrCat("{", Int("kernels", c.kernels), ", ", Int("unnamed_kernels", c.unnamed_kernels), ", ",
                      Int("graph_launches", c.graph_launches), ", \"kernel_names\": ", kernels, "], ",
                      Int("nvtx_depth", c.nvtx_depth), ", \"nvtx\": ", nvtx, "], ", Str("text", ContextText(c)), "}");
}

std::string FindingJson(const Finding& f) {
  std::string first = "null";
  if (f.has_element) {
    first = absl::StrCat("{", Int("index", f.first.index), ", ", Int("row", f.first.row), ", ",
                         Int("col", f.first.col), ", ", Int("batch", f.first.batch), ", ", Num("got", f.first.got),
                         ", ", Num("expected", f.first.expected), ", ", Num("threshold", f.first.threshold), "}");
  }
  return absl::StrCat("{", Str("check", f.check), ", ", Int("rank", f.rank), ", ", Int("seq", f.seq), ", ",
                      Str("api", f.api), ", ", Str("message", f.message), ", ", Num("max_abs_err", f.max_abs_err),
                      ", ", Num("max_rel_err", f.max_rel_err), ", ", Num("threshold", f.threshold), ", ",
                      Num("ratio", f.ratio), ", ", Str("model", f.model), ", ",
                      f.method.empty() ? std::string() : absl::StrCat(Str("method", f.method), ", "),
                      Int("elements", f.elements), ", ",
                      Int("violations", f.violations), ", \"first_violation\": ", first, ", ",
                      Str("detail", f.detail), ", \"context\": ", ContextJson(f.context), "}");
}

std::string CountsJson(const std::map<std::string, uint64_t>& counts) {
  std::string out = "{";
  for (const auto& [key, n] : counts) absl::StrAppend(&out, out.size() > 1 ? ", " : "", Int(key, n));
  return out + "}";
}

std::string TightnessJson(const Tightness& t) {
  if (!t.valid) return "null";
  // Keys in another order than a finding's, so that grepping a finding's "rank": R, "seq": S never matches.
  return absl::StrCat("{", Num("max_ratio", t.max_ratio), ", \"op\": {", Str("api", t.op.api), ", ",
                      Int("seq", t.op.seq), ", ", Int("rank", t.op.rank), "}}");
}

// "seq" before "rank", as in TightnessJson, so that grepping a finding's "rank": R, "seq": S never matches.
std::string OpJson(const OpName& op) {
  return absl::StrCat("{", Int("seq", op.seq), ", ", Int("rank", op.rank), ", ", Str("api", op.api), "}");
}

std::string DivergenceJson(const Divergence* d) {
  if (d == nullptr || !d->valid) return "null";
  return absl::StrCat("{", Int("seq", d->op.seq), ", ", Int("rank", d->op.rank), ", ", Str("api", d->op.api), ", ",
                      Str("operand", d->operand), ", ", Str("kind", d->kind), ", ", Int("ref_seq", d->ref_seq), ", ",
                      Num("err_eps", d->err_eps), ", ", Num("ratio", d->ratio), ", ",
                      Num("threshold", d->threshold), ", ", Str("model", d->model), ", \"last_matching\": ",
                      d->has_last_matching ? OpJson(d->last_matching) : "null", ", \"context\": ",
                      ContextJson(d->context), "}");
}

}  // namespace

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (size_t n = Utf8Length(s, i)) {
      out.append(s.data() + i, n);
      i += n - 1;
    } else {
      absl::StrAppendFormat(&out, "\\u%04x", c);  // an invalid byte, shown as its Latin-1 code point
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.17g", v);
}

std::string ReportToJson(const CheckReport& report, const Divergence* divergence, absl::string_view mode) {
  const CheckSummary& s = report.summary();
  std::string out = "{\n";
  absl::StrAppend(&out, "  ", Str("verdict", VerdictName(report.verdict())), ",\n");
  if (!mode.empty()) absl::StrAppend(&out, "  ", Str("mode", mode), ",\n");
  absl::StrAppend(&out, "  \"incomplete\": [");
  for (size_t i = 0; i < s.gaps.size(); ++i)
    absl::StrAppend(&out, i == 0 ? "\n    " : ",\n    ", JsonString(s.gaps[i]));
  absl::StrAppend(&out, s.gaps.empty() ? "],\n" : "\n  ],\n");
  absl::StrAppend(&out, "  \"findings\": [");
  const auto& findings = report.findings();
  for (size_t i = 0; i < findings.size(); ++i)
    absl::StrAppend(&out, i == 0 ? "\n" : ",\n", "    ", FindingJson(findings[i]));
  absl::StrAppend(&out, findings.empty() ? "],\n" : "\n  ],\n");
  absl::StrAppend(&out, "  \"first_divergence\": ", DivergenceJson(divergence), ",\n");
  absl::StrAppend(&out, "  \"summary\": {\n");
  absl::StrAppend(&out, "    ", Str("dir", s.dir), ",\n");
  absl::StrAppend(&out, "    ", Str("job", s.job), ",\n");
  absl::StrAppend(&out, "    ", Int("world_size", s.world_size), ",\n");
  absl::StrAppend(&out, "    ", Int("streams", s.streams), ",\n");
  absl::StrAppend(&out, "    ", Int("ops", s.ops), ",\n");
  absl::StrAppend(&out, "    ", Int("findings", findings.size()), ",\n");
  absl::StrAppend(&out, "    ", Int("checked_total", s.checked_total()), ",\n");
  absl::StrAppend(&out, "    \"checked\": ", CountsJson(s.checked), ",\n");
  absl::StrAppend(&out, "    ", Int("not_checked_total", s.not_checked_total()), ",\n");
  absl::StrAppend(&out, "    \"not_checked\": ", CountsJson(s.not_checked), ",\n");
  absl::StrAppend(&out, "    ", Int("elements_checked", s.elements_checked), ",\n");
  absl::StrAppend(&out, "    ", Int("unknown_records_skipped", s.unknown_records), ",\n");
  absl::StrAppend(&out, "    \"tightness\": ", TightnessJson(s.overall), ",\n");
  absl::StrAppend(&out, "    \"tightness_by_kind\": {");
  bool first = true;
  for (const auto& [kind, t] : s.tightness) {
    absl::StrAppend(&out, first ? "" : ", ", JsonString(kind), ": ", TightnessJson(t));
    first = false;
  }
  absl::StrAppend(&out, "},\n");
  absl::StrAppend(&out, "    \"gemm\": {", Str("model", s.gemm_model), ", ", Str("blas_core", s.blas_core),
                  ", \"methods\": {");
  first = true;
  for (const auto& [method, g] : s.gemm_methods) {
    absl::StrAppend(&out, first ? "" : ", ", JsonString(method), ": {", Int("ops", g.ops), ", ",
                    Num("guaranteed_rel", g.guaranteed), ", ", Num("screened_rel", g.screened), ", ",
                    Num("replayed_fraction", g.replayed), ", ", Int("vdpbf16ps_ops", g.vdpbf16ps_ops), "}");
    first = false;
  }
  absl::StrAppend(&out, "}},\n");
  if (s.replicas.ran) {
    const ReplicaSummary& r = s.replicas;
    std::string sets;
    for (const std::vector<int>& set : r.sets) {
      absl::StrAppend(&sets, sets.empty() ? "" : ", ", "[");
      for (size_t i = 0; i < set.size(); ++i) absl::StrAppend(&sets, i == 0 ? "" : ", ", set[i]);
      absl::StrAppend(&sets, "]");
    }
    absl::StrAppend(&out, "    \"replicas\": {", Int("groups", r.groups), ", \"sets\": [", sets, "], ",
                    Int("operands_established", r.operands_established), ", ",
                    Int("uses_compared", r.uses_compared), ", ", Int("parted", r.parted), "},\n");
  }
  absl::StrAppend(&out, "    \"warnings\": [");
  for (size_t i = 0; i < s.warnings.size(); ++i)
    absl::StrAppend(&out, i == 0 ? "\n      " : ",\n      ", JsonString(s.warnings[i]));
  absl::StrAppend(&out, s.warnings.empty() ? "],\n" : "\n    ],\n");
  absl::StrAppend(&out, "    ", Int("warnings_suppressed", s.warnings_suppressed), "\n");
  absl::StrAppend(&out, "  }\n}\n");
  return out;
}

absl::Status WriteReportJson(const CheckReport& report, const std::string& path) {
  const std::string json = ReportToJson(report);
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
  const bool ok = fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = fclose(f) == 0;
  if (!ok || !closed) return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
  return absl::OkStatus();
}

}  // namespace ttrace::analyzer
