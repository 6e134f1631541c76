// peak_rss OUT -- CMD [ARGS...]: runs CMD, writes its peak resident memory (KiB, getrusage's ru_maxrss of the
// waited child) to the file OUT, and exits with CMD's exit code (128 + the signal when a signal ended it; 127 when
// CMD could not be run). A test helper (verdict_test's RunBinary).
//
// Why a program of its own: Linux keeps a process's ru_maxrss across execve as the larger of the image it replaced
// and the new one, and a forked child starts as a copy of its parent's resident pages, so a test that forks and
// execs the binary it measures reads its own resident size whenever that is the larger (a test process holding 67
// MiB reported every child's peak as >= 67 MiB). This program is small when it forks: what it reports is CMD's.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: peak_rss OUT -- CMD [ARGS...]\n");
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    execv(argv[3], argv + 3);
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) != pid) return 127;
  if (FILE* out = std::fopen(argv[1], "w")) {
    std::fprintf(out, "%ld\n", usage.ru_maxrss);
    std::fclose(out);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
