//===- DtcTraits.h - op traits of the dtc dialect (see DtcBase.td) --------===//
//
// What passes ask of an op, declared on the op in ODS instead of isa<> lists
// in the passes: `op->hasTrait<dtc::trait::View>()`.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_DIALECT_DTCTRAITS_H
#define DTC_DIALECT_DTCTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace dtc::trait {

/// The result is the operand's storage seen with another shape: no copy, no
/// kernel; the memory plan gives it its operand's bytes.
template <typename ConcreteType>
class View : public mlir::OpTrait::TraitBase<ConcreteType, View> {};

/// Runs no compute kernel (param reads, constants, markers, the start and
/// wait of communication): the cost model counts it as free.
template <typename ConcreteType>
class NoKernel : public mlir::OpTrait::TraitBase<ConcreteType, NoKernel> {};

/// Belongs to no pipeline stage: each stage that reads it has its own (reads
/// of params, constants).
template <typename ConcreteType>
class StageFree : public mlir::OpTrait::TraitBase<ConcreteType, StageFree> {};

/// A convolution's kernel (forward, gradients, transposed, from kept
/// columns): the cost model rates it at the machine's convolution rate.
template <typename ConcreteType>
class Convolution : public mlir::OpTrait::TraitBase<ConcreteType, Convolution> {};

} // namespace dtc::trait

#endif // DTC_DIALECT_DTCTRAITS_H
