// Options: parsing and validation of dtcrun's command line (see Options.h).
// Accepts `--name=value` and `--name value`, with torchrun's underscore
// spellings (`--nproc_per_node`) as aliases and its `--no-python` as a no-op;
// options end at the first word that is not an option, or at `--`.
#include "tools/dtcrun/Options.h"
#include "tools/dtcrun/Secret.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dtcrun {
namespace {

// "--nproc_per_node" -> "--nproc-per-node".
std::string canonicalName(std::string name) {
  for (size_t i = 2; i < name.size(); ++i)
    if (name[i] == '_') name[i] = '-';
  return name;
}

long parseInt(const std::string& flag, const std::string& text, long lo, long hi) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    std::string range = hi == 0x7fffffff ? "an integer >= " + std::to_string(lo)
                                         : "an integer in [" + std::to_string(lo) + ", " +
                                               std::to_string(hi) + "]";
    throw UsageError(flag + "=" + text + ": expected " + range);
  }
  return v;
}

double parseSeconds(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0)
    throw UsageError(flag + "=" + text + ": expected a positive number of seconds");
  return v;
}

// Finds PROGRAM like execvp would; returns the path to execute or throws
// "cannot run 'PROGRAM': reason".
std::string resolveProgram(const std::string& program) {
  auto check = [](const std::string& path) -> int {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) return EACCES;
    return 0;
  };
  auto fail = [&](int err) -> std::string {
    throw UsageError("cannot run '" + program + "': " + std::strerror(err));
  };
  if (program.empty()) fail(ENOENT);
  if (program.find('/') != std::string::npos) {
    int err = check(program);
    if (err) fail(err);
    return program;
  }
  const char* pathEnv = std::getenv("PATH");
  std::string path = pathEnv ? pathEnv : "/usr/local/bin:/usr/bin:/bin";
  int firstErr = ENOENT;
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(start, colon - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    int err = check(candidate);
    if (err == 0) return candidate;
    if (err != ENOENT && err != ENOTDIR && firstErr == ENOENT) firstErr = err;
    start = colon + 1;
  }
  if (firstErr == ENOENT) throw UsageError("cannot run '" + program + "': not found on PATH");
  fail(firstErr);
  return {};
}

