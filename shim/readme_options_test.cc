// README.md's table of TTRACE_* variables must be the one generated from shim/options.inc
// (`build/bin/ttrace-options --markdown`), between the marker lines below.
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "shim/options.h"

namespace ttrace::shim {
namespace {

constexpr char kBegin[] = "<!-- ttrace-options:begin -->\n";
constexpr char kEnd[] = "<!-- ttrace-options:end -->";

TEST(ReadmeOptionsTest, TableIsGeneratedFromOptionsList) {
  std::ifstream in(TTRACE_README);
  ASSERT_TRUE(in) << "cannot read " << TTRACE_README;
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t begin = readme.find(kBegin);
  ASSERT_NE(begin, std::string::npos) << "README.md lost its options table (marker " << kBegin << ")";
  const size_t from = begin + sizeof(kBegin) - 1;
  const size_t end = readme.find(kEnd, from);
  ASSERT_NE(end, std::string::npos) << "README.md: " << kBegin << " without " << kEnd;
  std::string table = readme.substr(from, end - from);
  while (!table.empty() && table.front() == '\n') table.erase(0, 1);
  while (table.size() > 1 && table[table.size() - 1] == '\n' && table[table.size() - 2] == '\n') table.pop_back();
  EXPECT_EQ(table, OptionsMarkdown()) << "regenerate it with: build/bin/ttrace-options --markdown";
}

}  // namespace
}  // namespace ttrace::shim
