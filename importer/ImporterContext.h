//===- ImporterContext.h - the state of one import, and of one node -------===//
//
// `Importer` holds what lives across the whole model: the module, the
// function being built, and per ONNX value name either an SSA value, a host
// constant (HostTensor) or the initializer it reads. `NodeContext` is what an
// op builder sees of it while importing one node: its inputs (materialized on
// demand), its attributes, its location and a checked way to create ops.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_IMPORTER_IMPORTERCONTEXT_H
#define DTC_IMPORTER_IMPORTERCONTEXT_H

#include "dialect/DtcDialect.h"
#include "importer/HostTensor.h"
#include "importer/OnnxAttributes.h"
#include "importer/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "onnx/onnx_pb.h"

#include <functional>

namespace dtc {

/// What is known about one ONNX value.
struct ValueSlot {
  mlir::Value value;              // the SSA value, once built or materialized
  std::optional<HostTensor> host; // the value, when known at compile time
  std::string param;              // the initializer it is (param_ref on demand)
  mlir::RankedTensorType paramType;
};

class NodeContext;
struct TrainableInitializers;
using NodeBuilderFn = mlir::LogicalResult (*)(NodeContext &);
using BuilderTable = llvm::StringMap<NodeBuilderFn>;

/// Each OpBuilders*.cpp registers its op types.
void populateMathBuilders(BuilderTable &table);
void populateActivationBuilders(BuilderTable &table);
void populateNNBuilders(BuilderTable &table);
void populateShapeBuilders(BuilderTable &table);
void populateLossBuilders(BuilderTable &table);
void populateCompositeBuilders(BuilderTable &table);
void populateEinsumBuilders(BuilderTable &table);
void populateResampleBuilders(BuilderTable &table);
void populateRecurrentBuilders(BuilderTable &table);
void populatePointwiseBuilders(BuilderTable &table);
void populateReductionBuilders(BuilderTable &table);
void populateRearrangeBuilders(BuilderTable &table);
void populateQuantizeBuilders(BuilderTable &table);

/// Imports a 1-D Conv/MaxPool/AveragePool node (input [N, C, L]) with the
/// 2-D builder `build2D` on [N, C, 1, L] (OpBuildersWindow1D.cpp).
mlir::LogicalResult buildAsUnitHeight2D(NodeContext &nc, NodeBuilderFn build2D);

/// ONNX MaxPool's int64 Indices output from dtc.max_pool's in-plane int32
/// indices `local`, for an input of `inputShape`; row-major, or
/// column-major in each plane for storage_order 1 (MaxPoolIndices.cpp).
mlir::Value onnxMaxPoolIndices(NodeContext &nc, mlir::Value local,
                               llvm::ArrayRef<int64_t> inputShape, bool columnMajor);

class Importer {
public:
  Importer(mlir::MLIRContext &ctx, const std::string &path, const ImportOptions &options);
  mlir::OwningOpRef<mlir::ModuleOp> run();

  mlir::MLIRContext &ctx;
  std::string path;
  ImportOptions options;
  mlir::Location fileLoc;
  mlir::OpBuilder builder;      // at the node being imported
  mlir::OpBuilder paramBuilder; // after the last dtc.param_ref of @forward
  int64_t opset = 0;
  /// The default-domain opset the model declares: older than `opset` when
  /// its ops mean there what they mean at kMinOpset (ModelLoader.cpp), but
  /// for what their builders handle (ConvTranspose-1's pads).
  int64_t declaredOpset = 0;
  llvm::StringMap<ValueSlot> slots;
  BuilderTable table;
  llvm::StringSet<> used; // value names read by nodes or graph outputs

  mlir::Location nodeLoc(llvm::StringRef name);
  /// The SSA value for `name`: reads parameters, materializes host constants
  /// (cast to `elementType` when given). Null if `name` is unknown.
  mlir::Value valueOf(llvm::StringRef name, mlir::Type elementType = {});
  /// The static type of `name` (host constants included); null if unknown.
  mlir::RankedTensorType typeOf(llvm::StringRef name);

private:
  onnx::ModelProto model;
  mlir::ModuleOp module;
  mlir::Block *entry = nullptr;
  mlir::Operation *lastParamRef = nullptr;

