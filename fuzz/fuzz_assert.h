// FUZZ_ASSERT(cond): a fuzz harness's own invariant (what a parser must never do with any input: accept what it
// must refuse, decode to something that does not re-encode, lose what it reported as read). Unlike assert() it holds
// in every build, and it aborts, which libFuzzer and the suite's corpus replay (replay_main.cc) report as a crash
// with the input that caused it. Shared by every harness in fuzz/.
#ifndef TTRACE_FUZZ_FUZZ_ASSERT_H_
#define TTRACE_FUZZ_FUZZ_ASSERT_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_ASSERT(cond)                                                          \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                     \
    }                                                                              \
  } while (0)

#endif  // TTRACE_FUZZ_FUZZ_ASSERT_H_
