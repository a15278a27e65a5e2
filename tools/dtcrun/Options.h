// Options: dtcrun's command line, parsed and validated. Everything the user
// can get wrong is caught here, before any rank starts, and reported as one
// line (exit status 2).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace dtcrun {

struct Options {
  int nprocPerNode = 0;          // N: ranks started on this node
  int nnodes = 1;                // K
  int nodeRank = 0;              // I, 0 <= I < K
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  int threadsPerRank = 0;        // T; 0 = max(1, cores / N)
  bool bindCores = true;         // --bind=cores|none: rank i on its own T cores
  double timeoutSeconds = 0;     // whole-job wall-clock limit; 0 = none
  double gracePeriodSeconds = 10;  // SIGTERM -> SIGKILL
  int maxRestarts = 0;           // restarts of the whole job after a rank failed
  std::string teeDir;            // empty = no log files
  std::string program;           // as the user wrote it (for messages)
  std::string programPath;       // resolved against PATH, executable
  std::vector<std::string> args; // argv of every rank, argv[0] = program
  std::string jobSecret;         // DTC_JOB_SECRET of every rank ("" = not set)

  int worldSize() const { return nnodes * nprocPerNode; }
};

// A command-line mistake; what() is the message without the "dtcrun: " prefix.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown for --help: the caller prints usage() and exits 0.
struct HelpRequested {};

// Parses argv (options first, then PROGRAM ARGS...), resolves PROGRAM and
// checks it can be executed. Throws UsageError or HelpRequested.
Options parseOptions(int argc, char** argv);

std::string usage();

}  // namespace dtcrun
