// StopAgreement: the per-step stop vote (see StopAgreement.h).
#include "runtime/train/StopAgreement.h"

#include "runtime/train/StopSignal.h"

namespace dtcrt {

StopAgreement::StopAgreement(Communicator* comm)
    : comm_(comm && comm->size() > 1 ? comm : nullptr), vote_(new float(0)) {}

StopAgreement::~StopAgreement() {
  // A vote still in flight (training ended by an error) may still write its
  // buffer: leave those 4 bytes to it.
  if (!pending_) delete vote_;
}

bool StopAgreement::shouldStop() {
  const bool mine = stopSignalReceived() != 0;
  if (!comm_) return mine;
  if (pending_) {
    pending_->wait();
    pending_.reset();
    if (*vote_ > 0) return true;
  }
  *vote_ = mine ? 1.0f : 0.0f;
  pending_ = comm_->allReduce(vote_, 1, ReduceOp::Sum);
  return false;
}

void StopAgreement::rethrowFailure() {
  if (!pending_) return;
  // Ops run in issue order: the vote completed or failed before the step's.
  std::unique_ptr<Work> vote = std::move(pending_);
  vote->wait();
}

void StopAgreement::finish() {
  if (!pending_) return;
  pending_->wait();
  pending_.reset();
}

} // namespace dtcrt
