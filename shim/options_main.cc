// ttrace-options: prints the libttrace.so options table (--markdown, for README.md) or the values the shim would
// use in the current environment (no arguments; exit 1 when a value would be ignored).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shim/options.h"

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
    fputs(ttrace::shim::OptionsMarkdown().c_str(), stdout);
    return 0;
  }
  if (argc != 1) {
    fprintf(stderr, "usage: ttrace-options [--markdown]\n");
    return 2;
  }
  std::vector<std::string> warnings;
  ttrace::shim::Options o = ttrace::shim::ParseOptions([](const char* name) { return getenv(name); }, &warnings);
  for (const std::string& w : warnings) fprintf(stderr, "ttrace-options: %s\n", w.c_str());
  fputs(ttrace::shim::OptionsDump(o).c_str(), stdout);
  return warnings.empty() ? 0 : 1;
}
