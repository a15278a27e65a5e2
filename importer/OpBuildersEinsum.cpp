//===- OpBuildersEinsum.cpp - Einsum -> transpose, reduce_sum, matmul ----===//
//
// Einsum with one or two operands: the forms models use ('bij,bjk->bik',
// 'bhqd,bhkd->bhqk', 'ij,jk', 'ij->ji', 'i,i'). An ellipsis stands for
// letters the equation leaves free (of one size in every operand: no
// broadcasting); a letter an operand repeats takes that operand's diagonal
// first (a transpose, a reshape and a strided slice). Letters only one operand has
// and the output lacks are summed out first (reduce_sum); the two operands
// are then transposed and reshaped to [batch, M, K] and [batch, K, N] (batch:
// letters of both operands and the output; K: of both, not the output) for
// one batched matmul, whose result is reshaped and transposed to the
// output's order. Everything else is refused in one line naming the node.
//
//===----------------------------------------------------------------------===//
#include "importer/ImporterContext.h"
#include "importer/OnnxAttributes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cctype>

using namespace mlir;

namespace dtc {

namespace {

/// One operand (or the output) of the equation: its letters in order.
using Term = std::string;

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// Creates OpTy and returns its first result, or null after an error.
template <typename OpTy, typename... Args> Value make(NodeContext &nc, Args &&...args) {
  auto op = nc.create<OpTy>(1, std::forward<Args>(args)...);
  return op ? op->getResult(0) : Value();
}

Value reshape(NodeContext &nc, Value x, ArrayRef<int64_t> shape) {
  if (!x || typeOf(x).getShape() == shape)
    return x;
  return make<ReshapeOp>(nc, x, nc.b.getDenseI64ArrayAttr(shape));
}

/// `x` (letters `from`) with its dimensions in the order of `to`, a
/// permutation of `from`.
Value permute(NodeContext &nc, Value x, const Term &from, const Term &to) {
  if (!x || from == to)
    return x;
  SmallVector<int64_t> perm;
  for (char c : to)
    perm.push_back(int64_t(from.find(c)));
  return make<TransposeOp>(nc, x, nc.b.getDenseI64ArrayAttr(perm));
}

/// Sums out of `x` (letters `term`) the letters not in `keep`; updates term.
Value sumOut(NodeContext &nc, Value x, Term &term, const std::string &keep) {
  SmallVector<int64_t> axes;
  Term kept;
  for (size_t i = 0; i < term.size(); ++i) {
    if (keep.find(term[i]) == std::string::npos)
      axes.push_back(int64_t(i));
    else
      kept.push_back(term[i]);
  }
  if (!x || axes.empty())
    return x;
  term = kept;
  return make<ReduceSumOp>(nc, x, nc.b.getDenseI64ArrayAttr(axes), nc.b.getBoolAttr(false));
}

/// The letters of `term` in `other` (or not in it, with `in` false).
Term lettersIn(const Term &term, const std::string &other, bool in = true) {
  Term out;
  for (char c : term)
    if ((other.find(c) != std::string::npos) == in)
      out.push_back(c);
  return out;
}

/// Replaces each operand's "..." by letters the equation does not use, the
/// same ones for the same (right-aligned) dimensions of every operand, and
/// the output's by all of them; an implicit output gets them first. Returns
/// the letters (empty without an ellipsis), or an error message in `why`.
std::string expandEllipsis(SmallVectorImpl<Term> &inputs, Term &output, bool implicitOutput,
                           ArrayRef<int64_t> ranks, const std::string &equation,
                           std::string &why) {
  int64_t widest = 0;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (size_t at = inputs[k].find("..."); at != std::string::npos)
      widest = std::max<int64_t>(widest, ranks[k] - int64_t(inputs[k].size() - 3));
  std::string fresh;
  for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
    if (int64_t(fresh.size()) < widest && equation.find(c) == std::string::npos)
      fresh.push_back(c);
  if (int64_t(fresh.size()) < widest) {
    why = "the ellipsis needs more letters than the equation leaves";
    return "";
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    size_t at = inputs[k].find("...");
    if (at == std::string::npos)
      continue;
    int64_t covered = ranks[k] - int64_t(inputs[k].size() - 3);
    if (covered < 0) {
      why = "operand " + std::to_string(k) + " has fewer dimensions than letters";
      return "";
    }
    inputs[k].replace(at, 3, fresh.substr(fresh.size() - covered));
  }
  if (!implicitOutput) {
    if (size_t at = output.find("..."); at != std::string::npos)
      output.replace(at, 3, fresh);
  } else {
    output = fresh + output;
  }
  return fresh;
}

/// Takes the diagonal of every letter `term` repeats: `x`'s two dimensions
/// of that letter (of one size) are moved last, flattened, and sliced with a
/// step of size + 1, leaving the letter once, last. Updates term.
Value takeDiagonals(NodeContext &nc, Value x, Term &term) {
  for (size_t i = 0; x && i < term.size(); ++i) {
    size_t j = term.find(term[i], i + 1);
    if (j == std::string::npos)
      continue;
    ArrayRef<int64_t> dims = typeOf(x).getShape();
    if (dims[i] != dims[j]) {
      nc.error() << "letter '" << term[i] << "' repeats in an operand over dimensions of sizes "
                 << dims[i] << " and " << dims[j];
      return Value();
    }
    int64_t n = dims[i];
    Term rest;
    SmallVector<int64_t> shape;
    for (size_t d = 0; d < term.size(); ++d)
      if (d != i && d != j) {
        rest.push_back(term[d]);
        shape.push_back(dims[d]);
      }
    SmallVector<int64_t> perm;
    for (size_t d = 0; d < term.size(); ++d)
      if (d != i && d != j)
        perm.push_back(int64_t(d));
    perm.append({int64_t(i), int64_t(j)});
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      x = make<TransposeOp>(nc, x, nc.b.getDenseI64ArrayAttr(perm));
    shape.push_back(n * n);
    x = reshape(nc, x, shape);
    int64_t last = int64_t(shape.size()) - 1;
    x = x ? make<SliceOp>(nc, x, nc.b.getDenseI64ArrayAttr({0}),
                          nc.b.getDenseI64ArrayAttr({n * n}),
                          nc.b.getDenseI64ArrayAttr({last}),
                          nc.b.getDenseI64ArrayAttr({n + 1}))
          : Value();
    term = rest + term[i];
    i = size_t(-1);  // start over: the letters moved
  }
  return x;
}

} // namespace

static LogicalResult buildEinsum(NodeContext &nc) {
  std::string equation;
  for (char c : attrString(nc.node, "equation", ""))
    if (c != ' ')
      equation.push_back(c);
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  SmallVector<Term> inputs;
  for (StringRef part : llvm::split(StringRef(lhs), ','))
    inputs.push_back(part.str());
  auto refuse = [&](StringRef why) {
    nc.error() << "equation '" << equation << "': " << why
               << "; dtc supports one or two operands";
    return failure();
  };
  if (inputs.size() != size_t(nc.node.input_size()) || inputs.size() > 2)
    return refuse("not one or two operands matching the node's inputs");
  SmallVector<Value> values;
  SmallVector<int64_t> ranks;
  for (int k = 0; k < int(inputs.size()); ++k) {
    Value v = nc.input(k);
    if (!v)
      return failure();
    values.push_back(v);
    ranks.push_back(typeOf(v).getRank());
  }
  Term output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
  } else { // implicit: the letters that appear once, alphabetically
    std::string all = llvm::join(inputs, "");
    for (char c = 'A'; c <= 'z'; ++c)
      if (std::isalpha(static_cast<unsigned char>(c)) && llvm::count(all, c) == 1)
        output.push_back(c);
  }
  std::string why;
  std::string ellipsis =
      expandEllipsis(inputs, output, arrow == std::string::npos, ranks, equation, why);
  if (!why.empty())
    return refuse(why);
  // Repeated letters within an operand: its diagonals.
  for (int k = 0; k < int(inputs.size()); ++k) {
    for (char c : inputs[k])
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return refuse("'" + std::string(1, c) + "' is not a letter or an ellipsis");
    if (inputs[k].size() != size_t(ranks[k]))
      return refuse("operand " + std::to_string(k) + " has rank " + std::to_string(ranks[k]) +
                    ", not " + std::to_string(inputs[k].size()));
    if (!(values[k] = takeDiagonals(nc, values[k], inputs[k])))
      return failure();
  }
  // Each letter's size, checked across operands.
  llvm::StringMap<int64_t> sizes;
  for (int k = 0; k < int(inputs.size()); ++k) {
    ArrayRef<int64_t> dims = typeOf(values[k]).getShape();
    const Term &term = inputs[k];
    for (size_t i = 0; i < term.size(); ++i) {
      char c = term[i];
      auto [it, fresh] = sizes.try_emplace(StringRef(&c, 1), dims[i]);
      if (!fresh && it->second != dims[i])
        return refuse((ellipsis.find(c) != std::string::npos
                           ? std::string("an ellipsis dimension")
                           : "letter '" + std::string(1, c) + "'") +
                      " has sizes " + std::to_string(it->second) + " and " +
                      std::to_string(dims[i]) + " (no broadcasting)");
    }
  }
  for (size_t i = 0; i < output.size(); ++i)
    if (!sizes.count(StringRef(&output[i], 1)) ||
        output.find(output[i], i + 1) != std::string::npos)
      return refuse("output letter '" + std::string(1, output[i]) +
                    "' is repeated or in no operand");
  auto size = [&](char c) { return sizes.lookup(StringRef(&c, 1)); };
  auto dimsOf = [&](const Term &t) {
    SmallVector<int64_t> d;
    for (char c : t)
      d.push_back(size(c));
    return d;
  };
  auto product = [&](const Term &t) {
    int64_t n = 1;
    for (char c : t)
      n *= size(c);
    return n;
  };

