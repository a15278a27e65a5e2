//===- ConstantFolder.cpp - host-side evaluation of ONNX shape arithmetic --===//
#include "importer/ConstantFolder.h"

#include "importer/OnnxAttributes.h"
#include "importer/TensorConversion.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace dtc {

//===----------------------------------------------------------------------===//
// Shape rules shared with the op builders
//===----------------------------------------------------------------------===//

std::optional<Shape> resolveReshape(ArrayRef<int64_t> input, ArrayRef<int64_t> target,
                                    bool allowZero, std::string &error) {
  Shape result;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= input.size()) {
        error = "shape entry " + std::to_string(i) + " is 0 but the input has rank " +
                std::to_string(input.size());
        return std::nullopt;
      }
      d = input[i];
    }
    if (d == -1) {
      if (inferred >= 0) {
        error = "the shape has more than one -1";
        return std::nullopt;
      }
      inferred = i;
      result.push_back(1);
      continue;
    }
    if (d < 0) {
      error = "shape entry " + std::to_string(i) + " is " + std::to_string(d);
      return std::nullopt;
    }
    if (__builtin_mul_overflow(known, d, &known)) {
      error = "the shape " + formatShape(target) + " has more than 2^63 elements";
      return std::nullopt;
    }
    result.push_back(d);
  }
  int64_t total = numElements(input);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      error = "cannot reshape " + formatShape(input) + " to " + formatShape(target);
      return std::nullopt;
    }
    result[inferred] = total / known;
  } else if (known != total) {
    error = "cannot reshape " + formatShape(input) + " to " + formatShape(target);
    return std::nullopt;
  }
  return result;
}

bool resolveSlice(ArrayRef<int64_t> shape, ArrayRef<int64_t> starts,
                  ArrayRef<int64_t> ends, ArrayRef<int64_t> axes,
                  ArrayRef<int64_t> steps, SliceParams &out, std::string &error) {
  int64_t rank = shape.size();
  size_t n = starts.size();
  if (ends.size() != n || (!axes.empty() && axes.size() != n) ||
      (!steps.empty() && steps.size() != n)) {
    error = "starts, ends, axes and steps differ in length";
    return false;
  }
  out = SliceParams();
  out.resultShape.assign(shape.begin(), shape.end());
  for (size_t i = 0; i < n; ++i) {
    int64_t axisIn = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    std::optional<int64_t> axis = normalizeAxis(axisIn, rank);
    if (!axis) {
      error = "axis " + std::to_string(axisIn) + " is out of range for rank " +
              std::to_string(rank);
      return false;
    }
    if (llvm::is_contained(out.axes, *axis)) {
      error = "axis " + std::to_string(axisIn) + " is repeated";
      return false;
    }
    int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) {
      error = "a step is 0";
      return false;
    }
    int64_t dim = shape[*axis];
    int64_t start = starts[i], end = ends[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    int64_t span = step > 0 ? end - start : start - end;
    int64_t absStep = step > 0 ? step : -step;
    out.resultShape[*axis] = span <= 0 ? 0 : (span + absStep - 1) / absStep;
    out.starts.push_back(start);
    out.ends.push_back(end);
    out.axes.push_back(*axis);
    out.steps.push_back(step);
  }
  return true;
}

std::optional<Shape> unsqueezeShape(ArrayRef<int64_t> input, ArrayRef<int64_t> axes,
                                    std::string &error) {
  int64_t rank = input.size() + axes.size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    std::optional<int64_t> axis = normalizeAxis(a, rank);
    if (!axis || inserted[*axis]) {
      error = "axis " + std::to_string(a) + " is out of range or repeated";
      return std::nullopt;
    }
    inserted[*axis] = true;
  }
  Shape result;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    result.push_back(inserted[i] ? 1 : input[next++]);
  return result;
}

std::optional<Shape> squeezeShape(ArrayRef<int64_t> input, ArrayRef<int64_t> axes,
                                  std::string &error,
                                  SmallVectorImpl<int64_t> *normalizedAxes) {
  int64_t rank = input.size();
  SmallVector<bool> drop(rank, false);
  for (int64_t a : axes) {
    std::optional<int64_t> axis = normalizeAxis(a, rank);
    if (!axis || input[*axis] != 1) {
      error = "axis " + std::to_string(a) + " is not a size-1 dimension of " +
              formatShape(input);
      return std::nullopt;
    }
    drop[*axis] = true;
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      drop[i] = input[i] == 1;
  Shape result;
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i])
      result.push_back(input[i]);
    else if (normalizedAxes)
      normalizedAxes->push_back(i);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Element helpers
