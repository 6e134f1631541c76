#include "store/endpoint.h"

#include <sys/un.h>

namespace ttrace::store {

std::string Endpoint::text() const {
  return kind == Kind::kUnix ? "unix:" + path : "tcp:" + host + ":" + std::to_string(port);
}

bool ParseEndpoint(const std::string& text, Endpoint* out, std::string* error) {
  *out = Endpoint{};
  if (text.rfind("unix:", 0) == 0) {
    out->kind = Endpoint::Kind::kUnix;
    out->path = text.substr(5);
    if (out->path.empty() || out->path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      *error = "unix socket path empty or longer than " + std::to_string(sizeof(sockaddr_un{}.sun_path) - 1);
      return false;
    }
    return true;
  }
  if (text.rfind("tcp:", 0) == 0) {
    out->kind = Endpoint::Kind::kTcp;
    const std::string rest = text.substr(4);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      *error = "expected tcp:HOST:PORT";
      return false;
    }
    out->host = rest.substr(0, colon);
    if (out->host.size() > 2 && out->host.front() == '[' && out->host.back() == ']')
      out->host = out->host.substr(1, out->host.size() - 2);
    const std::string port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(port) > 65535) {
      *error = "bad port '" + port + "'";
      return false;
    }
    out->port = std::stoi(port);
    return true;
  }
  *error = "expected unix:PATH or tcp:HOST:PORT, got '" + text + "'";
  return false;
}

}  // namespace ttrace::store
