// The golden streams of tests/golden/: each is read by the store's reader and checked by `ttrace check` (in
// process), and both must say what expected.txt says: a good stream reads to its end with its record count and
// gets its verdict; a corrupt one fails with its status code and message and exit 2 (3 when cut inside a frame:
// check reads it to the last complete frame), never a crash. Every file in the folders must be listed.
#include <dirent.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analyzer/cli.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"
#include "store/trace_reader.h"

namespace ttrace {
namespace {

struct Expectation {
  std::string file, reader, message;
  int check = -1;
};

std::vector<Expectation> Manifest() {
  std::vector<Expectation> all;
  std::ifstream in(std::string(TTRACE_GOLDEN_DIR) + "/expected.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Expectation e;
    fields >> e.file >> e.reader >> e.check;
    std::getline(fields >> std::ws, e.message);
    all.push_back(e);
  }
  return all;
}

std::set<std::string> Listed(const std::string& sub) {
  std::set<std::string> names;
  if (DIR* d = opendir((std::string(TTRACE_GOLDEN_DIR) + "/" + sub).c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.insert(sub + "/" + e->d_name);
    closedir(d);
  }
  return names;
}

TEST(Golden, ManifestListsEveryStream) {
  std::set<std::string> files = Listed("good"), corrupt = Listed("corrupt"), listed;
  files.insert(corrupt.begin(), corrupt.end());
  for (const Expectation& e : Manifest()) listed.insert(e.file);
  EXPECT_EQ(files, listed);
  EXPECT_GE(listed.size(), 20u);
}

// The strict reader's outcome: "records=N" or the status code's name, and the error message.
std::string ReadAll(const std::string& path, std::string* message) {
  auto reader = store::TraceReader::Open(path);
  if (!reader.ok()) {
    *message = std::string(reader.status().message());
    return absl::StatusCodeToString(reader.status().code());
  }
  store::RecordView r;
  uint64_t records = 0;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&r);
    if (!more.ok()) {
      *message = std::string(more.status().message());
      return absl::StatusCodeToString(more.status().code());
    }
    if (!*more) break;
    ++records;
  }
  return absl::StrCat("records=", records);
}

TEST(Golden, EveryStreamIsReadOrRejectedAsExpected) {
  for (const Expectation& e : Manifest()) {
    SCOPED_TRACE(e.file);
    // As rank-0.ttr of a directory of its own: messages name that path.
    const std::string dir = analyzer::testing::TempDir("golden");
    const std::string path = dir + "/rank-0.ttr";
    {
      std::ifstream in(std::string(TTRACE_GOLDEN_DIR) + "/" + e.file, std::ios::binary);
      std::ofstream out(path, std::ios::binary);
      out << in.rdbuf();
    }
    std::string message;
    EXPECT_EQ(ReadAll(path, &message), e.reader);
    if (e.reader.rfind("records=", 0) != 0) EXPECT_NE(message.find(e.message), std::string::npos) << message;

    std::ostringstream out, err;
    const char* argv[] = {"ttrace", "check", dir.c_str()};
    EXPECT_EQ(analyzer::RunCli(3, argv, out, err), e.check) << out.str() << err.str();
    if (e.check == analyzer::kExitError) {
      EXPECT_NE(err.str().find("ttrace: error: "), std::string::npos) << err.str();
      if (e.reader.rfind("records=", 0) == 0) EXPECT_NE(err.str().find(e.message), std::string::npos) << err.str();
    }
    remove(path.c_str());
    rmdir(dir.c_str());
  }
}

}  // namespace
}  // namespace ttrace
