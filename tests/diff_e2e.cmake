# ttrace diff end to end (tests/diff_e2e_test.cc); included from tests/CMakeLists.txt after its dependency check.
ttrace_cc_test(NAME diff_e2e_test SRCS diff_e2e_test.cc e2e_util.cc DEPS ttrace_analyzer TIMEOUT 900)
target_compile_definitions(diff_e2e_test PRIVATE TTRACE_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(diff_e2e_test ${TTRACE_E2E_DEPS} gpt)

# An expert-parallel MoE layer and an FSDP-sharded MLP (tests/moe_diff_e2e_test.cc): token exchanges that are not a
# pipeline, weights all-gathered from shards.
ttrace_cc_test(NAME moe_diff_e2e_test SRCS moe_diff_e2e_test.cc e2e_util.cc DEPS ttrace_analyzer TIMEOUT 120)
target_compile_definitions(moe_diff_e2e_test PRIVATE TTRACE_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(moe_diff_e2e_test ${TTRACE_E2E_DEPS} moe_ep fsdp_mlp)
