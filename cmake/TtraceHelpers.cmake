# ttrace_cc_library / ttrace_cc_test: one helper per target kind, after Abseil's CMake helpers.
#
#   ttrace_cc_library(NAME foo SRCS a.cc b.cc DEPS absl::status [PUBLIC_INCLUDES dir] [SHARED])
#   ttrace_cc_test(NAME foo_test SRCS foo_test.cc DEPS foo [LABELS gpu] [ENV "K=V" ...] [TEST_PREFIX p.])
#   (label: foo_test too; TEST_PREFIX: for a second binary built from the same tests)
#
# Every library sees the public include/ dir and the CUDA headers (never the CUDA libraries).

function(ttrace_cc_library)
  cmake_parse_arguments(T "SHARED;STATIC" "NAME" "SRCS;DEPS;PUBLIC_INCLUDES" ${ARGN})
  if(T_SHARED)
    add_library(${T_NAME} SHARED ${T_SRCS})
  else()
    add_library(${T_NAME} STATIC ${T_SRCS})
  endif()
  target_include_directories(${T_NAME} PUBLIC
    "${PROJECT_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}/include" ${T_PUBLIC_INCLUDES})
  target_include_directories(${T_NAME} SYSTEM PUBLIC "${TTRACE_CUDA_INCLUDE}")
  target_compile_options(${T_NAME} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(${T_NAME} PUBLIC ${T_DEPS})
endfunction()

function(ttrace_cc_test)
  if(NOT TTRACE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "NAME;TIMEOUT;TEST_PREFIX" "SRCS;DEPS;LABELS;ENV" ${ARGN})
  add_executable(${T_NAME} ${T_SRCS})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
  target_include_directories(${T_NAME} PRIVATE "${PROJECT_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}/include")
  target_include_directories(${T_NAME} SYSTEM PRIVATE "${TTRACE_CUDA_INCLUDE}")
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main Threads::Threads)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # Every test is labelled with its binary's name too (ctest -L shim_capture_engine_test: tools/sanitize.sh).
  # An empty value would shift the PROPERTIES key/value list: ENVIRONMENT only when there is one.
  set(labels ${T_NAME} ${T_LABELS})
  set(props TIMEOUT ${T_TIMEOUT} LABELS "${labels}")
  list(APPEND T_ENV ${TTRACE_SANITIZER_ENV})
  list(LENGTH T_ENV env_entries)
  if(env_entries GREATER 1)
    # gtest_discover_tests's cmake_parse_arguments unescapes the list: only the first entry would reach the tests.
    message(FATAL_ERROR "ttrace_cc_test(${T_NAME}): ENV takes one entry (${T_ENV})")
  endif()
  if(T_ENV)
    list(APPEND props ENVIRONMENT "${T_ENV}")
  endif()
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST TEST_PREFIX "${T_TEST_PREFIX}" PROPERTIES ${props})
endfunction()
