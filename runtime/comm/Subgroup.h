// dtcrt: makeSubgroup — a Communicator over some of another communicator's
// ranks, built on the parent's send/recv. A pipeline rank has two: the stages
// of its replica (activations and gradients) and the replicas of its stage
// (gradient all-reduce).
//
// Tags: a group owns the parent tags [tagBase, tagBase + kSubgroupTagSpan).
// send/recv take tags in [0, kSubgroupUserTags) and pass tagBase + tag to the
// parent; the group's collectives use the upper half of the span, one tag per
// collective from a per-group sequence number. Groups over one parent whose
// spans are disjoint never mix their messages, even when a pair of parent
// ranks belongs to both.
//
// Collectives are asynchronous: they run in issue order on one worker thread
// per group (the parent's send/recv are posted to every peer at once, then
// waited for), and a Work completes when its operation did. all-reduce: every
// member sends its buffer to all others and each sums the n buffers in group
// rank order ((x0 + x1) + x2) + ..., so every member gets the same bits;
// reduce-scatter: every member sends chunk p to member p and sums what it
// gets in the same order (the all-reduce's bits). reduceScatterBlocks and
// allGatherBlocks are overridden (not the Communicator defaults, which
// all-reduce the whole buffer: twice the traffic): reduceScatterBlocks is
// that reduce-scatter with blocks of any size, block p (counts[p] floats)
// to member p only, its own block summed in the same order (the
// all-reduce's bits for it, Mean included); allGatherBlocks sends each
// member's block to every other member once, bits copied (-0.0 stays -0.0).
// Empty blocks send nothing; a wrong number of counts is a CommError.
// Failures are CommError naming the operation and the peer's parent rank;
// later collectives of a failed group fail at once. A group of one member
// needs no parent traffic: its collectives are the identity.
#pragma once

#include "runtime/comm/Communicator.h"

#include <memory>
#include <vector>

namespace dtcrt {

constexpr int kSubgroupTagSpan = 1 << 24;
constexpr int kSubgroupUserTags = 1 << 23;

// The group of `parentRanks` (distinct ranks of `parent`, this process's
// among them); a member's group rank is its index in the list. `parent` must
// outlive the group. Throws CommError on a malformed list or a tagBase whose
// span does not fit in an int. Creating it sends nothing.
std::unique_ptr<Communicator> makeSubgroup(Communicator& parent, std::vector<int> parentRanks,
                                           int tagBase);

}  // namespace dtcrt
