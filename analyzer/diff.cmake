# `ttrace diff` (diff.h): alignment, shard inference, differential thresholds; linked into the ttrace CLI.
target_sources(ttrace_analyzer PRIVATE align.cc shard.cc diff.cc diff_sharded.cc diff_sharded_reduce.cc
                                       diff_batched.cc diff_calibrate.cc diff_cli.cc
                                       pipeline.cc dataflow.cc diff_operands.cc)
ttrace_cc_test(NAME diff_test SRCS diff_test.cc DEPS ttrace_analyzer_test_util)
ttrace_cc_test(NAME pipeline_test SRCS pipeline_test.cc DEPS ttrace_analyzer)
ttrace_cc_test(NAME dataflow_test SRCS dataflow_test.cc DEPS ttrace_analyzer)
