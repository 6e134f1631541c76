// One thread per connection: a rank streams a few MB/s to GB/s and a job has at most thousands of ranks per
// collector, so blocking reads on a thread each are simpler than an event loop and fast enough (bench/
// collector_bench). Writes to the store happen on the connection's thread; streams never share a file. A frame's
// payload is received straight into the session's frame buffer (Session::InputWindow), checksummed there and
// written from there: the only copies are the kernel's (socket to user, user to file). Small units (entries,
// frame headers, handshake) go through a 64 KiB buffer, which bounds the bytes copied per frame.
#include "collector/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace ttrace::collector {
namespace {

bool SendAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t w = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

void SetTimeout(int fd, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

Server::Server(const ServerOptions& options, Metrics* metrics, std::ostream* log)
    : options_(options), metrics_(metrics), log_(log), store_(options.dir) {}

std::unique_ptr<Server> Server::Start(const ServerOptions& options, Metrics* metrics, std::ostream* log,
                                      std::string* error) {
  if (options.listen.kind == store::Endpoint::Kind::kTcp && (!options.session.require_token || options.session.token.empty())) {
    *error = "TCP needs a token (--token-file)";
    return nullptr;
  }
  std::unique_ptr<Server> s(new Server(options, metrics, log));
  if (pipe2(s->stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    return nullptr;
  }
  if (options.listen.kind == store::Endpoint::Kind::kUnix) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, options.listen.path.data(), options.listen.path.size());
    struct stat st;
    if (lstat(options.listen.path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        *error = options.listen.path + " exists and is not a socket";
        return nullptr;
      }
      ::unlink(options.listen.path.c_str());  // a socket left by an earlier collector
    }
    s->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const mode_t old = umask(0177);  // the socket is created 0600
    const int rc = s->listen_fd_ < 0 ? -1 : ::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    umask(old);
    if (rc != 0 || ::chmod(options.listen.path.c_str(), 0600) != 0) {
      *error = "cannot bind " + options.listen.path + ": " + strerror(errno);
      return nullptr;
    }
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(options.listen.port);
    int rc = getaddrinfo(options.listen.host.empty() ? nullptr : options.listen.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
      *error = "cannot resolve " + options.listen.host + ": " + gai_strerror(rc);
      return nullptr;
    }
    std::string why = "no address";
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0) {
        s->listen_fd_ = fd;
        break;
      }
      why = strerror(errno);
      ::close(fd);
    }
    freeaddrinfo(res);
    if (s->listen_fd_ < 0) {
      *error = "cannot bind " + options.listen.text() + ": " + why;
      return nullptr;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    s->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  if (::listen(s->listen_fd_, 1024) != 0) {
    *error = std::string("listen: ") + strerror(errno);
    return nullptr;
  }
  return s;
}

Server::~Server() {
  Reap(true);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (options_.listen.kind == store::Endpoint::Kind::kUnix && listen_fd_ >= 0) ::unlink(options_.listen.path.c_str());
  for (int fd : stop_pipe_)
    if (fd >= 0) ::close(fd);
}

void Server::Stop() {
  const char b = 1;
  [[maybe_unused]] ssize_t w = ::write(stop_pipe_[1], &b, 1);
}

void Server::Log(const std::string& line) {
  if (log_ == nullptr) return;
  std::lock_guard<std::mutex> lock(log_mu_);
  *log_ << "ttrace-collector: " << line << "\n";
  log_->flush();
}

void Server::Reap(bool all) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (all && !it->finished.load()) ::shutdown(it->fd, SHUT_RDWR);  // its read returns: the session ends
    if (all || it->finished.load()) {
      it->thread.join();
      ::close(it->fd);
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::Run() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
  while (true) {
    int rc = ::poll(fds, 2, 1000);
    if (rc < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) break;
    Reap(false);
    if (rc <= 0 || !(fds[0].revents & POLLIN)) continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string peer = "unix";
    if (addr.ss_family == AF_INET || addr.ss_family == AF_INET6) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      char host[INET6_ADDRSTRLEN] = {};
      const void* a = addr.ss_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&addr)->sin_addr)
                                                : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr);
      inet_ntop(addr.ss_family, a, host, sizeof host);
      peer = host;
    }
    const uint64_t id = next_id_++;
    if (live_.load() >= options_.max_connections) {
      Metrics::Add(metrics_->refused[static_cast<uint32_t>(wire::RefuseReason::kTooManyConnections)], 1);
      wire::Reply r{};
      memcpy(r.magic, wire::kReplyMagic, sizeof r.magic);
      r.version = wire::kProtocolVersion;
      r.reply_size = sizeof r;
      r.status = static_cast<uint32_t>(wire::ReplyStatus::kRefused);
      r.reason = static_cast<uint32_t>(wire::RefuseReason::kTooManyConnections);
      SendAll(fd, std::string(reinterpret_cast<const char*>(&r), sizeof r));
      ::close(fd);
      Log("connection " + std::to_string(id) + " (" + peer + "): refused: too many connections");
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    connections_.emplace_back();
    Connection* c = &connections_.back();
    c->fd = fd;
    ++live_;
    c->thread = std::thread(&Server::Serve, this, c, id, peer);
  }
}

void Server::Serve(Connection* c, uint64_t id, std::string peer) {
  const int fd = c->fd;
  SetTimeout(fd, options_.handshake_timeout_ms);
  {
    Session session(&store_, metrics_, options_.session);
    std::vector<char> buf(64 << 10);
    bool handshaking = true;
    bool alive = true;
    while (!session.done()) {
      size_t room;
      char* window = session.InputWindow(&room);
      const bool direct = room >= buf.size() / 4;
      ssize_t n = direct ? ::recv(fd, window, room, 0) : ::recv(fd, buf.data(), buf.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        session.End(n == 0);
        alive = n == 0;
      } else if (direct) {
        session.Received(static_cast<size_t>(n));
      } else {
        session.Feed(buf.data(), static_cast<size_t>(n));
      }
      const std::string out = session.TakeOutput();
      if (!out.empty() && alive && !SendAll(fd, out)) alive = false;
      if (handshaking && !session.stream_path().empty()) {
        handshaking = false;
        SetTimeout(fd, 0);
        Log("connection " + std::to_string(id) + " (" + peer + "): " + session.stream_path());
      }
    }
    const std::string what = session.stream_path().empty() ? "" : session.stream_path() + ": ";
    Log("connection " + std::to_string(id) + " (" + peer + "): " + what +
        (session.close_reason().empty() ? "closed after " + std::to_string(session.frames()) + " frames"
                                        : session.close_reason()));
  }
  ::shutdown(fd, SHUT_RDWR);  // closed by Reap, after the join (the descriptor stays ours until then)
  --live_;
  c->finished.store(true);
}

}  // namespace ttrace::collector
