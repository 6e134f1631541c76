// Where a collector listens and a shim connects: "unix:PATH" or "tcp:HOST:PORT". Absl-free (the shim links it).
#ifndef TTRACE_STORE_ENDPOINT_H_
#define TTRACE_STORE_ENDPOINT_H_

#include <string>

namespace ttrace::store {

struct Endpoint {
  enum class Kind { kUnix, kTcp } kind = Kind::kUnix;
  std::string path;  // unix
  std::string host;  // tcp
  int port = 0;      // tcp; 0: any free port (see Server::port())
  std::string text() const;
};
// "unix:PATH" or "tcp:HOST:PORT" (HOST may be [v6]). False + `error` otherwise.
bool ParseEndpoint(const std::string& text, Endpoint* out, std::string* error);

}  // namespace ttrace::store

#endif  // TTRACE_STORE_ENDPOINT_H_
