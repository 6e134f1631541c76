// libttrace.so's surface, as the dynamic loader sees it: it exports exactly the symbols of apis.inc, needs no
// CUDA library (nor libstdc++/libgcc_s/zstd, linked statically), and runs none of our code at load time.
#include <cstring>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "shim/interception.h"
#include "shim/testing/process.h"
#include "ttrace/format.h"

namespace ttrace::shim::testing {
namespace {

using ::ttrace::shim::kMaxVendorVersions;
using ::ttrace::shim::VendorSoname;
using ::ttrace::shim::VendorVersioned;

const std::string kShim = TTRACE_SHIM_LIB;

std::string Tool(const std::vector<std::string>& argv) {
  RunResult r = RunProgram(argv, {{"PATH", "/usr/bin:/bin"}});
  EXPECT_EQ(r.exit_code, 0) << argv[0] << ": " << r.err;
  return r.out;
}

// Every apis.inc symbol of a library with version nodes is exported once per node, the current major as the
// default version (@@); the others once, as the default version of node TTRACE; and dlsym. The version
// definitions themselves show as absolute symbols.
TEST(ShimExportTest, ExportsExactlyTheApiListPerVersionNode) {
  std::set<std::string> exported, nodes;
  std::istringstream in(Tool({"/usr/bin/nm", "-D", "--defined-only", kShim}));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string addr, type, name;
    fields >> addr >> type >> name;
    if (type == "A") {
      nodes.insert(name);
      continue;
    }
    EXPECT_EQ(type, "T") << line;
    exported.insert(name);
  }
  // dlsym, as glibc's two versions of it (dlsym_interposer.cc).
  std::set<std::string> listed = {"dlsym@GLIBC_2.2.5", "dlsym@@GLIBC_2.34"},
                        listed_nodes = {"TTRACE", "GLIBC_2.2.5", "GLIBC_2.34"};
  for (const format::ApiInfo& api : format::kApis) {
    if (!VendorVersioned(api.library)) {
      listed.insert(std::string(api.symbol) + "@@TTRACE");
      continue;
    }
    for (int v = 0; v < kMaxVendorVersions; ++v) {
      const char* node = VendorSoname(api.library, v);
      if (node == nullptr) continue;
      listed.insert(std::string(api.symbol) + (v == 0 ? "@@" : "@") + node);
      listed_nodes.insert(node);
    }
  }
  EXPECT_EQ(exported, listed);
  EXPECT_EQ(nodes, listed_nodes);
  EXPECT_NE(listed.count("cublasGemmEx@libcublas.so.12"), 0u);  // the list itself says what we rely on
}

TEST(ShimExportTest, NeedsNoCudaLibrary) {
  std::istringstream in(Tool({"/usr/bin/readelf", "-d", kShim}));
  int needed = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    for (const char* banned : {"cuda", "cublas", "nccl", "cudnn", "cupti", "libstdc++", "libgcc_s", "zstd"})
      EXPECT_EQ(line.find(banned), std::string::npos) << line;
  }
  EXPECT_GT(needed, 0);  // libc at least: the parse found the entries
}

// Static initializers show up as _GLOBAL__sub_I_<file>: none may come from our sources (no constructors, no
// threads, no CUDA at load time). libstdc++'s own (emergency exception pool, error categories) are allowed.
TEST(ShimExportTest, NoConstructorsOfOurs) {
  const std::string ours = TTRACE_SHIM_SOURCES;
  ASSERT_NE(ours.find(" capture_engine.cc "), std::string::npos) << ours;
  std::istringstream in(Tool({"/usr/bin/nm", kShim}));
  int initializers = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("_GLOBAL__sub_I_");
    if (at == std::string::npos) continue;
    ++initializers;
    const std::string file = line.substr(at + strlen("_GLOBAL__sub_I_"));
    EXPECT_EQ(ours.find(" " + file + " "), std::string::npos) << "static initializer in " << file;
  }
  EXPECT_LE(initializers, 4) << "libstdc++ brought more initializers than expected";
}

}  // namespace
}  // namespace ttrace::shim::testing