  Value result;
  if (values.size() == 1) {
    Term term = inputs[0];
    result = permute(nc, sumOut(nc, values[0], term, output), term, output);
  } else {
    Term a = inputs[0], b = inputs[1];
    // Letters one operand alone has and the output lacks are summed first.
    Value x = sumOut(nc, values[0], a, b + output);
    Value y = sumOut(nc, values[1], b, a + output);
    Term batch = lettersIn(lettersIn(a, b), output);
    Term contracted = lettersIn(lettersIn(a, b), output, false);
    Term aFree = lettersIn(a, b, false), bFree = lettersIn(b, a, false);
    int64_t nb = product(batch), m = product(aFree), k = product(contracted), n = product(bFree);
    x = reshape(nc, permute(nc, x, a, batch + aFree + contracted), {nb, m, k});
    y = reshape(nc, permute(nc, y, b, batch + contracted + bFree), {nb, k, n});
    Value z = x && y ? make<MatMulOp>(nc, x, y) : Value();
    Term zTerm = batch + aFree + bFree;
    result = permute(nc, reshape(nc, z, dimsOf(zTerm)), zTerm, output);
  }
  if (!result)
    return failure();
  nc.setOutput(0, result);
  return success();
}

void populateEinsumBuilders(BuilderTable &table) { table["Einsum"] = buildEinsum; }

} // namespace dtc
