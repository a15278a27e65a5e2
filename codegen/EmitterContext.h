//===- EmitterContext.h - shared state of the C++ emitters --------------===//
//
// ProgramEmitter collects what lives at namespace scope in the generated
// file (shape arrays, constants, kernel parameter structs); FunctionEmitter
// writes one step function, naming every tensor after its storage in the
// memory plan. Op emitters (Emit*.cpp) get both and write one statement or
// a few per op.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_CODEGEN_EMITTERCONTEXT_H
#define DTC_CODEGEN_EMITTERCONTEXT_H

#include "passes/MemoryPlan.h"
#include "dialect/PlanAttributes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <string>

namespace dtc {

class ProgramEmitter;

/// Turns `text` into a C++ identifier ("fc1.weight" -> "fc1_weight").
std::string sanitizeIdentifier(llvm::StringRef text);

/// The C++ element type of a tensor type ("float", "int64_t", "uint8_t" for
/// bool and uint8, "uint16_t" for bf16 bits and uint16); "" if it has none.
llvm::StringRef cppElementType(mlir::Type tensorType);
/// The runtime's dtcrt::DType enumerator of a tensor type ("F32", "BF16").
llvm::StringRef runtimeDType(mlir::Type tensorType);

/// A float as a C++ literal that round-trips exactly.
std::string floatLiteral(double value);
/// A double as a C++ literal that round-trips exactly.
std::string float64Literal(double value);
/// A literal argument with its parameter's name, "/*transA=*/false", so a
/// generated call says what its numbers are.
inline std::string named(llvm::StringRef name, const std::string &literal) {
  return "/*" + name.str() + "=*/" + literal;
}

class FunctionEmitter {
public:
  FunctionEmitter(ProgramEmitter &program, const MemoryPlan &plan)
      : program(program), plan(plan) {}

  /// The pointer (a C++ expression) to `value`'s data.
  std::string ptr(mlir::Value value);
  /// A namespace-scope array holding `value`'s shape, and its rank.
  std::string shape(mlir::Value value);
  std::string shape(llvm::ArrayRef<int64_t> dims);
  int64_t rank(mlir::Value value);
  int64_t numel(mlir::Value value);
  llvm::ArrayRef<int64_t> dims(mlir::Value value);

  /// Emits one line of the function body (indented by `indent` more levels).
  void line(const llvm::Twine &text);
  int indent = 0;

  /// True when the program targets CUDA: every tensor pointer is device
  /// memory and kernels run on the device's compute stream.
  bool cuda() const;
  /// One runtime kernel call: `cpu::NAME(ARGS);`, or on CUDA
  /// `cuda::NAME(ARGS, stream);` (the CUDA kernels take the stream last).
  void kernel(llvm::StringRef name, const std::string &args);
  /// A kernel that needs the device's library handles on CUDA (cuBLASLt,
  /// cuDNN): `cuda::NAME(gpu, ARGS);`; on the CPU the same as kernel().
  void libraryKernel(llvm::StringRef name, const std::string &args);
  /// A bf16 product (--precision=bf16): `cuda::NAME(gpu, ARGS);` on CUDA;
  /// on the CPU `cpu::NAME(ARGS, ctx.workspace);`, reserving the workspace
  /// `cpu::WORKSPACEFLOATS` (a call of the kernel's *_workspace function).
  void bf16Kernel(llvm::StringRef name, const std::string &args,
                  const std::string &workspaceFloats);
  /// Copies `bytes` bytes between tensors: memcpy, or on CUDA a device copy
  /// on the compute stream.
  void copyBytes(const std::string &dst, const std::string &src, int64_t bytes);
  /// Emits a comment naming the ONNX node of `op` and what it does.
  void comment(mlir::Operation *op);

  /// Declares the pointer variables of `op`'s results.
  void declareResults(mlir::Operation *op);
  /// Declares the pointer to a param used in this function.
  void declareParam(mlir::Operation *paramRef);

  /// The state-buffer pointer of the param named `symbol` (for updates).
  std::string paramPointer(llvm::StringRef symbol);

