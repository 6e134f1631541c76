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
// Unix sockets: each frame goes out by vmsplice(2) + splice(2) through a pipe of our own, straight from the kept
// copy (its pages are referenced by the socket's buffers, not copied into fresh ones): a unix socket otherwise
// copies every byte into newly allocated kernel pages that the collector frees on its CPU, and on this VM that
// page churn between CPUs cost 3-8 CPU s per GiB with one client (docs/design.md "ingest"). The kept copy is not
// touched until the collector has acknowledged the frame, so the bytes it reads are the bytes sent. splice(2) has
// no MSG_NOSIGNAL: SIGPIPE is blocked on the calling thread around it and one it raised is taken back (a SIGPIPE
// already pending is left alone). Where splicing is refused (seccomp, an old kernel: vmsplice or splice failing
// with EINVAL, ENOSYS or EPERM before any byte of the frame went) the frame and every later one go by send(2), and
// `on_splice_refused` is called once with the reason; where the pipe is small, frames go by send(2) from the start. TCP always uses send(2) (spliced pages cost the collector more there). The pipe costs two
// descriptors while connected. After a failover the kept copies are freed while a collector that resumes reading
// may still have some of them queued: it reads whatever the memory holds by then, its checksums reject the frame
// and it records the stream as malformed; those frames are in the local file.
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
  bool splice = true;  // unix sockets: frames by vmsplice + splice (below); false: by send(2), as over TCP
  std::string fallback_path;  // the local stream file on failover
  StreamFileOptions fallback_options;
  std::function<void(const std::string& reason)> on_failover;
  std::function<void(const std::string& reason)> on_splice_refused;  // once, when splicing falls back to send(2)
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
  uint64_t spliced_bytes() const { return spliced_bytes_; }  // bytes sent by splice(2) (unix sockets)

 private:
  bool Connect(std::string* why);
  bool Handshake(std::string* why);
  bool Send(const char* p, size_t n);    // send(2) or splice(2); false with errno on failure
  bool Splice(const char* p, size_t n);  // false with errno; sets splice_ false when splicing is refused
  void ClosePipe();
  void RefuseSplice(const char* call, int err);  // closes the pipe and says why, once
  bool ReadAcks(int wait_ms, std::string* why);  // reads what acknowledgements are there, waiting up to wait_ms
  bool Failover(const std::string& reason, std::string* error);
  bool WriteLocal(const char* frame, size_t bytes, format::IndexEntry entry, std::string* error);
  void CloseSocket();

  RemoteOptions options_;
  int fd_ = -1;
  int pipe_[2] = {-1, -1};  // unix sockets: what Splice() moves through
  size_t pipe_capacity_ = 0;
  bool splice_ = false;
  uint64_t spliced_bytes_ = 0;
  format::FileHeader header_{};
  std::string welcome_;
  struct Pending {
    std::string wire;  // as sent: the index entry (offset 0), then the frame (FrameHeader + payload)
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
