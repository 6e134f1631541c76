// Blocking sockets with SO_SNDTIMEO / SO_RCVTIMEO bound every wait (splice(2) into the socket honours SO_SNDTIMEO
// too); acknowledgements are read without blocking after each frame, so the collector's side never fills up with
// unread acks.
#include "store/remote_output.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "store/crc32c.h"
#include "store/endpoint.h"

namespace ttrace::store {
namespace {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The pipe's size for splicing: a frame or a good part of it per vmsplice + splice pair. Below kMinPipe (a pipe
// created past the user's pipe-user-pages-soft gets 2 pages) frames go by send(2).
constexpr int kPipeBytes = 1 << 20;
constexpr size_t kMinPipe = 64u << 10;
// SO_SNDBUF of a splicing unix socket (the kernel doubles it, within net.core.wmem_max): the collector has a
// quarter of it queued when the client is woken to send more, time enough for the wake-up to cross CPUs. The
// queued bytes are the client's kept copies, so it costs no memory of its own. The 208 KiB default wakes both
// sides 4 to 5 times per MiB; 4 MiB cost the collector more per byte when both share a CPU (a cache's worth in
// flight); docs/design.md.
constexpr int kSpliceSendBuffer = 1 << 20;

// splice(2) into a socket whose peer is gone raises SIGPIPE on this thread (it has no MSG_NOSIGNAL); the host
// process must not die of it. Blocks SIGPIPE for the guard's life and takes back one raised meanwhile; a SIGPIPE
// pending before is not ours and stays.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    sigpending(&pending);
    pending_before_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeGuard() {
    const int saved = errno;
    sigset_t pending;
    if (!pending_before_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    if (sigismember(&old_, SIGPIPE) != 1) pthread_sigmask(SIG_UNBLOCK, &pipe_, nullptr);
    errno = saved;
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_, old_;
  bool pending_before_ = false;
};

bool RecvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// connect(2) within `timeout_ms`; the socket is blocking again afterwards.
bool ConnectWithin(int fd, const sockaddr* addr, socklen_t len, int timeout_ms) {
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, addr, len);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, timeout_ms) == 1 ? 0 : -1;
    if (rc == 0) {
      int err = 0;
      socklen_t l = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
      if (err != 0) {
        errno = err;
        rc = -1;
      }
    } else {
      errno = ETIMEDOUT;
    }
  }
  fcntl(fd, F_SETFL, flags);
  return rc == 0;
}

}  // namespace

RemoteOutput::RemoteOutput(RemoteOptions options) : options_(std::move(options)) {}

RemoteOutput::~RemoteOutput() { CloseSocket(); }

void RemoteOutput::CloseSocket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ClosePipe();
}

void RemoteOutput::ClosePipe() {
  for (int& p : pipe_) {
    if (p >= 0) ::close(p);
    p = -1;
  }
  splice_ = false;
}

void RemoteOutput::RefuseSplice(const char* call, int err) {
  ClosePipe();
  if (options_.on_splice_refused)
    options_.on_splice_refused(std::string(call) + "(2) refused (" + strerror(err) + "): frames go by send(2)");
  errno = err;
}

bool RemoteOutput::Send(const char* p, size_t n) {
  if (splice_) {
    if (Splice(p, n)) return true;
    if (splice_) return false;  // the socket failed (errno); otherwise splicing was refused before any byte went
  }
  return SendAll(fd_, p, n);
}

