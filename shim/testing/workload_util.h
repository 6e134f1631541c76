// What the test programs under shim/testing share (they are separate executables, each driving one library as an
// application would): Die on a failed call naming the call and its status, the CHECK_* macros over each library's
// status type, EnvInt for their knobs, and WriteOperand, the writer of the operand dump operands.h reads.
// Header-only; the CHECK_* macros name vendor types and are usable once the program includes that vendor's header.
#ifndef TTRACE_SHIM_TESTING_WORKLOAD_UTIL_H_
#define TTRACE_SHIM_TESTING_WORKLOAD_UTIL_H_

#include <errno.h>  // program_invocation_short_name (GNU)

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace ttrace::shim::testing {

// "<program>: <call> failed (<status>)" on stderr, exit status 1: the tests read a program's failure from both.
[[noreturn]] inline void Die(const char* what, long code) {
  fprintf(stderr, "%s: %s failed (%ld)\n", program_invocation_short_name, what, code);
  exit(1);
}

// "<program>: <what> failed", for a failure with no status to show.
[[noreturn]] inline void Die(const char* what) {
  fprintf(stderr, "%s: %s failed\n", program_invocation_short_name, what);
  exit(1);
}

// An integer from the environment, `fallback` when unset or empty.
inline int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' ? atoi(v) : fallback;
}

// One operand of the dump operands.h reads: u64 seq, u8 slot (format::TensorSlot), u64 bytes, the bytes.
inline void WriteOperand(FILE* f, uint64_t seq, uint8_t slot, const void* data, uint64_t bytes) {
  fwrite(&seq, 8, 1, f);
  fwrite(&slot, 1, 1, f);
  fwrite(&bytes, 8, 1, f);
  fwrite(data, 1, bytes, f);
}

}  // namespace ttrace::shim::testing

// Each library's call, checked: a status other than success ends the program through Die.
#define CHECK_CUDA(x) \
  if (cudaError_t e_ = (x); e_ != cudaSuccess) ::ttrace::shim::testing::Die(#x, e_)
#define CHECK_CU(x) \
  if (CUresult e_ = (x); e_ != CUDA_SUCCESS) ::ttrace::shim::testing::Die(#x, e_)
#define CHECK_CUBLAS(x) \
  if (cublasStatus_t s_ = (x); s_ != CUBLAS_STATUS_SUCCESS) ::ttrace::shim::testing::Die(#x, s_)
#define CHECK_CUDNN(x) \
  if (cudnnStatus_t s_ = (x); s_ != CUDNN_STATUS_SUCCESS) ::ttrace::shim::testing::Die(#x, s_)
#define CHECK_NCCL(x) \
  if (ncclResult_t r_ = (x); r_ != ncclSuccess) ::ttrace::shim::testing::Die(#x, r_)

#endif  // TTRACE_SHIM_TESTING_WORKLOAD_UTIL_H_
