//===- FunctionEmitter.cpp - naming, shapes and lines of a step function -===//
#include "codegen/EmitterContext.h"

#include "dialect/DtcDialect.h"
#include "dialect/PlanAttributes.h"
#include "dialect/ShapeHelpers.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace dtc {

std::string sanitizeIdentifier(llvm::StringRef text) {
  std::string out;
  for (char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "_" + out;
  return out;
}

namespace {
/// How the generated code and the runtime see one MLIR element type.
struct ElementNames {
  StringRef cpp;    // its C++ storage type
  StringRef dtype;  // its dtcrt::DType enumerator
};

ElementNames elementNames(Type element) {
  if (element.isF32()) return {"float", "F32"};
  if (element.isF64()) return {"double", "F64"};
  if (element.isF16()) return {"dtcrt::cpu::Float16", "F16"};
  if (element.isBF16()) return {"uint16_t", "BF16"};  // its bits (Kernels.h, section 10)
  if (element.isInteger(1)) return {"uint8_t", "Bool"};
  auto integer = llvm::dyn_cast<IntegerType>(element);
  if (!integer)
    return {"", ""};
  const bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 64: return isUnsigned ? ElementNames{"uint64_t", "U64"} : ElementNames{"int64_t", "I64"};
  case 32: return isUnsigned ? ElementNames{"uint32_t", "U32"} : ElementNames{"int32_t", "I32"};
  case 16: return isUnsigned ? ElementNames{"uint16_t", "U16"} : ElementNames{"int16_t", "I16"};
  case 8: return isUnsigned ? ElementNames{"uint8_t", "U8"} : ElementNames{"int8_t", "I8"};
  default: return {"", ""};
  }
}
} // namespace

StringRef cppElementType(Type type) {
  return elementNames(llvm::cast<RankedTensorType>(type).getElementType()).cpp;
}

StringRef runtimeDType(Type type) {
  return elementNames(llvm::cast<RankedTensorType>(type).getElementType()).dtype;
}

std::string floatLiteral(double value) {
  if (std::isnan(value))
    return "NAN";
  if (std::isinf(value))
    return value > 0 ? "INFINITY" : "-INFINITY";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9gf", static_cast<float>(value));
  std::string text(buffer);
  // "1f" is not a float literal: make it "1.f".
  if (text.find_first_of(".eE") == std::string::npos)
    text.insert(text.size() - 1, ".");
  return text;
}

std::string float64Literal(double value) {
  if (std::isnan(value) || std::isinf(value))
    return "double(" + floatLiteral(value) + ")";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  std::string text(buffer);
  if (text.find_first_of(".eE") == std::string::npos)
    text += ".0";
  return text;
}

ArrayRef<int64_t> FunctionEmitter::dims(Value value) {
  return llvm::cast<RankedTensorType>(value.getType()).getShape();
}

int64_t FunctionEmitter::rank(Value value) { return dims(value).size(); }

int64_t FunctionEmitter::numel(Value value) { return numElements(dims(value)); }

std::string FunctionEmitter::shape(ArrayRef<int64_t> d) { return program.shapeArray(d); }

std::string FunctionEmitter::shape(Value value) { return shape(dims(value)); }

std::string FunctionEmitter::ptr(Value value) {
  Value root = plan.storageRoot(value);
  auto it = names.find(root);
  assert(it != names.end() && "value used before it was declared");
  return it->second;
}

void FunctionEmitter::line(const llvm::Twine &text) {
  body.append(2 * (1 + indent), ' ');
  body += text.str();
  body += "\n";
}

bool FunctionEmitter::cuda() const { return program.cuda; }

void FunctionEmitter::kernel(StringRef name, const std::string &args) {
  if (cuda())
    line("cuda::" + name + "(" + args + ", stream);");
  else
    line("cpu::" + name + "(" + args + ");");
}

void FunctionEmitter::libraryKernel(StringRef name, const std::string &args) {
  if (cuda())
    line("cuda::" + name + "(gpu, " + args + ");");
  else
    line("cpu::" + name + "(" + args + ");");
}

void FunctionEmitter::bf16Kernel(StringRef name, const std::string &args,
                                 const std::string &workspaceFloats) {
  if (cuda()) {
    line("cuda::" + name + "(gpu, " + args + ");");
    return;
  }
  workspaceTerms.push_back("4 * cpu::" + workspaceFloats);
  line("cpu::" + name + "(" + args + ", ctx.workspace);");
}

void FunctionEmitter::copyBytes(const std::string &dst, const std::string &src, int64_t bytes) {
  if (cuda())
    line("copy_on_device(" + dst + ", " + src + ", " + std::to_string(bytes) + ", stream);");
  else
    line("std::memcpy(" + dst + ", " + src + ", " + std::to_string(bytes) + ");");
}

void FunctionEmitter::comment(Operation *op) {
  std::string where;
  if (auto name = llvm::dyn_cast<NameLoc>(op->getLoc()))
    where = name.getName().str();
  // A forward op computed again in backward (--recompute) says so.
  line("// " + op->getName().getStringRef() +
       (where.empty() ? std::string() : " (" + where + ")") +
       (op->hasAttr(dtc::attr::kRecomputed) ? ", recomputed for backward" : ""));
}

void FunctionEmitter::declareResults(Operation *op) {
  for (Value result : op->getResults()) {
    if (!llvm::isa<RankedTensorType>(result.getType()))
      continue;
    const MemoryPlan::Placement &place = plan.placement(result);
    // Results stored in another value's memory (in-place ops) need no name.
    if (place.storage != MemoryPlan::Storage::Arena || plan.storageRoot(result) != result)
      continue;
    std::string name = "t" + std::to_string(nextTemp++);
    std::string type = cppElementType(result.getType()).str();
    // A result nobody reads (max-pool indices in inference) may be skipped
    // by its kernel call; a gathered weight is read only where its group's
    // readers read it (all of the group is gathered as one block).
    const bool maybeUnread = result.use_empty() || llvm::isa<GatherParamsStartOp>(op);
    line((maybeUnread ? "[[maybe_unused]] " : "") + type + "* const " + name +
         " = reinterpret_cast<" + type + "*>(arena + " +
         std::to_string(place.offset) + ");  // " +
         formatShape(dims(result)));
    names[result] = name;
  }
}

void FunctionEmitter::declareParam(Operation *op) {
  auto ref = llvm::cast<ParamRefOp>(op);
  std::string name = "p_" + sanitizeIdentifier(ref.getName());
  names[ref.getValue()] = name;
  // A param read twice in one function gets one pointer.
  if (!declaredParams.insert(name).second)
    return;
  std::string type = cppElementType(ref.getType()).str();
  line(type + "* const " + name + " = reinterpret_cast<" + type + "*>(state + " +
       std::to_string(program.paramOffset(ref.getName())) + ");  // " +
       ref.getName().str() + " " + formatShape(dims(ref.getValue())));
}

std::string FunctionEmitter::paramPointer(StringRef symbol) {
  std::string name = "p_" + sanitizeIdentifier(symbol);
  if (declaredParams.insert(name).second)
    line("float* const " + name + " = reinterpret_cast<float*>(state + " +
         std::to_string(program.paramOffset(symbol)) + ");  // " + symbol.str());
  return name;
}

} // namespace dtc