bool RemoteOutput::Splice(const char* p, size_t n) {
  SigpipeGuard guard;
  size_t done = 0;
  while (done < n) {
    iovec v{const_cast<char*>(p + done), std::min(n - done, pipe_capacity_)};
    const ssize_t in = ::vmsplice(pipe_[1], &v, 1, SPLICE_F_NONBLOCK);  // the pipe is empty: never waits
    if (in < 0 && errno == EINTR) continue;
    if (in <= 0) {
      if (done == 0 && in < 0 && errno != EAGAIN) RefuseSplice("vmsplice", errno);  // send(2) from now on
      if (in == 0) errno = EIO;
      return false;
    }
    size_t left = static_cast<size_t>(in);
    while (left > 0) {
      const ssize_t out = ::splice(pipe_[0], nullptr, fd_, nullptr, left, SPLICE_F_MOVE);
      if (out < 0 && errno == EINTR) continue;
      if (out <= 0) {
        const int err = out < 0 ? errno : EIO;
        if (done == 0 && left == static_cast<size_t>(in) && (err == EINVAL || err == ENOSYS || err == EPERM))
          RefuseSplice("splice", err);  // the socket takes no spliced pages: nothing of the frame went
        errno = err;
        return false;
      }
      left -= static_cast<size_t>(out);
      spliced_bytes_ += static_cast<uint64_t>(out);
    }
    done += static_cast<size_t>(in);
  }
  return true;
}

bool RemoteOutput::Connect(std::string* why) {
  Endpoint ep;
  if (!ParseEndpoint(options_.endpoint, &ep, why)) return false;
  if (ep.kind == Endpoint::Kind::kUnix) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, ep.path.data(), ep.path.size());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || !ConnectWithin(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr, options_.timeout_ms)) {
      *why = "cannot connect to " + options_.endpoint + ": " + strerror(errno);
      CloseSocket();
      return false;
    }
    if (options_.splice && ::pipe2(pipe_, O_CLOEXEC) == 0) {
      ::fcntl(pipe_[1], F_SETPIPE_SZ, kPipeBytes);  // may be refused (pipe-max-size, the user's pipe pages)
      const int capacity = ::fcntl(pipe_[1], F_GETPIPE_SZ);
      pipe_capacity_ = capacity > 0 ? static_cast<size_t>(capacity) : 0;
      splice_ = pipe_capacity_ >= kMinPipe;
      if (!splice_) ClosePipe();
    }
    if (splice_) {
      const int bytes = kSpliceSendBuffer;
      setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    }
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(ep.port);
    const int rc = getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
      *why = "cannot resolve " + ep.host + ": " + gai_strerror(rc);
      return false;
    }
    *why = "no address";
    for (addrinfo* a = res; a != nullptr && fd_ < 0; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd_ < 0) continue;
      if (!ConnectWithin(fd_, a->ai_addr, a->ai_addrlen, options_.timeout_ms)) {
        *why = "cannot connect to " + options_.endpoint + ": " + strerror(errno);
        CloseSocket();
      }
    }
    freeaddrinfo(res);
    if (fd_ < 0) return false;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  timeval tv{options_.timeout_ms / 1000, (options_.timeout_ms % 1000) * 1000};
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return true;
}

bool RemoteOutput::Handshake(std::string* why) {
  wire::Hello hello;
  memset(&hello, 0, sizeof hello);
  memcpy(hello.magic, wire::kHelloMagic, sizeof hello.magic);
  hello.version = wire::kProtocolVersion;
  hello.hello_size = sizeof hello;
  const size_t token = std::min<size_t>(options_.token.size(), wire::kMaxTokenBytes);
  hello.token_bytes = static_cast<uint32_t>(token);
  std::string out(reinterpret_cast<const char*>(&hello), sizeof hello);
  out.append(options_.token.data(), token);
  out.append(reinterpret_cast<const char*>(&header_), sizeof header_);
  wire::Reply reply;
  if (!SendAll(fd_, out.data(), out.size()) || !RecvAll(fd_, reinterpret_cast<char*>(&reply), sizeof reply)) {
    *why = options_.endpoint + ": no answer to the handshake (" + (errno ? strerror(errno) : "closed") + ")";
    return false;
  }
  if (memcmp(reply.magic, wire::kReplyMagic, sizeof reply.magic) != 0) {
    *why = options_.endpoint + ": not a ttrace collector";
    return false;
  }
  if (reply.reply_size > sizeof reply) {
    std::string rest(std::min<size_t>(reply.reply_size - sizeof reply, 4096), '\0');
    if (!RecvAll(fd_, rest.data(), rest.size())) {
      *why = options_.endpoint + ": short answer to the handshake";
      return false;
    }
  }
  reply.message[sizeof reply.message - 1] = '\0';
  switch (static_cast<wire::ReplyStatus>(reply.status)) {
    case wire::ReplyStatus::kWelcome:
      welcome_ = reply.message;
      return true;
    case wire::ReplyStatus::kVersionMismatch:
      *why = options_.endpoint + " speaks collector protocol " + std::to_string(reply.version) + ", this shim " +
             std::to_string(wire::kProtocolVersion);
      return false;
    default:
      *why = options_.endpoint + " refused the stream: " + wire::RefuseReasonName(reply.reason) +
             (reply.message[0] ? std::string(" (") + reply.message + ")" : std::string());
      return false;
  }
}

