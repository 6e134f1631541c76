#include "shim/options.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ttrace::shim {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(OptionsTest, DefaultsWithEmptyEnvironment) {
  FakeEnv env;
  std::vector<std::string> warnings;
  Options o = ParseOptions(env.lookup(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(o.disable);
  EXPECT_EQ(o.mode, CaptureMode::kFull);
  EXPECT_EQ(o.buffer_mb, 256);
  EXPECT_EQ(o.verbose, 0);
  EXPECT_EQ(o.job, "default");
  EXPECT_EQ(o.dir, "./ttrace-out/default");
}

TEST(OptionsTest, JobComesFromTtraceJobThenTorchElastic) {
  FakeEnv env;
  env.vars["TORCHELASTIC_RUN_ID"] = "elastic/7";
  Options o = ParseOptions(env.lookup(), nullptr);
  EXPECT_EQ(o.job, "elastic_7");
  EXPECT_EQ(o.dir, "./ttrace-out/elastic_7");
  env.vars["TTRACE_JOB"] = "mine";
  o = ParseOptions(env.lookup(), nullptr);
  EXPECT_EQ(o.job, "mine");
  env.vars["TTRACE_DIR"] = "/tmp/traces";
  o = ParseOptions(env.lookup(), nullptr);
  EXPECT_EQ(o.dir, "/tmp/traces");
}

TEST(OptionsTest, ParsesEveryType) {
  FakeEnv env;
  env.vars = {{"TTRACE_DISABLE", "Yes"}, {"TTRACE_MODE", "meta"}, {"TTRACE_BUFFER_MB", "3"},
              {"TTRACE_MAX_TENSOR_MB", "0"}, {"TTRACE_RING_WAIT_MS", "2147483647"}, {"TTRACE_VERBOSE", "1"}};
  std::vector<std::string> warnings;
  Options o = ParseOptions(env.lookup(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(o.disable);
  EXPECT_EQ(o.mode, CaptureMode::kMeta);
  EXPECT_EQ(o.buffer_mb, 3);
  EXPECT_EQ(o.max_tensor_mb, 0);
  EXPECT_EQ(o.ring_wait_ms, 2147483647);
  EXPECT_EQ(o.verbose, 1);
  env.vars["TTRACE_DISABLE"] = "off";
  EXPECT_FALSE(ParseOptions(env.lookup(), nullptr).disable);
}

TEST(OptionsTest, BadValuesKeepDefaultsAndWarn) {
  FakeEnv env;
  env.vars = {{"TTRACE_DISABLE", "maybe"}, {"TTRACE_MODE", "fast"}, {"TTRACE_BUFFER_MB", "-1"},
              {"TTRACE_FLUSH_MS", "2147483648"}, {"TTRACE_VERBOSE", "1x"}};
  std::vector<std::string> warnings;
  Options o = ParseOptions(env.lookup(), &warnings);
  EXPECT_FALSE(o.disable);
  EXPECT_EQ(o.mode, CaptureMode::kFull);
  EXPECT_EQ(o.buffer_mb, 256);
  EXPECT_EQ(o.flush_ms, 1000);
  EXPECT_EQ(o.verbose, 0);
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_NE(warnings[1].find("TTRACE_MODE=fast"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[1].find("meta or full"), std::string::npos) << warnings[1];
}

// A level outside zstd's 1..19 is reported like any other bad value, whether it parses as an integer (99, 0)
// or not (-3), and the default is used.
TEST(OptionsTest, ZstdLevelOutOfRangeWarns) {
  for (const char* level : {"99", "0", "-3", "20"}) {
    FakeEnv env;
    env.vars = {{"TTRACE_ZSTD_LEVEL", level}};
    std::vector<std::string> warnings;
    Options o = ParseOptions(env.lookup(), &warnings);
    EXPECT_EQ(o.zstd_level, 3) << level;
    ASSERT_EQ(warnings.size(), 1u) << level;
    EXPECT_NE(warnings[0].find(std::string("ignoring TTRACE_ZSTD_LEVEL=") + level), std::string::npos)
        << warnings[0];
  }
  FakeEnv env;
  env.vars = {{"TTRACE_ZSTD_LEVEL", "19"}};
  std::vector<std::string> warnings;
  EXPECT_EQ(ParseOptions(env.lookup(), &warnings).zstd_level, 19);
  EXPECT_TRUE(warnings.empty());
}

TEST(OptionsTest, EmptyValueMeansUnset) {
  FakeEnv env;
  env.vars = {{"TTRACE_MODE", ""}, {"TTRACE_JOB", ""}};
  std::vector<std::string> warnings;
  Options o = ParseOptions(env.lookup(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(o.mode, CaptureMode::kFull);
  EXPECT_EQ(o.job, "default");
}

TEST(OptionsTest, MarkdownHasOneRowPerOption) {
  const std::string table = OptionsMarkdown();
  std::vector<std::string> names = {
#define TTRACE_OPTION(type, member, env, def, doc) "TTRACE_" #env,
#include "shim/options.inc"
#undef TTRACE_OPTION
  };
  EXPECT_EQ(table.rfind("| Variable | Default | Description |\n|---|---|---|\n", 0), 0u);
  size_t rows = 0;
  for (size_t pos = 0; (pos = table.find("\n| `", pos)) != std::string::npos; ++pos) ++rows;
  EXPECT_EQ(rows, names.size());
  size_t last = 0;
  for (const std::string& name : names) {
    const size_t at = table.find("| `" + name + "` |");
    ASSERT_NE(at, std::string::npos) << name;
    EXPECT_GT(at, last) << name << " out of list order";
    last = at;
  }
  EXPECT_NE(table.find("| `TTRACE_MODE` | `full` |"), std::string::npos);
  EXPECT_NE(table.find("| `TTRACE_DIR` | (unset) |"), std::string::npos);
}

TEST(OptionsTest, DumpShowsResolvedValues) {
  FakeEnv env;
  env.vars = {{"TTRACE_MODE", "meta"}, {"TTRACE_JOB", "j"}};
  const std::string dump = OptionsDump(ParseOptions(env.lookup(), nullptr));
  EXPECT_NE(dump.find("TTRACE_MODE=meta\n"), std::string::npos);
  EXPECT_NE(dump.find("TTRACE_DIR=./ttrace-out/j\n"), std::string::npos);
  EXPECT_NE(dump.find("TTRACE_BUFFER_MB=256\n"), std::string::npos);
}

// ---- TTRACE_OPS ------------------------------------------------------------------------------------------------
std::vector<std::string> Selected(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  bool selected[kApiCount];
  ParseOpsFilter(text, selected, warnings);
  std::vector<std::string> out;
  for (size_t i = 0; i < kApiCount; ++i)
    if (selected[i]) out.push_back(format::kApis[i].symbol);
  return out;
}
bool Has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(OpsFilterTest, UnsetSelectsEveryCall) {
  std::vector<std::string> warnings;
  EXPECT_EQ(Selected("", &warnings).size(), kApiCount);
  EXPECT_TRUE(warnings.empty());
}

TEST(OpsFilterTest, GroupsSelectTheirLibrarysOpsAndItsSetUpCalls) {
  const std::vector<std::string> nccl = Selected("nccl");
  EXPECT_TRUE(Has(nccl, "ncclAllReduce"));
  EXPECT_TRUE(Has(nccl, "ncclCommInitRank")) << "communicators are needed to identify collectives";
  EXPECT_TRUE(Has(nccl, "ncclGroupEnd"));
  EXPECT_FALSE(Has(nccl, "cublasGemmEx"));
  EXPECT_FALSE(Has(nccl, "cublasLtMatmul"));
  EXPECT_FALSE(Has(nccl, "cudnnBackendExecute"));
  size_t count = 0;
  for (const format::ApiInfo& a : format::kApis) count += a.library == format::Library::kNccl;
  EXPECT_EQ(nccl.size(), count);
  const std::vector<std::string> two = Selected(" gemm , CUDNN ");
  EXPECT_TRUE(Has(two, "cublasSgemm_v2"));
  EXPECT_TRUE(Has(two, "cublasGemmBatchedEx"));
  EXPECT_TRUE(Has(two, "cudnnBackendSetAttribute")) << "descriptor shadows are needed by cudnnBackendExecute";
  EXPECT_FALSE(Has(two, "cublasLtMatmul"));
  EXPECT_FALSE(Has(two, "ncclAllReduce"));
  EXPECT_EQ(Selected("lt"), std::vector<std::string>{"cublasLtMatmul"});
}

TEST(OpsFilterTest, ApiNamesSelectOneOpAndTheSetUpCallsOfItsLibrary) {
  std::vector<std::string> warnings;
  const std::vector<std::string> s = Selected("cublasGemmEx,ncclAllReduce", &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(Has(s, "cublasGemmEx"));
  EXPECT_FALSE(Has(s, "cublasGemmEx_64"));
  EXPECT_FALSE(Has(s, "cublasSgemm_v2"));
  EXPECT_TRUE(Has(s, "ncclAllReduce"));
  EXPECT_FALSE(Has(s, "ncclAllGather"));
  EXPECT_TRUE(Has(s, "ncclCommSplit"));
  EXPECT_FALSE(Has(s, "cudnnBackendCreateDescriptor"));
}

TEST(OpsFilterTest, UnknownAndSetUpNamesWarnAndASelectionOfNothingSelectsEverything) {
  std::vector<std::string> warnings;
  const std::vector<std::string> s = Selected("nccl,gemms,ncclCommInitRank", &warnings);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("gemms"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("set-up"), std::string::npos) << warnings[1];
  EXPECT_FALSE(Has(s, "cublasGemmEx"));
  warnings.clear();
  EXPECT_EQ(Selected("cublasgemmex", &warnings).size(), kApiCount) << "API names are exact";
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find("selects no op; recording every call"), std::string::npos) << warnings[1];
  warnings.clear();
  EXPECT_EQ(Selected(",", &warnings).size(), kApiCount);
}

}  // namespace
}  // namespace ttrace::shim