//===----------------------------------------------------------------------===//

static void copyElement(HostTensor &dst, int64_t di, const HostTensor &src, int64_t si) {
  if (dst.isFloat())
    dst.floats[di] = src.floatAt(si);
  else
    dst.ints[di] = src.intAt(si);
}

static HostTensor withShape(const HostTensor &t, ArrayRef<int64_t> shape) {
  HostTensor out = t;
  out.shape.assign(shape.begin(), shape.end());
  return out;
}

/// Calls fn(outIndex, inIndices) for every element of the broadcast of `ins`.
template <typename Fn>
static bool forEachBroadcast(ArrayRef<const HostTensor *> ins, Shape &outShape,
                             std::string &error, Fn fn) {
  outShape.clear();
  for (const HostTensor *t : ins) {
    std::optional<Shape> joined = broadcastShapes(outShape, t->shape);
    if (!joined) {
      error = "shapes " + formatShape(outShape) + " and " + formatShape(t->shape) +
              " do not broadcast";
      return false;
    }
    outShape = *joined;
  }
  int64_t rank = outShape.size();
  // strides[k][d]: the stride of input k along output dimension d (0 when
  // broadcast).
  SmallVector<SmallVector<int64_t>> strides;
  for (const HostTensor *t : ins) {
    SmallVector<int64_t> s(rank, 0);
    int64_t stride = 1;
    int64_t offset = rank - t->shape.size();
    for (int64_t d = t->shape.size() - 1; d >= 0; --d) {
      if (t->shape[d] != 1)
        s[d + offset] = stride;
      stride *= t->shape[d];
    }
    strides.push_back(s);
  }
  SmallVector<int64_t> index(rank, 0), inIndex(ins.size(), 0);
  int64_t total = numElements(outShape);
  for (int64_t flat = 0; flat < total; ++flat) {
    fn(flat, ArrayRef<int64_t>(inIndex));
    for (int64_t d = rank - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < ins.size(); ++k)
        inIndex[k] += strides[k][d];
      if (index[d] < outShape[d])
        break;
      for (size_t k = 0; k < ins.size(); ++k)
        inIndex[k] -= strides[k][d] * index[d];
      index[d] = 0;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The folds
//===----------------------------------------------------------------------===//

/// The elementwise binary ops the folder evaluates.
static bool isBinary(const std::string &op) {
  for (const char *name : {"Add", "Sub", "Mul", "Div", "Mod", "Equal", "Less", "Greater",
                           "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"})
    if (op == name)
      return true;
  return false;
}

namespace {
struct Folder {
  const onnx::NodeProto &node;
  int64_t opset;
  ArrayRef<const HostTensor *> in;
  SmallVectorImpl<HostTensor> &results;
  std::string &error;

  FoldStatus fail(std::string message) {
    error = std::move(message);
    return FoldStatus::Failed;
  }
  FoldStatus done(HostTensor t) {
    results.push_back(std::move(t));
    return FoldStatus::Folded;
  }
  const HostTensor *input(int i) const {
    return i < static_cast<int>(in.size()) ? in[i] : nullptr;
  }
  SmallVector<int64_t> intsOf(const HostTensor &t) const {
    SmallVector<int64_t> v;
    for (int64_t i = 0; i < t.size(); ++i)
      v.push_back(t.intAt(i));
    return v;
  }
  /// Axes from the attribute (before `inputSince`) or from input 1.
  SmallVector<int64_t> axes(int64_t inputSince) const {
    if (opset < inputSince)
      return attrInts(node, "axes").value_or(SmallVector<int64_t>());
    const HostTensor *t = input(1);
    return t ? intsOf(*t) : SmallVector<int64_t>();
  }

  FoldStatus run();
  FoldStatus binary(const std::string &op);
  FoldStatus floatBinary(const std::string &op);
  FoldStatus scatterND();
  FoldStatus gather();
  FoldStatus slice();
  FoldStatus concat();
  FoldStatus range();
  FoldStatus transpose();
};
} // namespace

FoldStatus Folder::binary(const std::string &op) {
  const HostTensor &a = *in[0], &b = *in[1];
  bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                 op == "GreaterOrEqual";
  if (!compare && a.dtype != b.dtype)
    return FoldStatus::NotFoldable;
  if (!compare && a.isFloat())
    return floatBinary(op);
  HostTensor out;
  out.dtype = compare ? onnx_dtype::Bool : a.dtype;
  std::vector<int64_t> values;
  bool divByZero = false;
  const bool fmod = attrInt(node, "fmod", 0) != 0;
  Shape shape;
  const HostTensor *operands[] = {&a, &b};
  if (!forEachBroadcast(operands, shape, error, [&](int64_t, ArrayRef<int64_t> idx) {
        if (compare) {
          auto holds = [&](auto x, auto y) {
            return op == "Equal" ? x == y : op == "Less" ? x < y : op == "Greater" ? x > y
                   : op == "LessOrEqual" ? x <= y : x >= y;
          };
          values.push_back(a.isFloat() || b.isFloat()
                               ? holds(a.floatAt(idx[0]), b.floatAt(idx[1]))
                               : holds(a.ints[idx[0]], b.ints[idx[1]]));
          return;
        }
        int64_t x = a.ints[idx[0]], y = b.ints[idx[1]];
        if (op == "And" || op == "Or" || op == "Xor") {
          bool p = x != 0, q = y != 0;
          values.push_back(op == "And" ? p && q : op == "Or" ? p || q : p != q);
          return;
        }
        if (op == "Add") values.push_back(x + y);
        else if (op == "Sub") values.push_back(x - y);
        else if (op == "Mul") values.push_back(x * y);
        else if (y == 0) { divByZero = true; values.push_back(0); }
        else if (op == "Div") values.push_back(x / y);
        else {  // Mod: the divisor's sign (Python's %), or the dividend's (fmod)
          int64_t r = x % y;
          if (!fmod && r != 0 && ((r < 0) != (y < 0)))
            r += y;
          values.push_back(r);
        }
      }))
    return FoldStatus::Failed;
  if (divByZero)
    return fail("integer division by zero");
  out.shape = shape;
  out.ints = std::move(values);
  return done(std::move(out));
}

/// Float arithmetic on constants (a mask built from a folded one) in the
/// operands' precision: float32 rounds each result as the program would.
FoldStatus Folder::floatBinary(const std::string &op) {
  const HostTensor &a = *in[0], &b = *in[1];
  const bool single = a.dtype == onnx_dtype::Float;
  if (!single && a.dtype != onnx_dtype::Double)
    return FoldStatus::NotFoldable;
  if (op == "Mod" && attrInt(node, "fmod", 0) == 0)
    return fail("a float Mod needs fmod=1");
  HostTensor out;
  out.dtype = a.dtype;
  std::vector<double> values;
  const HostTensor *operands[] = {&a, &b};
  if (!forEachBroadcast(operands, out.shape, error, [&](int64_t, ArrayRef<int64_t> idx) {
        double x = a.floats[idx[0]], y = b.floats[idx[1]], r;
        if (single) {
          float p = static_cast<float>(x), q = static_cast<float>(y);
          r = op == "Add" ? p + q : op == "Sub" ? p - q : op == "Mul" ? p * q
              : op == "Div" ? p / q : std::fmod(p, q);
        } else {
          r = op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y
              : op == "Div" ? x / y : std::fmod(x, y);
        }
        values.push_back(r);
      }))
    return FoldStatus::Failed;
  out.floats = std::move(values);
  return done(std::move(out));
}

/// ScatterND without reduction: a copy of the data with the slices that
/// `indices` (its last axis indexes the data's leading axes) names replaced
/// by `updates` (PyTorch's index assignment on a constant, e.g. Swin's mask).
/// With a reduction it is a run-time dtc.scatter_nd.
FoldStatus Folder::scatterND() {
  const HostTensor &data = *in[0], &indices = *in[1], &updates = *in[2];
  if (attrString(node, "reduction", "none") != "none")
    return FoldStatus::NotFoldable;
  if (indices.shape.empty() || updates.dtype != data.dtype)
    return fail("indices must have rank >= 1 and updates the data's type");
  const int64_t k = indices.shape.back();
  const int64_t rank = data.shape.size();
  if (k < 1 || k > rank)
    return fail("the last axis of indices must be between 1 and the data's rank");
  const int64_t count = numElements(ArrayRef(indices.shape).drop_back());
  const int64_t slice = numElements(ArrayRef(data.shape).drop_front(k));
  if (updates.size() != count * slice)
    return fail("updates have " + std::to_string(updates.size()) + " elements, expected " +
                std::to_string(count * slice));
  HostTensor out = data;
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t idx = indices.intAt(i * k + d);
      if (idx < 0)
        idx += data.shape[d];
      if (idx < 0 || idx >= data.shape[d])
        return fail("index " + std::to_string(indices.intAt(i * k + d)) +
                    " is out of range for a dimension of size " + std::to_string(data.shape[d]));
      offset = offset * data.shape[d] + idx;
    }
    for (int64_t j = 0; j < slice; ++j)
      copyElement(out, offset * slice + j, updates, i * slice + j);
  }
  return done(std::move(out));
}