bool RemoteOutput::Begin(const format::FileHeader& header, std::string* error) {
  header_ = header;
  std::string why;
  if (Connect(&why) && Handshake(&why)) return true;
  return Failover(why, error);
}

bool RemoteOutput::ReadAcks(int wait_ms, std::string* why) {
  pollfd p{fd_, POLLIN, 0};
  const int rc = ::poll(&p, 1, wait_ms);
  if (rc < 0 && errno != EINTR) {
    *why = std::string("poll: ") + strerror(errno);
    return false;
  }
  if (rc <= 0) return true;
  char buf[4096];
  ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    *why = "the collector closed the connection" + std::string(n < 0 ? std::string(": ") + strerror(errno) : "");
    return false;
  }
  ack_buf_.append(buf, static_cast<size_t>(n));
  size_t pos = 0;
  for (; pos + sizeof(wire::Ack) <= ack_buf_.size(); pos += sizeof(wire::Ack)) {
    wire::Ack ack;
    memcpy(&ack, ack_buf_.data() + pos, sizeof ack);
    if (ack.magic != wire::kAckMagic || ack.frames <= acked_ || ack.frames > sent_) {
      *why = "bad acknowledgement from the collector";
      return false;
    }
    while (acked_ < ack.frames) {
      unacked_bytes_ -= unacked_.front().wire.size();
      if (spare_.size() < kSpareFrames) spare_.push_back(std::move(unacked_.front().wire));
      unacked_.pop_front();
      ++acked_;
    }
  }
  ack_buf_.erase(0, pos);
  return true;
}

bool RemoteOutput::WriteFrame(const char* frame, size_t bytes, const format::IndexEntry& entry, std::string* error) {
  if (local_ != nullptr) return WriteLocal(frame, bytes, entry, error);
  if (failover_tried_) {
    if (error) *error = failover_reason_;
    return false;
  }
  format::IndexEntry e = entry;
  e.offset = 0;
  e.entry_crc = Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
  // The copy kept for failover is also what is sent (entry and frame, contiguous: one send, or spliced from these
  // pages); it reuses an acknowledged frame's buffer: no allocation (and no fresh pages to fault in) per frame once
  // the window is warm. It is not written to again until acknowledged.
  std::string wire;
  if (!spare_.empty()) {
    wire.swap(spare_.back());
    spare_.pop_back();
  }
  wire.resize(sizeof e + bytes);
  memcpy(wire.data(), &e, sizeof e);
  memcpy(wire.data() + sizeof e, frame, bytes);
  unacked_.push_back(Pending{std::move(wire), entry});
  const std::string& sent = unacked_.back().wire;
  unacked_bytes_ += sent.size();
  ++sent_;
  std::string why;
  if (!Send(sent.data(), sent.size())) {
    why = "sending to " + options_.endpoint + " failed: " + (errno == EAGAIN ? "timed out" : strerror(errno));
    return Failover(why, error);
  }
  if (!ReadAcks(0, &why)) return Failover(why, error);
  const int64_t deadline = NowMs() + options_.timeout_ms;
  while (unacked_bytes_ > options_.window_bytes) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) return Failover(options_.endpoint + ": no acknowledgement in " +
                                       std::to_string(options_.timeout_ms) + " ms", error);
    if (!ReadAcks(static_cast<int>(left), &why)) return Failover(why, error);
  }
  return true;
}

