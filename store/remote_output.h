// RemoteOutput: a StreamOutput that streams to a ttrace-collector (include/ttrace/wire.h) and falls back to a
// local StreamFile when the collector cannot be reached or goes away. The shim's collector sink; also the client
// of the collector's tests and benchmark.
//
// Delivery: the collector acknowledges every frame it has written. Frames sent but not yet acknowledged are kept
// (up to `window_bytes`; past it, WriteFrame waits for acknowledgements, at most `timeout_ms`), in buffers that
// are reused once acknowledged (at most two kept spare). On failover (a
// refused handshake, a connect, send or acknowledgement failing or timing out, the collector closing) the
// local file gets the stream header with FileHeader.flags bit kFileFailover and every unacknowledged frame, then
// the rest of the stream: records in flight are delivered, at least once (a frame the collector wrote but had
// not acknowledged yet is in both stores). Frames in the local file are numbered from 0. `on_failover` is called
// once, with the reason. Nothing waits longer than `timeout_ms` at a time: connect, handshake, each send, the
// wait for the last acknowledgements at Finish.
//
// Not thread-safe: one TraceWriter calls it, on one thread. Absl-free (the shim links it statically).
#ifndef TTRACE_STORE_REMOTE_OUTPUT_H_
#define TTRACE_STORE_REMOTE_OUTPUT_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store/stream_file.h"
#include "store/trace_writer.h"
#include "ttrace/wire.h"

namespace ttrace::store {

struct RemoteOptions {
  std::string endpoint;  // unix:PATH or tcp:HOST:PORT
  std::string token;     // sent in the hello (TCP collectors require it)
  int timeout_ms = 5000;
  size_t window_bytes = 64u << 20;
  std::string fallback_path;  // the local stream file on failover
  StreamFileOptions fallback_options;
  std::function<void(const std::string& reason)> on_failover;
};

class RemoteOutput : public StreamOutput {
 public:
  explicit RemoteOutput(RemoteOptions options);
  ~RemoteOutput() override;

  bool Begin(const format::FileHeader& header, std::string* error) override;
  bool WriteFrame(const char* frame, size_t bytes, const format::IndexEntry& entry, std::string* error) override;
  bool Finish(const StreamSummary& summary, std::string* error) override;

  bool failed_over() const { return local_ != nullptr || failover_tried_; }
  const std::string& failover_reason() const { return failover_reason_; }
  const std::string& welcome() const { return welcome_; }  // the collector's stream name, once welcomed
  uint64_t acked() const { return acked_; }

 private:
  bool Connect(std::string* why);
  bool Handshake(std::string* why);
  bool SendFrame(const std::string& frame, const format::IndexEntry& entry, std::string* why);
  bool ReadAcks(int wait_ms, std::string* why);  // reads what acknowledgements are there, waiting up to wait_ms
  bool Failover(const std::string& reason, std::string* error);
  bool WriteLocal(const std::string& frame, format::IndexEntry entry, std::string* error);
  void CloseSocket();

  RemoteOptions options_;
  int fd_ = -1;
  format::FileHeader header_{};
  std::string welcome_;
  struct Pending {
    std::string frame;  // FrameHeader + payload as sent
    format::IndexEntry entry;
  };
  std::deque<Pending> unacked_;
  static constexpr size_t kSpareFrames = 2;  // buffers of acknowledged frames kept for the next copies
  std::vector<std::string> spare_;
  size_t unacked_bytes_ = 0;
  uint64_t sent_ = 0, acked_ = 0;
  std::string ack_buf_;
  std::unique_ptr<StreamFile> local_;
  uint32_t local_frames_ = 0;
  bool failover_tried_ = false;
  std::string failover_reason_;
};

}  // namespace ttrace::store

#endif  // TTRACE_STORE_REMOTE_OUTPUT_H_
