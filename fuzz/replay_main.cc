// A main for the fuzz harnesses where libFuzzer is not available (a GCC build): runs LLVMFuzzerTestOneInput once
// on every file named on the command line or found in a named directory (not recursive), as libFuzzer does when
// given files, and says how many. A harness's assertion aborts, so the test that runs this fails.
//
//   fuzz_trace_reader_replay DIR|FILE...
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "%s: not found\n", argv[i]);
      return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
      files.push_back(argv[i]);
      continue;
    }
    DIR* d = opendir(argv[i]);
    while (dirent* e = d ? readdir(d) : nullptr) {
      std::string path = std::string(argv[i]) + "/" + e->d_name;
      if (e->d_name[0] != '.' && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.push_back(path);
    }
    if (d) closedir(d);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    fprintf(stderr, "no inputs\n");
    return 2;
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  printf("%zu inputs run\n", files.size());
  return 0;
}