bool RemoteOutput::WriteLocal(const char* frame, size_t bytes, format::IndexEntry entry, std::string* error) {
  std::string copy(frame, bytes);
  format::FrameHeader fh;
  memcpy(&fh, copy.data(), sizeof fh);
  fh.frame_index = local_frames_;
  fh.header_crc = Crc32c(&fh, offsetof(format::FrameHeader, header_crc));
  memcpy(copy.data(), &fh, sizeof fh);
  entry.frame_index = local_frames_;
  entry.frame_header_crc = fh.header_crc;
  entry.offset = 0;
  entry.entry_crc = 0;
  if (!local_->WriteFrame(copy.data(), copy.size(), entry, error)) return false;
  ++local_frames_;
  return true;
}

bool RemoteOutput::Failover(const std::string& reason, std::string* error) {
  failover_tried_ = true;
  failover_reason_ = reason;
  CloseSocket();
  if (options_.on_failover) options_.on_failover(reason);
  format::FileHeader h = header_;
  if (!welcome_.empty()) {
    h.flags |= format::kFileFailover;  // the stream's start is in the collector's store
    h.header_crc = Crc32c(&h, offsetof(format::FileHeader, header_crc));
  }
  std::string why;
  local_ = StreamFile::Create(options_.fallback_path, options_.fallback_options, &why);
  if (local_ == nullptr || !local_->Begin(h, &why)) {
    local_.reset();
    if (error) *error = reason + "; and the local fallback failed: " + why;
    return false;
  }
  for (const Pending& p : unacked_)
    if (!WriteLocal(p.wire.data() + sizeof(format::IndexEntry), p.wire.size() - sizeof(format::IndexEntry), p.entry,
                    error))
      return false;
  unacked_.clear();
  unacked_bytes_ = 0;
  return true;
}

bool RemoteOutput::Finish(const StreamSummary& summary, std::string* error) {
  if (local_ == nullptr && !failover_tried_ && fd_ >= 0) {
    // Every frame must be acknowledged; then the collector finishes the stream and closes.
    ::shutdown(fd_, SHUT_WR);
    const int64_t deadline = NowMs() + options_.timeout_ms;
    std::string why;
    bool ok = true;
    while (acked_ < sent_ && ok) {
      const int64_t left = deadline - NowMs();
      if (left <= 0) {
        why = options_.endpoint + ": " + std::to_string(sent_ - acked_) + " frames not acknowledged in " +
              std::to_string(options_.timeout_ms) + " ms";
        ok = false;
        break;
      }
      ok = ReadAcks(static_cast<int>(left), &why);
    }
    if (ok) {
      // Wait for the collector to close (its stream is finished by then), within what is left of the time.
      char b;
      pollfd p{fd_, POLLIN, 0};
      const int64_t left = std::max<int64_t>(0, deadline - NowMs());
      if (::poll(&p, 1, static_cast<int>(left)) == 1) {
        const ssize_t r = ::recv(fd_, &b, 1, MSG_DONTWAIT);
        (void)r;
      }
      CloseSocket();
      return true;
    }
    if (!Failover(why, error)) return false;
  }
  if (local_ == nullptr) {
    if (error) *error = failover_reason_;
    return false;
  }
  StreamSummary local = summary;
  local.frames = local_->frames();
  local.records = local_->records();
  local.bytes = local_->bytes();
  const bool ok = local_->Finish(local, error);
  return ok;
}

}  // namespace ttrace::store
