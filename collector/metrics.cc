// Label values are our own fixed strings (reason names), never client data, so they need no escaping beyond
// what the names already avoid.
#include "collector/metrics.h"

namespace ttrace::collector {
namespace {

void Counter(std::string* out, const char* name, const char* help, uint64_t v) {
  *out += std::string("# HELP ttrace_collector_") + name + " " + help + "\n# TYPE ttrace_collector_" + name +
          " counter\nttrace_collector_" + name + " " + std::to_string(v) + "\n";
}

void Head(std::string* out, const char* name, const char* help, const char* type) {
  *out += std::string("# HELP ttrace_collector_") + name + " " + help + "\n# TYPE ttrace_collector_" + name + " " +
          type + "\n";
}

void Labelled(std::string* out, const char* name, const char* label, const char* value, uint64_t v) {
  *out += std::string("ttrace_collector_") + name + "{" + label + "=\"" + value + "\"} " + std::to_string(v) + "\n";
}

uint64_t Get(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

}  // namespace

std::string Metrics::Render() const {
  std::string out;
  Counter(&out, "connections_total", "Connections accepted.", Get(connections));
  Head(&out, "connections_active", "Connections open now.", "gauge");
  out += "ttrace_collector_connections_active " + std::to_string(active.load(std::memory_order_relaxed)) + "\n";
  Head(&out, "connections_refused_total", "Connections refused at the handshake, by reason.", "counter");
  for (uint32_t r = 1; r < wire::kRefuseReasons; ++r)
    Labelled(&out, "connections_refused_total", "reason", wire::RefuseReasonName(r), Get(refused[r]));
  Head(&out, "streams_closed_total", "Streams finished: closed (ended with an end record) or cut.", "counter");
  Labelled(&out, "streams_closed_total", "state", "closed", Get(closed_clean));
  Labelled(&out, "streams_closed_total", "state", "cut", Get(closed_cut));
  Counter(&out, "frames_total", "Frames written to the store.", Get(frames));
  Counter(&out, "records_total", "Records in the frames written.", Get(records));
  Counter(&out, "bytes_in_total", "Bytes read from clients.", Get(bytes_in));
  Counter(&out, "bytes_written_total", "Bytes of stream headers and frames written to the store.", Get(bytes_written));
  Head(&out, "frames_lost_total", "Frames lost, whole or in part, by reason.", "counter");
  for (uint32_t r = 1; r <= 4; ++r)
    Labelled(&out, "frames_lost_total", "reason", format::LossReasonName(r), Get(frames_lost[r]));
  Head(&out, "bytes_lost_total", "Bytes of the frames lost, as far as known, by reason.", "counter");
  for (uint32_t r = 1; r <= 4; ++r)
    Labelled(&out, "bytes_lost_total", "reason", format::LossReasonName(r), Get(bytes_lost[r]));
  Head(&out, "client_payloads_dropped_total", "Payloads the clients reported dropping (end records), by reason.",
       "counter");
  for (uint32_t r = 0; r < format::kDropReasons; ++r)
    Labelled(&out, "client_payloads_dropped_total", "reason", format::DropReasonName(r), Get(client_dropped[r]));
  return out;
}

}  // namespace ttrace::collector
