// Signals: dtcrun's own signal handling. SIGINT, SIGTERM and SIGCHLD are
// turned into bytes on a self-pipe so that the supervision loop sees them as
// one more readable descriptor in poll(); SIGPIPE is ignored (a closed
// terminal must not kill the launcher while ranks still run). Also the names
// of signals for messages.
#pragma once

#include <string>

namespace dtcrun {

// Installs the handlers; returns the read end of the self-pipe (non-blocking,
// close-on-exec). Call once, before starting ranks.
int installSignalHandlers();

// Reads one pending signal number from the self-pipe, or returns 0 if none.
int nextSignal(int selfPipeReadFd);

// In a forked child before exec: default dispositions for everything dtcrun
// changed, and an empty signal mask.
void resetSignalsInChild();

// "SIGKILL", "SIGTERM", ... ("signal 42" for ones without a common name).
std::string signalName(int sig);

}  // namespace dtcrun