  mlir::LogicalResult checkSupport();
  mlir::LogicalResult importInitializers();
  mlir::LogicalResult reportTrainable(const TrainableInitializers &classes);
  mlir::LogicalResult importNodes();
  mlir::LogicalResult importNode(const onnx::NodeProto &node, llvm::StringRef name);
  mlir::LogicalResult tryFold(NodeContext &nc, bool &folded);
  std::string nodeName(const onnx::NodeProto &node, int index);
};

class NodeContext {
public:
  NodeContext(Importer &imp, const onnx::NodeProto &node, llvm::StringRef name)
      : imp(imp), node(node), name(name.str()), loc(imp.nodeLoc(name)),
        b(imp.builder), opset(imp.opset) {}

  Importer &imp;
  const onnx::NodeProto &node;
  std::string name;
  mlir::Location loc;
  mlir::OpBuilder &b;
  int64_t opset;

  /// Starts an error about this node: `<OpType> node "<name>": ...`.
  mlir::InFlightDiagnostic error();

  bool hasInput(int i) const { return !nodeInput(node, i).empty(); }
  llvm::StringRef inputName(int i) const { return nodeInput(node, i); }
  /// Input `i` as an SSA value (host constants become dtc.constant, cast to
  /// `elementType` when given); reports an error and returns null if absent.
  mlir::Value input(int i, mlir::Type elementType = {});
  /// Input `i` as an SSA value with the element type of `like` when it is a
  /// host constant (ONNX models multiply tensors by scalars of any type).
  mlir::Value inputMatching(int i, mlir::Value like);
  mlir::RankedTensorType inputType(int i);
  /// The host constant of input `i`, or null.
  const HostTensor *host(int i);
  /// Input `i` as integers known at compile time, or an error saying that
  /// `what` is not a compile-time constant.
  mlir::FailureOr<llvm::SmallVector<int64_t>> constInts(int i, llvm::StringRef what);
  /// Axes from the `axes` attribute before opset `inputSince`, else from
  /// input `inputIndex` (empty when absent).
  mlir::FailureOr<llvm::SmallVector<int64_t>> axes(int64_t inputSince, int inputIndex);

  bool outputUsed(int i) const;
  void setOutput(int i, mlir::Value value);
  void setHost(int i, HostTensor value);

  /// Creates OpTy with its result types inferred by the dialect; on a type
  /// inference failure, reports it as an error about this node and returns
  /// null instead of aborting.
  template <typename OpTy, typename... Args>
  OpTy create(unsigned numResults, Args &&...args) {
    llvm::SmallVector<mlir::Type> placeholders(numResults, b.getNoneType());
    auto op = b.create<OpTy>(loc, mlir::TypeRange(placeholders),
                             std::forward<Args>(args)...);
    llvm::SmallVector<mlir::Type> types;
    std::string message;
    mlir::LogicalResult inferred = mlir::failure();
    {
      mlir::ScopedDiagnosticHandler capture(&imp.ctx, [&](mlir::Diagnostic &d) {
        message = d.str();
        return mlir::success();
      });
      inferred = OpTy::inferReturnTypes(&imp.ctx, loc, op->getOperands(),
                                        op->getRawDictionaryAttrs(),
                                        op->getPropertiesStorage(), op->getRegions(), types);
    }
    if (mlir::failed(inferred) || types.size() != numResults) {
      op->erase();
      error() << (message.empty() ? std::string("cannot infer the result type") : message);
      return nullptr;
    }
    for (unsigned i = 0; i < numResults; ++i)
      op->getResult(i).setType(types[i]);
    return op;
  }
};

} // namespace dtc

#endif // DTC_IMPORTER_IMPORTERCONTEXT_H
