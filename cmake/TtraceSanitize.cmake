# TTRACE_SANITIZE=address,undefined | thread: every C and C++ target (the shim, simgpu's libraries, the
# analyzer, the tests) is built with these sanitizers; a finding aborts the process, so the test that ran it fails.
# Use a build directory of its own (tools/sanitize.sh: build-asan, build-tsan). CUDA device code is not built
# (the root skips nvcc): the sanitizers instrument host code only, and the GPU tests need a device anyway.
#
# The runtime options every test gets (ttrace_cc_test adds them to each test's environment):
# - verify_asan_link_order=0: end-to-end tests LD_PRELOAD libttrace.so into simgpu programs, so the ASan runtime
#   is not first in the initial library list. Every program and library here is instrumented and links the same
#   shared runtime, so the order is harmless (ASan's check is for uninstrumented programs).
# - detect_leaks=0 for the address build: LeakSanitizer runs under ptrace, which this CI's containers forbid,
#   and the shim's process-lifetime singletons are deliberately never freed (it may not run destructors in a
#   host process). Bounded memory is tested by the shim's own tests.
# - halt_on_error: the first finding ends the process with a report on stderr.
set(TTRACE_SANITIZE "" CACHE STRING "Sanitizers for every C/C++ target: address,undefined or thread (empty: none)")

if(TTRACE_SANITIZE)
  string(REPLACE "," ";" _ttrace_sanitizers "${TTRACE_SANITIZE}")
  foreach(s ${_ttrace_sanitizers})
    if(NOT s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "TTRACE_SANITIZE: unknown sanitizer '${s}' (address, undefined, thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _ttrace_sanitizers AND "address" IN_LIST _ttrace_sanitizers)
    message(FATAL_ERROR "TTRACE_SANITIZE: thread and address cannot be combined; use two build directories")
  endif()
  # -O1 -g1: what the sanitizers' manuals advise (fast enough to run, line numbers in reports), and half the
  # compile time of -O2 -g on this project (they come after the build type's flags, so they win).
  set(_ttrace_san_flags "-fsanitize=${TTRACE_SANITIZE}" -fno-omit-frame-pointer -fno-sanitize-recover=all -O1 -g1)
  # Not UBSan's `enum` check: it only sees enums without a fixed underlying type, which here are the vendor C
  # enums (cublasOperation_t, cudaStreamCaptureMode, cublasComputeType_t, ...; ours are `enum class` or name
  # their type). Their values come from the application, any int in C, and NVIDIA's libraries answer an
  # unknown one with an error status: the shim must pass it through and simgpu must reject it (tests pass 9 and
  # 12345 on purpose), not abort on loading it.
  if("undefined" IN_LIST _ttrace_sanitizers)
    list(APPEND _ttrace_san_flags -fno-sanitize=enum)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_ttrace_san_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=${TTRACE_SANITIZE}>")
  # One entry: gtest_discover_tests's PROPERTIES pass through cmake_parse_arguments, which drops the escaping of
  # a list inside a value, so an ENVIRONMENT of two entries reaches the tests as its first only (ttrace_cc_test
  # refuses more than one). UBSan needs no options: -fno-sanitize-recover=all above makes its findings fatal.
  if("thread" IN_LIST _ttrace_sanitizers)
    set(TTRACE_SANITIZER_ENV "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")
  elseif("address" IN_LIST _ttrace_sanitizers)
    set(TTRACE_SANITIZER_ENV
      "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:halt_on_error=1:abort_on_error=0:strict_string_checks=1")
  endif()
  # For code that runs before the sanitizer runtime is initialized, where instrumented code crashes the process at
  # start: ifunc resolvers of target_clones (GCC instruments them; the loader runs them while relocating), and the
  # shim's interposed dlsym (the runtime's own initialization calls dlsym). Such files are built without.
  set(TTRACE_NO_SANITIZE_OPTIONS -fno-sanitize=all)
  message(STATUS "ttrace: sanitizers ${TTRACE_SANITIZE}")
endif()

# TTRACE_FUZZ (clang only): fuzz/'s harnesses become libFuzzer binaries, and every C/C++ target gets libFuzzer's
# coverage instrumentation. Elsewhere the harnesses replay their corpus (fuzz/CMakeLists.txt).
option(TTRACE_FUZZ "Build fuzz/'s harnesses with libFuzzer (clang)" OFF)
set(TTRACE_LIBFUZZER OFF)
if(TTRACE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TTRACE_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  set(TTRACE_LIBFUZZER ON)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>")
endif()
