// docs/json.md describes every key the JSON report can hold: a report with every optional part filled (a finding
// with its element, GEMM method and context, tightness, GEMM methods, replicas, warnings, a gap, `ttrace diff`'s mode and
// first divergence) is written, parsed back with a strict parser, and each key found in it must appear in the doc
// as `key` or "key". Keys that are data (kinds, reasons, methods) are not names to document and are skipped.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "analyzer/json.h"
#include "analyzer/report.h"
#include "analyzer/test_json.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using testing::Json;

void Keys(const Json& v, std::set<std::string>* out) {
  if (v.type == Json::kArray)
    for (const Json& e : v.array) Keys(e, out);
  if (v.type != Json::kObject) return;
  for (const auto& [key, value] : v.object) {
    out->insert(key);
    if (key == "checked" || key == "not_checked" || key == "tightness_by_kind" || key == "methods") {
      for (const auto& [data_key, inner] : value.object) Keys(inner, out);  // data_key: a kind, reason, method
      continue;
    }
    Keys(value, out);
  }
}

TEST(JsonDocTest, EveryKeyOfTheReportIsDocumented) {
  CheckReport r;
  ElementStats clean;
  r.AddChecked("gemm", {0, 1, "cublasGemmEx"}, clean, true);
  r.AddNotChecked("tensors dropped (ring full)");
  r.AddGemmMethod("projection", "gemm.deterministic", 1, 0.01, 0.02);
  Finding f;
  f.check = "gemm.replay";
  f.rank = 1;
  f.seq = 2;
  f.api = "cublasGemmEx";
  f.message = "m";
  f.model = "gemm.deterministic";
  f.method = "projection";
  f.has_element = true;
  f.context.valid = true;
  f.context.kernels = 3;
  f.context.kernel_names = {{"_Z6kernelv", 3}};
  f.context.nvtx_depth = 1;
  f.context.nvtx = {"forward"};
  r.AddFinding(f);
  r.Warn("w");
  r.AddGap("g");
  r.summary().replicas.ran = true;
  r.summary().replicas.sets.insert({0, 1});
  r.Finish();
  Divergence d;
  d.valid = true;
  d.has_last_matching = true;
  const std::string text = ReportToJson(r, &d, "sharded");
  Json doc;
  std::string error;
  ASSERT_TRUE(testing::JsonParser::Parse(text, &doc, &error)) << error << "\n" << text;
  std::set<std::string> keys;
  Keys(doc, &keys);
  EXPECT_GT(keys.size(), 50u) << text;

  std::ifstream in(std::string(TTRACE_SOURCE_DIR) + "/docs/json.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string md = ss.str();
  ASSERT_FALSE(md.empty());
  for (const std::string& key : keys)
    EXPECT_TRUE(md.find("`" + key + "`") != std::string::npos || md.find("\"" + key + "\"") != std::string::npos)
        << key << " is not in docs/json.md";
}

}  // namespace
}  // namespace ttrace::analyzer