FoldStatus Folder::gather() {
  const HostTensor &data = *in[0], &indices = *in[1];
  int64_t rank = data.shape.size();
  std::optional<int64_t> axis = normalizeAxis(attrInt(node, "axis", 0), rank);
  if (!axis)
    return fail("axis is out of range");
  int64_t n = data.shape[*axis];
  int64_t outer = numElements(ArrayRef(data.shape).take_front(*axis));
  int64_t inner = numElements(ArrayRef(data.shape).drop_front(*axis + 1));
  HostTensor out;
  out.dtype = data.dtype;
  out.shape.assign(data.shape.begin(), data.shape.begin() + *axis);
  out.shape.append(indices.shape.begin(), indices.shape.end());
  out.shape.append(data.shape.begin() + *axis + 1, data.shape.end());
  out.allocate();
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < indices.size(); ++j) {
      int64_t idx = indices.intAt(j);
      if (idx < 0)
        idx += n;
      if (idx < 0 || idx >= n)
        return fail("index " + std::to_string(indices.intAt(j)) +
                    " is out of range for a dimension of size " + std::to_string(n));
      for (int64_t i = 0; i < inner; ++i)
        copyElement(out, k++, data, (o * n + idx) * inner + i);
    }
  return done(std::move(out));
}

FoldStatus Folder::slice() {
  const HostTensor &data = *in[0];
  SmallVector<int64_t> axes, steps;
  if (input(3))
    axes = intsOf(*input(3));
  if (input(4))
    steps = intsOf(*input(4));
  SliceParams p;
  if (!resolveSlice(data.shape, intsOf(*in[1]), intsOf(*in[2]), axes, steps, p, error))
    return FoldStatus::Failed;
  int64_t rank = data.shape.size();
  SmallVector<int64_t> start(rank, 0), step(rank, 1), stride(rank, 1);
  for (size_t i = 0; i < p.axes.size(); ++i) {
    start[p.axes[i]] = p.starts[i];
    step[p.axes[i]] = p.steps[i];
  }
  for (int64_t d = rank - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * data.shape[d + 1];
  HostTensor out;
  out.dtype = data.dtype;
  out.shape = p.resultShape;
  out.allocate();
  SmallVector<int64_t> index(rank, 0);
  for (int64_t flat = 0, e = out.size(); flat < e; ++flat) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += (start[d] + index[d] * step[d]) * stride[d];
    copyElement(out, flat, data, src);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
  return done(std::move(out));
}

/// Transpose of a host tensor (PyTorch's pad arithmetic for F.pad/
/// nn.ReflectionPad2d reverses [begin, end] pairs with one).
FoldStatus Folder::transpose() {
  const HostTensor &data = *in[0];
  int64_t rank = data.shape.size();
  SmallVector<int64_t> perm = attrInts(node, "perm").value_or(SmallVector<int64_t>());
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  SmallVector<bool> seen(rank, false);
  if (static_cast<int64_t>(perm.size()) != rank)
    return fail("perm does not match the rank");
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return fail("perm is not a permutation");
    seen[p] = true;
  }
  SmallVector<int64_t> stride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * data.shape[d + 1];
  HostTensor out;
  out.dtype = data.dtype;
  for (int64_t p : perm)
    out.shape.push_back(data.shape[p]);
  out.allocate();
  SmallVector<int64_t> index(rank, 0);
  for (int64_t flat = 0, e = out.size(); flat < e; ++flat) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += index[d] * stride[perm[d]];
    copyElement(out, flat, data, src);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
  return done(std::move(out));
}