// A port no socket of this machine is bound to now: the kernel's choice for
// port 0. Rank 0 binds it moments later; another process taking it in
// between makes rank 0 fail with "address in use", never a wrong job.
int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw UsageError(std::string("--master-port=0: socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    int e = errno;
    ::close(fd);
    throw UsageError(std::string("--master-port=0: no free port: ") + std::strerror(e));
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

std::string usage() {
  return "usage: dtcrun --nproc-per-node=N [--nnodes=K --node-rank=I --master-addr=HOST\n"
         "              --master-port=PORT] [--threads-per-rank=T] [--timeout=SECONDS]\n"
         "              [--grace-period=SECONDS] [--max-restarts=R] [--tee=DIR]\n"
         "              PROGRAM [ARGS...]\n"
         "\n"
         "Starts N ranks of PROGRAM on this node, ranks node_rank*N .. node_rank*N+N-1 of\n"
         "a job of K*N, each with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
         "GROUP_RANK, MASTER_ADDR, MASTER_PORT, OMP_NUM_THREADS and the other variables\n"
         "torchrun sets. Output lines are prefixed `[rank R] `. When a rank fails, the\n"
         "others are stopped and dtcrun exits with its status, or, with --max-restarts,\n"
         "starts the whole job again (dtc programs given --checkpoint-dir resume from\n"
         "their latest checkpoint). Ranks that stop early on SIGTERM/SIGINT exit 75\n"
         "(dtc programs: after a checkpoint); dtcrun then exits 75 too.\n"
         "\n"
         "Ranks authenticate to rank 0 with DTC_JOB_SECRET: dtcrun passes on the one\n"
         "in its environment, or makes a random one for a single-node job; with\n"
         "--nnodes > 1, export the same secret on every node (docs/security.md).\n"
         "\n"
         "  --nproc-per-node=N      ranks on this node (required, >= 1)\n"
         "  --nnodes=K              nodes in the job (default 1)\n"
         "  --node-rank=I           this node's index, 0 <= I < K (default 0)\n"
         "  --master-addr=HOST      rank 0's host (default 127.0.0.1)\n"
         "  --master-port=PORT      rank 0's port (default 29500; 0 = a free port of\n"
         "                          this machine, for single-node jobs)\n"
         "  --threads-per-rank=T    OMP_NUM_THREADS / OPENBLAS_NUM_THREADS\n"
         "                          (default max(1, cores / N))\n"
         "  --bind=cores|none       give each rank its own T cores (CPU affinity) when\n"
         "                          N*T fit in the cores dtcrun may use (default cores)\n"
         "  --timeout=SECONDS       stop the job after this long, exit 124 (default none)\n"
         "  --grace-period=SECONDS  SIGTERM to SIGKILL when stopping ranks (default 10)\n"
         "  --max-restarts=R        restart the whole job up to R times when a rank fails\n"
         "                          (TORCHELASTIC_RESTART_COUNT counts them; default 0)\n"
         "  --tee=DIR               also write each rank's output to DIR/rank-R.log\n"
         "  --no-python             accepted for torchrun compatibility (no effect)\n";
}

Options parseOptions(int argc, char** argv) {
  Options o;
  bool haveNproc = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") throw HelpRequested{};
    if (arg.size() < 2 || arg[0] != '-') break;  // PROGRAM
    // torchrun's --no-python: dtcrun never runs PROGRAM through Python anyway.
    if (canonicalName(arg) == "--no-python") continue;
    std::string name = arg, value;
    bool hasValue = false;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    name = canonicalName(name);
    static const char* const known[] = {"--nproc-per-node", "--nnodes", "--node-rank",
                                        "--master-addr", "--master-port",
                                        "--threads-per-rank", "--timeout", "--grace-period",
                                        "--tee", "--bind", "--max-restarts"};
    bool isKnown = false;
    for (const char* k : known) isKnown |= name == k;
    if (!isKnown) throw UsageError("unknown option '" + arg + "' (see dtcrun --help)");
    if (!hasValue) {
      if (i + 1 >= argc) throw UsageError(name + " needs a value");
      value = argv[++i];
    }
    if (name == "--nproc-per-node") {
      o.nprocPerNode = static_cast<int>(parseInt(name, value, 1, 0x7fffffff));
      haveNproc = true;
    } else if (name == "--nnodes") {
      o.nnodes = static_cast<int>(parseInt(name, value, 1, 0x7fffffff));
    } else if (name == "--node-rank") {
      o.nodeRank = static_cast<int>(parseInt(name, value, 0, 0x7fffffff));
    } else if (name == "--master-addr") {
      if (value.empty()) throw UsageError("--master-addr is empty");
      o.masterAddr = value;
    } else if (name == "--master-port") {
      o.masterPort = static_cast<int>(parseInt(name, value, 0, 65535));
    } else if (name == "--threads-per-rank") {
      o.threadsPerRank = static_cast<int>(parseInt(name, value, 1, 0x7fffffff));
    } else if (name == "--bind") {
      if (value != "cores" && value != "none")
        throw UsageError("--bind: expected 'cores' or 'none', got '" + value + "'");
      o.bindCores = value == "cores";
    } else if (name == "--timeout") {
      o.timeoutSeconds = parseSeconds(name, value);
    } else if (name == "--grace-period") {
      o.gracePeriodSeconds = parseSeconds(name, value);
    } else if (name == "--max-restarts") {
      o.maxRestarts = static_cast<int>(parseInt(name, value, 0, 0x7fffffff));
    } else if (name == "--tee") {
      if (value.empty()) throw UsageError("--tee is empty");
      o.teeDir = value;
    }
  }
  if (!haveNproc) throw UsageError("missing --nproc-per-node=N (see dtcrun --help)");
  if (o.nodeRank >= o.nnodes)
    throw UsageError("--node-rank=" + std::to_string(o.nodeRank) + " must be less than --nnodes=" +
                     std::to_string(o.nnodes));
  if (static_cast<long long>(o.nnodes) * o.nprocPerNode > 0x7fffffff)
    throw UsageError("--nnodes * --nproc-per-node is too large");
  if (o.masterPort == 0) {
    if (o.nnodes > 1)
      throw UsageError("--master-port=0 (a free port of this machine) needs a single-node job: "
                       "every node must be given the same port");
    o.masterPort = freeLoopbackPort();
  }
  if (i >= argc) throw UsageError("missing PROGRAM (see dtcrun --help)");
  o.program = argv[i];
  o.programPath = resolveProgram(o.program);
  for (; i < argc; ++i) o.args.push_back(argv[i]);
  o.jobSecret = jobSecret(o);
  return o;
}

}  // namespace dtcrun
