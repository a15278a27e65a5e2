// StopSignal: SIGTERM and SIGINT while a program trains. Schedulers (Slurm,
// Kubernetes) send SIGTERM some seconds before they kill a job; the first
// SIGTERM or SIGINT only sets a flag that the training loop reads between
// steps (it then checkpoints and exits, see StopAgreement); a second one
// ends the process at once with the default action (128 + signal).
//
// StopSignalScope installs the handlers for its lifetime and restores the
// previous dispositions afterwards; outside one, the signals keep whatever
// disposition the process had (the default: death, as nothing is lost then).
#pragma once

namespace dtcrt {

// The exit status of a training program that stopped early because of a
// signal (after checkpointing, when --checkpoint-dir was given): 75, sysexits.h's
// EX_TEMPFAIL ("temporary failure, retry later": continue with --resume).
constexpr int kExitStoppedBySignal = 75;

class StopSignalScope {
public:
  StopSignalScope();   // clears the flag and installs the handlers
  ~StopSignalScope();  // restores the previous handlers
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};

// The first SIGTERM/SIGINT received inside a StopSignalScope, or 0.
int stopSignalReceived();

} // namespace dtcrt
