//===- ConstantFolder.h - host-side evaluation of ONNX shape arithmetic ----===//
//
// PyTorch exports `x.view(x.size(0), -1)`, `torch.arange(T)` and masks as
// small integer subgraphs (Shape, Gather, Unsqueeze, Concat, Range, Slice,
// ...). The importer evaluates them while importing so that every shape in
// the dtc IR is static. The resolution rules of Reshape and Slice live here
// too: the op builders use them for the attributes of dtc.reshape/dtc.slice.
//
//===----------------------------------------------------------------------===//
#ifndef DTC_IMPORTER_CONSTANTFOLDER_H
#define DTC_IMPORTER_CONSTANTFOLDER_H

#include "importer/HostTensor.h"
#include "onnx/onnx_pb.h"
#include <optional>
#include <string>

namespace dtc {

enum class FoldStatus { NotFoldable, Folded, Failed };

/// Evaluates `node` when every present input is known (`inputs[i]` is null for
/// absent optional inputs). Integer and bool arithmetic folds; floating-point
/// values fold only through data movement and casts. On Failed, `error` says
/// why (without the node prefix).
FoldStatus foldOnHost(const onnx::NodeProto &node, int64_t opset,
                      llvm::ArrayRef<const HostTensor *> inputs,
                      llvm::SmallVectorImpl<HostTensor> &results, std::string &error);

/// ONNX Reshape's target shape with 0 (copy, unless allowZero) and -1 (infer)
/// resolved; nullopt and `error` when it does not fit `input`.
std::optional<Shape> resolveReshape(llvm::ArrayRef<int64_t> input,
                                    llvm::ArrayRef<int64_t> target, bool allowZero,
                                    std::string &error);

/// Slice parameters with axes normalized and starts/ends clamped per ONNX.
struct SliceParams {
  llvm::SmallVector<int64_t> starts, ends, axes, steps;
  Shape resultShape;
};
/// `axes` and `steps` may be empty (all leading axes, steps of 1).
bool resolveSlice(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> starts,
                  llvm::ArrayRef<int64_t> ends, llvm::ArrayRef<int64_t> axes,
                  llvm::ArrayRef<int64_t> steps, SliceParams &out, std::string &error);

/// Shape after inserting size-1 dimensions at `axes` (of the result).
std::optional<Shape> unsqueezeShape(llvm::ArrayRef<int64_t> input,
                                    llvm::ArrayRef<int64_t> axes, std::string &error);
/// Shape after removing `axes` (all size-1 dimensions when `axes` is empty).
std::optional<Shape> squeezeShape(llvm::ArrayRef<int64_t> input,
                                  llvm::ArrayRef<int64_t> axes, std::string &error,
                                  llvm::SmallVectorImpl<int64_t> *normalizedAxes = nullptr);

} // namespace dtc

#endif // DTC_IMPORTER_CONSTANTFOLDER_H