FoldStatus Folder::concat() {
  const HostTensor &first = *in[0];
  int64_t rank = first.shape.size();
  std::optional<int64_t> axis = normalizeAxis(attrInt(node, "axis", 0), rank);
  if (!axis)
    return fail("axis is out of range");
  HostTensor out;
  out.dtype = first.dtype;
  out.shape = first.shape;
  out.shape[*axis] = 0;
  for (const HostTensor *t : in) {
    if (t->dtype != first.dtype || static_cast<int64_t>(t->shape.size()) != rank)
      return fail("inputs differ in rank or element type");
    out.shape[*axis] += t->shape[*axis];
  }
  out.allocate();
  int64_t outer = numElements(ArrayRef(first.shape).take_front(*axis));
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor *t : in) {
      int64_t chunk = numElements(ArrayRef(t->shape).drop_front(*axis));
      for (int64_t i = 0; i < chunk; ++i)
        copyElement(out, k++, *t, o * chunk + i);
    }
  return done(std::move(out));
}

FoldStatus Folder::range() {
  const HostTensor &start = *in[0], &limit = *in[1], &delta = *in[2];
  if (start.isFloat() || limit.isFloat() || delta.isFloat()) {
    if (start.dtype != limit.dtype || start.dtype != delta.dtype)
      return fail("start, limit and delta must have one type");
    // ONNX's count, ceil((limit - start) / delta), and start + i * delta,
    // in double (rounded to the tensor's type when it is materialized).
    double s = start.floats[0], l = limit.floats[0], d = delta.floats[0];
    if (d == 0)
      return fail("delta is 0");
    double count = std::max(0.0, std::ceil((l - s) / d));
    if (!(count <= double(1 << 24)))
      return fail("the range would have more than 2^24 elements");
    HostTensor out;
    out.dtype = start.dtype;
    out.shape = {int64_t(count)};
    for (int64_t i = 0; i < int64_t(count); ++i)
      out.floats.push_back(s + double(i) * d);
    return done(std::move(out));
  }
  int64_t s = start.intAt(0), l = limit.intAt(0), d = delta.intAt(0);
  if (d == 0)
    return fail("delta is 0");
  int64_t count = std::max<int64_t>(0, (l - s + (d > 0 ? d - 1 : d + 1)) / d);
  HostTensor out;
  out.dtype = start.dtype;
  out.shape = {count};
  for (int64_t i = 0; i < count; ++i)
    out.ints.push_back(s + i * d);
  return done(std::move(out));
}

