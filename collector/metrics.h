// Metrics: the collector's counters, updated by every connection (relaxed atomics) and rendered in Prometheus
// text exposition format (version 0.0.4) for --metrics-port. Names (all prefixed ttrace_collector_):
//   connections_total, connections_active, connections_refused_total{reason}, streams_closed_total{state},
//   frames_total, records_total, bytes_in_total (bytes read from clients), bytes_written_total (bytes of frames
//   and headers written to the store), frames_lost_total{reason}, bytes_lost_total{reason} (store::LossReason),
//   client_payloads_dropped_total{reason} (what the shims reported dropping, from their EndRecords).
#ifndef TTRACE_COLLECTOR_METRICS_H_
#define TTRACE_COLLECTOR_METRICS_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "ttrace/format.h"
#include "ttrace/wire.h"

namespace ttrace::collector {

struct Metrics {
  std::atomic<uint64_t> connections{0};
  std::atomic<int64_t> active{0};
  std::atomic<uint64_t> refused[wire::kRefuseReasons] = {};
  std::atomic<uint64_t> closed_clean{0}, closed_cut{0};
  std::atomic<uint64_t> frames{0}, records{0}, bytes_in{0}, bytes_written{0};
  std::atomic<uint64_t> frames_lost[8] = {};  // by format::LossReason
  std::atomic<uint64_t> bytes_lost[8] = {};
  std::atomic<uint64_t> client_dropped[format::kDropReasons] = {};

  static void Add(std::atomic<uint64_t>& c, uint64_t n) { c.fetch_add(n, std::memory_order_relaxed); }
  std::string Render() const;  // Prometheus text
};

}  // namespace ttrace::collector

#endif  // TTRACE_COLLECTOR_METRICS_H_
