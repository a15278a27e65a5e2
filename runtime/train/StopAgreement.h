// StopAgreement: the ranks of a job stop after the same step when any of
// them received SIGTERM/SIGINT (StopSignal.h), so that no rank is left
// waiting in a collective of a step its peers never run.
//
// Before each step every rank calls shouldStop(). It waits for the vote it
// issued before the previous step (a one-float all-reduce that ran alongside
// that step's gradient all-reduces) and issues the next one with this
// rank's flag. All ranks see the same sum, so they stop together: at most
// two steps after the signal arrived. One process: the flag itself.
#pragma once

#include "runtime/comm/Communicator.h"

#include <memory>

namespace dtcrt {

class StopAgreement {
public:
  // `comm` may be null (one process).
  explicit StopAgreement(Communicator* comm);
  ~StopAgreement();
  StopAgreement(const StopAgreement&) = delete;
  StopAgreement& operator=(const StopAgreement&) = delete;

  // Collective: every rank calls it at the same points. True when the ranks
  // agreed to stop before the step about to run.
  bool shouldStop();
  // Collective: waits for the vote in flight (call once the loop is over).
  void finish();
  // After a CommError in a step: throws the vote's own CommError when the
  // vote in flight failed (it ran before the step's collectives, so its
  // error names the cause); returns otherwise.
  void rethrowFailure();

private:
  Communicator* comm_;
  float* vote_;                 // the buffer of the vote in flight
  std::unique_ptr<Work> pending_;
};

} // namespace dtcrt