FoldStatus Folder::run() {
  const std::string &op = node.op_type();
  if (op == "Identity")
    return done(*in[0]);
  if (op == "Cast") {
    int64_t to = attrInt(node, "to", 0);
    if (to == onnx_dtype::Undefined || !isFloatDType(to)) {
      if (to != onnx_dtype::Int64 && to != onnx_dtype::Int32 && to != onnx_dtype::Bool)
        return FoldStatus::NotFoldable; // the builder reports the type
    }
    return done(castHost(*in[0], to));
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    SmallVector<int64_t> a = axes(13);
    std::optional<Shape> shape = op == "Unsqueeze"
                                     ? unsqueezeShape(in[0]->shape, a, error)
                                     : squeezeShape(in[0]->shape, a, error);
    if (!shape)
      return FoldStatus::Failed;
    return done(withShape(*in[0], *shape));
  }
  if (op == "Reshape") {
    std::optional<Shape> shape = resolveReshape(
        in[0]->shape, intsOf(*in[1]), attrInt(node, "allowzero", 0) != 0, error);
    if (!shape)
      return FoldStatus::Failed;
    return done(withShape(*in[0], *shape));
  }
  if (op == "Flatten") {
    int64_t rank = in[0]->shape.size();
    int64_t axis = attrInt(node, "axis", 1);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis > rank)
      return fail("axis is out of range");
    ArrayRef<int64_t> s = in[0]->shape;
    return done(withShape(*in[0], {numElements(s.take_front(axis)),
                                   numElements(s.drop_front(axis))}));
  }
  if (op == "Concat")
    return concat();
  if (op == "Gather")
    return gather();
  if (op == "Slice")
    return slice();
  if (op == "Range")
    return range();
  if (op == "Transpose")
    return transpose();
  if (isBinary(op))
    return binary(op);
  if (op == "ScatterND")
    return scatterND();
  if (op == "Not") {
    if (in[0]->dtype != onnx_dtype::Bool)
      return fail("input is not bool");
    HostTensor out = *in[0];
    for (int64_t &v : out.ints)
      v = !v;
    return done(std::move(out));
  }
  if (op == "Neg" && !in[0]->isFloat()) {  // a negated shape entry or axis
    HostTensor out = *in[0];
    for (int64_t &v : out.ints)
      v = -v;
    return done(std::move(out));
  }
  if (op == "Expand") {
    HostTensor target;
    target.shape = intsOf(*in[1]);
    target.ints.assign(target.size(), 0);
    HostTensor out;
    out.dtype = in[0]->dtype;
    const HostTensor *operands[] = {in[0], &target};
    std::vector<std::pair<int64_t, int64_t>> copies;
    if (!forEachBroadcast(operands, out.shape, error,
                          [&](int64_t flat, ArrayRef<int64_t> idx) {
                            copies.push_back({flat, idx[0]});
                          }))
      return FoldStatus::Failed;
    out.allocate();
    for (auto [dst, src] : copies)
      copyElement(out, dst, *in[0], src);
    return done(std::move(out));
  }
  if (op == "Where") {
    const HostTensor &c = *in[0], &x = *in[1], &y = *in[2];
    if (x.dtype != y.dtype)
      return FoldStatus::NotFoldable;
    HostTensor out;
    out.dtype = x.dtype;
    const HostTensor *operands[] = {&c, &x, &y};
    std::vector<std::pair<bool, int64_t>> picks;
    if (!forEachBroadcast(operands, out.shape, error,
                          [&](int64_t, ArrayRef<int64_t> idx) {
                            bool cond = c.intAt(idx[0]) != 0;
                            picks.push_back({cond, cond ? idx[1] : idx[2]});
                          }))
      return FoldStatus::Failed;
    out.allocate();
    for (size_t i = 0; i < picks.size(); ++i)
      copyElement(out, i, picks[i].first ? x : y, picks[i].second);
    return done(std::move(out));
  }
  if (op == "ConstantOfShape") {
    HostTensor out;
    out.dtype = onnx_dtype::Float;
    out.shape = intsOf(*in[0]);
    HostTensor fill;
    fill.dtype = onnx_dtype::Float;
    fill.shape = {1};
    fill.floats = {0.0};
    if (const onnx::AttributeProto *value = findAttr(node, "value"))
      if (!tensorProtoToHost(value->t(), fill, error) || fill.size() != 1)
        return fail(error.empty() ? "value must hold one element" : "value " + error);
    out.dtype = fill.dtype;
    out.allocate();
    for (int64_t i = 0; i < out.size(); ++i)
      copyElement(out, i, fill, 0);
    return done(std::move(out));
  }
  return FoldStatus::NotFoldable;
}

