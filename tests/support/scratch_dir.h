// Test support: one scratch folder per test process, removed when that process exits.
//
// Contract: TestScratchDir() is $TEST_TMPDIR (else $TMPDIR, else /tmp) + "/ttrace_test_<program>_XXXXXX", made
// by mkdtemp on first use (aborts if it cannot be made: no test can run without it). At exit of the process that
// made it, it is removed with everything in it; a forked child that exits leaves it alone. With
// TTRACE_KEEP_TEST_TMP=1 it is kept and its path printed on stderr, to look at a failure's files.
// TestScratchPath(name) is a fresh empty folder `name` inside it (anything there before is removed).
//
// Every test that writes files uses this, so that a run of the suite leaves nothing behind (the suite writes
// gigabytes of traces; before this each binary kept its own folder in /tmp forever).
#ifndef TTRACE_TESTS_SUPPORT_SCRATCH_DIR_H_
#define TTRACE_TESTS_SUPPORT_SCRATCH_DIR_H_

#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace ttrace::test_support {

namespace scratch_internal {

struct Root {
  std::string path;
  pid_t owner = 0;
  Root() {
    const char* base = getenv("TEST_TMPDIR");
    if (base == nullptr || *base == '\0') base = getenv("TMPDIR");
    if (base == nullptr || *base == '\0') base = "/tmp";
    std::string tmpl = std::string(base) + "/ttrace_test_" + program_invocation_short_name + "_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      fprintf(stderr, "cannot make a scratch folder %s: %s\n", tmpl.c_str(), strerror(errno));
      abort();
    }
    path = tmpl;
    owner = getpid();
  }
  ~Root() {
    if (getpid() != owner) return;
    const char* keep = getenv("TTRACE_KEEP_TEST_TMP");
    if (keep != nullptr && *keep != '\0' && strcmp(keep, "0") != 0) {
      fprintf(stderr, "test files kept in %s\n", path.c_str());
      return;
    }
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace scratch_internal

inline const std::string& TestScratchDir() {
  static scratch_internal::Root root;
  return root.path;
}

inline std::string TestScratchPath(const std::string& name) {
  const std::string dir = TestScratchDir() + "/" + name;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::filesystem::create_directories(dir, ignored);
  return dir;
}

}  // namespace ttrace::test_support

#endif  // TTRACE_TESTS_SUPPORT_SCRATCH_DIR_H_
