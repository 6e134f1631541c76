// The EndRecord says a stream was closed on purpose and what the capture lost on the way (format.h). It is
// written by the drain's final pass, after every other record, so its counts are final; the reason is set by
// whoever stops the engine (the exit handler, or the signal path of signal_close.h).
#include <cstring>

#include "shim/capture_engine.h"
#include "shim/runtime.h"

namespace ttrace::shim {

void CaptureEngine::SetEndReason(format::EndReason reason, int signal) {
  end_signal_.store(signal);
  end_reason_.store(static_cast<uint32_t>(reason));
}

void CaptureEngine::WriteEnd() {
  if (sink_failed_) return;
  format::EndRecord e;
  memset(&e, 0, sizeof e);
  {
    std::lock_guard<std::mutex> lock(mu_);
    e.ops = order_.seqs();
    e.records = records_written_.load();
    e.tensors = stats_.tensors;
    e.tensor_bytes = stats_.tensor_bytes;
    e.records_dropped = records_dropped_;
    e.payloads_dropped = stats_.dropped;
    for (uint32_t r = 0; r < format::kDropReasons; ++r) e.dropped[r] = stats_.dropped_by_reason[r];
  }
  e.reason = end_reason_.load();
  e.signal = end_signal_.load();
  e.mode = static_cast<uint32_t>(config_.mode);
  if (!config_.capture_tensors || config_.ring_bytes == 0) e.flags |= format::kTensorsOff;
  e.t_ns = MonotonicNs();
  Append(format::RecordType::kEnd, &e, sizeof e, nullptr, 0);
}

}  // namespace ttrace::shim