  ProgramEmitter &program;
  const MemoryPlan &plan;
  std::string body;
  /// The largest kernel scratch (bytes) any op of the function asked for, as
  /// C++ expressions evaluated at run time.
  std::vector<std::string> workspaceTerms;

private:
  llvm::DenseMap<mlir::Value, std::string> names;
  llvm::StringSet<> declaredParams;
  unsigned nextTemp = 0;

public:
  /// Names `value` (an input, a constant, a send in flight) as the C++
  /// expression `name`.
  void bind(mlir::Value value, const std::string &name) { names[value] = name; }
  /// The name bound to `value` (e.g. a send's token).
  const std::string &name(mlir::Value value) { return names[value]; }
  /// Counter for the names of communication in flight.
  unsigned nextWork = 0;
};

/// Starts a one-line error about `op` that dtc reports as a refusal
/// ("codegen: dtc.where: ..."). Unlike op->emitOpError(), it attaches no note
/// with the op's IR, so the user sees one line naming the ONNX node.
/// --shard=parameters (ZeRO-3): the module's weights stay sharded between
/// steps (dtc-shard-parameters).
inline bool shardsParameters(mlir::ModuleOp module) {
  auto level = module->getAttrOfType<mlir::StringAttr>(dtc::attr::kShardLevel);
  return level && level.getValue() == "parameters";
}

/// --shard=gradients (ZeRO-2): buckets reduce-scattered, gradients freed
/// in backward (dtc-shard-optimizer-state with gradients).
inline bool shardsGradients(mlir::ModuleOp module) {
  auto level = module->getAttrOfType<mlir::StringAttr>(dtc::attr::kShardLevel);
  return level && level.getValue() == "gradients";
}

inline mlir::InFlightDiagnostic codegenError(mlir::Operation *op) {
  return mlir::emitError(op->getLoc()) << "codegen: " << op->getName().getStringRef() << ": ";
}

using OpEmitter = mlir::LogicalResult (*)(mlir::Operation *, FunctionEmitter &);
using OpEmitterTable = llvm::StringMap<OpEmitter>;

void populateMathEmitters(OpEmitterTable &table);
void populateNNEmitters(OpEmitterTable &table);
void populateShapeEmitters(OpEmitterTable &table);
void populateResampleEmitters(OpEmitterTable &table);
void populateTrainingEmitters(OpEmitterTable &table);
void populateCollectiveEmitters(OpEmitterTable &table);
void populatePipelineEmitters(OpEmitterTable &table);
void populateDebugEmitters(OpEmitterTable &table);
void populateReductionEmitters(OpEmitterTable &table);

/// CUDA: the run of optimizer updates starting at `first` that one
/// multi-tensor kernel can do (consecutive, same kind and hyperparameters).
llvm::SmallVector<mlir::Operation *> fusableUpdates(mlir::Operation *first);
/// Emits one multi-tensor kernel for `updates` (from fusableUpdates).
mlir::LogicalResult emitFusedUpdates(llvm::ArrayRef<mlir::Operation *> updates,
                                     FunctionEmitter &fn);

class ProgramEmitter {
public:
  explicit ProgramEmitter(mlir::ModuleOp module) : module(module) {}

  /// Name of a namespace-scope int64_t array with `dims` (deduplicated).
  std::string shapeArray(llvm::ArrayRef<int64_t> dims);
  /// Name of a namespace-scope constant holding `op`'s value.
  std::string constantArray(mlir::Operation *constantOp);
  /// Name of a namespace-scope `static const TYPE NAME = INIT;` (deduplicated).
  std::string declareStatic(llvm::StringRef type, llvm::StringRef prefix,
                            const std::string &initializer);
  /// Byte offset of a param in the state buffer, and its index in the table.
  int64_t paramOffset(llvm::StringRef symbol) const;

  mlir::ModuleOp module;
  /// --target=cuda: device pointers, CUDA kernels, constants in device memory.
  bool cuda = false;
  std::string globals;
  /// CUDA: the bytes of all constants, packed (their device copy is made once).
  int64_t deviceConstantBytes = 0;
  /// CUDA: the statements that copy each host constant into the device block.
  std::string deviceConstantCopies;
  llvm::StringMap<int64_t> paramOffsets;
  /// One OpProfile initializer per kernel op of every step function
  /// (--profile, --trace); the index is the op's id.
  std::vector<std::string> profileOps;
  /// Adds `op` (in `phase`) to profileOps and returns its id.
  int addProfileOp(mlir::Operation *op, llvm::StringRef phase);
  /// Adds a run of updates one multi-tensor kernel applies (GPU programs) as
  /// one entry: the first op's kind, their summed FLOPs and bytes.
  int addProfileOp(llvm::ArrayRef<mlir::Operation *> ops, llvm::StringRef phase);

private:
  llvm::StringMap<std::string> shapes;
  llvm::DenseMap<mlir::Operation *, std::string> constants;
  llvm::StringMap<std::string> statics;
  unsigned nextStatic = 0;
};

} // namespace dtc

#endif // DTC_CODEGEN_EMITTERCONTEXT_H
