// The NCCL unique id exchange of the shim's test programs: rank 0 writes it to DIR/nccl-id (atomically, by
// rename), the others poll for it (up to 60 s). Header-only; each program calls it once per communicator.
#ifndef TTRACE_SHIM_TESTING_RENDEZVOUS_H_
#define TTRACE_SHIM_TESTING_RENDEZVOUS_H_

#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace ttrace::shim::testing {

// False (with a message on stderr) when the id cannot be created, written or read in time.
inline bool ExchangeUniqueId(const std::string& dir, int rank, ncclUniqueId* id) {
  const std::string path = dir + "/nccl-id";
  if (rank == 0) {
    if (ncclGetUniqueId(id) != ncclSuccess) {
      fprintf(stderr, "ncclGetUniqueId failed\n");
      return false;
    }
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id->internal, sizeof id->internal);
    if (rename(tmp.c_str(), path.c_str()) == 0) return true;
    perror("rename");
    return false;
  }
  for (int i = 0; i < 6000; ++i) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(id->internal, sizeof id->internal)) return true;
    usleep(10000);
  }
  fprintf(stderr, "timed out waiting for the NCCL unique id in %s\n", path.c_str());
  return false;
}

}  // namespace ttrace::shim::testing

#endif  // TTRACE_SHIM_TESTING_RENDEZVOUS_H_
