// The parameters of 3-D convolution and pooling (NCDHW), their output sizes
// and the convolution's scratch: header-only and dependency-free, so that
// the compiler (dtc-choose-conv-algorithms records the workspace in the IR;
// codegen writes these structs with named fields) and the runtime
// (Conv3d.cpp, Pool3d.cpp) share one definition.
//
// Each spatial array is indexed depth, height, width. Pads are ONNX's: the
// begin pads [d, h, w] and the end pads [d, h, w].
#pragma once

#include <cstdint>

namespace dtcrt::cpu {

// x: [N, C, D, H, W], w: [K, C/groups, kernel...], y: [N, K, out...].
struct Conv3dParams {
  int64_t N, C;
  int64_t in[3];
  int64_t K;
  int64_t kernel[3];
  int64_t stride[3];
  int64_t padBegin[3], padEnd[3];
  int64_t dilation[3];
  int64_t groups;
};

// Output length along spatial dimension i (0 depth, 1 height, 2 width).
inline int64_t conv3d_out(const Conv3dParams& p, int i) {
  return (p.in[i] + p.padBegin[i] + p.padEnd[i] - p.dilation[i] * (p.kernel[i] - 1) - 1) /
             p.stride[i] +
         1;
}
inline int64_t conv3d_out_volume(const Conv3dParams& p) {
  return conv3d_out(p, 0) * conv3d_out(p, 1) * conv3d_out(p, 2);
}

// vol2col + sgemm: the column matrix of one image and group,
// [C/groups * kernel volume, output volume]. Every pass needs exactly this.
inline int64_t conv3d_workspace(const Conv3dParams& p) {
  return p.C / p.groups * p.kernel[0] * p.kernel[1] * p.kernel[2] * conv3d_out_volume(p);
}

// x: [N, C, D, H, W] -> y: [N, C, out...]; the output length is
// pool2d_out_size's rule (Kernels.h) per dimension.
struct Pool3dParams {
  int64_t N, C;
  int64_t in[3];
  int64_t kernel[3];
  int64_t stride[3];
  int64_t padBegin[3], padEnd[3];
  int64_t dilation[3];
  bool ceilMode;
  bool countIncludePad;  // average pool only
};

}  // namespace dtcrt::cpu