FoldStatus foldOnHost(const onnx::NodeProto &node, int64_t opset,
                      ArrayRef<const HostTensor *> inputs,
                      SmallVectorImpl<HostTensor> &results, std::string &error) {
  // The first input of every foldable op is required.
  if (inputs.empty() || !inputs[0])
    return FoldStatus::NotFoldable;
  const std::string &op = node.op_type();
  size_t required = 1;
  if (op == "Range" || op == "Where" || op == "ScatterND")
    required = 3;
  else if (op == "Gather" || op == "Slice" || op == "Reshape" || op == "Expand" ||
           isBinary(op))
    required = 2;
  if (op == "Concat")
    required = inputs.size();
  if (inputs.size() < required)
    return FoldStatus::NotFoldable;
  for (size_t i = 0; i < required; ++i)
    if (!inputs[i])
      return FoldStatus::NotFoldable;
  Folder folder{node, opset, inputs, results, error};
  FoldStatus status = folder.run();
  // Host arithmetic is on int64: narrow integer results wrap to their type.
  if (status == FoldStatus::Folded)
    for (HostTensor &result : results)
      if (!result.isFloat() && result.dtype != onnx_dtype::Bool)
        for (int64_t &value : result.ints)
          value = wrapToDType(value, result.dtype);
  return status;
}

} // namespace dtc
