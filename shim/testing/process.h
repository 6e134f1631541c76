// Test helpers: run a program with a controlled environment and collect its output; scratch directories.
#ifndef TTRACE_SHIM_TESTING_PROCESS_H_
#define TTRACE_SHIM_TESTING_PROCESS_H_

#include <map>
#include <string>
#include <vector>

namespace ttrace::shim::testing {

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out, err;
  double seconds = 0;
};

// Runs argv[0] (a path) with the test's environment minus everything that steers CUDA libraries, the shim or a
// launcher (LD_PRELOAD, LD_LIBRARY_PATH, TTRACE_*, SIMGPU_*, RANK, WORLD_SIZE, LOCAL_RANK, ...), plus `env`, and
// TTRACE_CONTEXT=0 unless `env` sets it (the machine's libcupti does not steer tests).
RunResult RunProgram(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              int timeout_seconds = 240);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The trace streams (*.ttr) in a directory, sorted (the index and manifest beside them are left out); empty when
// it does not exist.
std::vector<std::string> ListStreams(const std::string& dir);
std::string ReadFile(const std::string& path);

}  // namespace ttrace::shim::testing

#endif  // TTRACE_SHIM_TESTING_PROCESS_H_
