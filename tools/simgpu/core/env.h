// Internal helpers of the simgpu core (not part of its API): strict number parsing and the fatal-error exit used
// for malformed configuration.
#ifndef TTRACE_TOOLS_SIMGPU_CORE_ENV_H_
#define TTRACE_TOOLS_SIMGPU_CORE_ENV_H_

#include <cstdarg>
#include <string>

namespace simgpu {

// Non-negative decimal integer of at most 18 digits, nothing else (no sign, spaces or suffix).
bool ParseDecimal(const std::string& text, long* out);

// Prints the message to stderr and exits with status 2 without running exit handlers: it may be called on a
// stream worker while other threads still use the process's static state.
[[noreturn]] void Die(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace simgpu

#endif  // TTRACE_TOOLS_SIMGPU_CORE_ENV_H_
