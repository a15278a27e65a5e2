// dtcrt CPU kernel layer: the one header generated programs include.
//
// Conventions (apply to every function below unless its comment says otherwise):
//  * Tensors are contiguous, row-major float32 buffers; shapes are int64_t arrays
//    with an explicit rank (rank 0 = scalar, pointer may be null). At most
//    kMaxRank dimensions.
//  * "Broadcast" means numpy broadcasting: shapes are right-aligned and a dim of 1
//    stretches. The caller passes every operand's shape and the output's shape.
//  * Outputs are overwritten (never accumulated) unless the comment says
//    "accumulates". Outputs must not alias inputs unless the comment allows it.
//  * Kernels never allocate. Those that need scratch take `float* workspace`
//    sized by the matching *_workspace() function (a count of floats).
//  * GEMMs run on OpenBLAS's threads; the direct convolutions, max pooling
//    and ReLU on the runtime's own (Parallel.h), giving the same bits for
//    any thread count; the rest is single-threaded. dtcrt::setNumThreads
//    sets both.
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include "runtime/cpu/ConvAlgorithm.h"
#include "runtime/cpu/Window3d.h"

namespace dtcrt {

enum class DType : int32_t;  // runtime/Program.h

// Threads for every sgemm (openblas_set_num_threads) and for the runtime's
// threaded kernels.
void setNumThreads(int n);
// The current OpenBLAS thread count.
int getNumThreads();

namespace cpu {

constexpr int kMaxRank = 8;

// Element types beyond float32 (inference programs of ONNX models): double,
// the integers int8 ... uint64 as their C++ types, bool as uint8_t 0/1,
// bfloat16 as its bits in a uint16_t (section 10), and float16 as its bits
// in this struct, a type of its own so that the templates below compute on
// its value (widened to float, each result rounded to nearest even).
struct Float16 {
  uint16_t bits;
};

// ============================================================================
// 1. Elementwise (Elementwise.cpp)
// ============================================================================

// y = a OP b with numpy broadcasting; aShape/bShape broadcast to yShape.
// y may alias a or b when that operand has the output's shape.
void add(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank);
void sub(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank);
void mul(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank);
// True IEEE division a / b.
void div(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank);
// std::pow(a, b); a scalar exponent of 0.5, 1, 2, 3, -1 takes an exact fast path.
void pow(const float* a, const int64_t* aShape, int aRank, const float* b,
         const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank);

// Unary maps over n elements; y may alias x.
void sqrt(const float* x, float* y, int64_t n);     // y = sqrt(x)
void neg(const float* x, float* y, int64_t n);      // y = -x
void exp(const float* x, float* y, int64_t n);      // y = e^x (rel err < 1.2e-7, vectorized)
void log(const float* x, float* y, int64_t n);      // y = ln(x)
void relu(const float* x, float* y, int64_t n);     // y = max(x, 0) (NaN propagates)
void sigmoid(const float* x, float* y, int64_t n);  // y = 1 / (1 + e^-x)
void tanh(const float* x, float* y, int64_t n);     // y = tanh(x) (rel err < 2.5e-7, vectorized)
void erf(const float* x, float* y, int64_t n);      // y = erf(x) (abs err < 2e-7, vectorized)
// approximate=false: y = 0.5 x (1 + erf(x / sqrt 2))            (PyTorch "none")
// approximate=true:  y = 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))  ("tanh")
void gelu(const float* x, float* y, int64_t n, bool approximate);

// Backward helpers; dx may alias dy.
void relu_grad(const float* x, const float* dy, float* dx, int64_t n);     // dy if x>0 else 0
void sigmoid_grad(const float* y, const float* dy, float* dx, int64_t n);  // dy*y*(1-y), y = output
void tanh_grad(const float* y, const float* dy, float* dx, int64_t n);     // dy*(1-y^2), y = output
void gelu_grad(const float* x, const float* dy, float* dx, int64_t n, bool approximate);  // dy*gelu'(x)
void erf_grad(const float* x, const float* dy, float* dx, int64_t n);      // dy*2/sqrt(pi)*e^(-x^2)

// The elementwise activation family (Activation.cpp): one kernel pair for
// every activation that is a function of x and two constants. The kind is
// the runtime's copy of dtc.activation's `kind` attribute (same numbering).
enum class Activation : int {
  LeakyRelu = 0,        // x > 0 ? x : alpha x
  Elu = 1,              // x > 0 ? x : alpha (e^x - 1)
  Selu = 2,             // beta (x > 0 ? x : alpha (e^x - 1)); beta = gamma
  Celu = 3,             // max(0, x) + min(0, alpha (e^(x/alpha) - 1))
  ThresholdedRelu = 4,  // x > alpha ? x : 0
  Softplus = 5,         // ln(1 + e^x) (x when x > 20, as PyTorch)
  Softsign = 6,         // x / (1 + |x|)
  HardSigmoid = 7,      // max(0, min(1, alpha x + beta))
  HardSwish = 8,        // x min(max(x + 3, 0), 6) / 6
  Mish = 9,             // x tanh(ln(1 + e^x))
  Clip = 10,            // min(max(x, alpha), beta); +-inf for an absent bound
  Abs = 11,
  Sign = 12,            // -1, 0, 1
  Floor = 13,
  Ceil = 14,
  Round = 15,           // to nearest, ties to even
  Reciprocal = 16,      // 1 / x
  // Trigonometric and hyperbolic functions and their inverses (libm's, in
  // float); outside an inverse's domain (|x| > 1 for asin/acos/atanh, x < 1
  // for acosh) the result is NaN.
  Sin = 17,
  Cos = 18,
  Tan = 19,
  Asin = 20,
  Acos = 21,
  Atan = 22,
  Sinh = 23,
  Cosh = 24,
  Asinh = 25,
  Acosh = 26,
  Atanh = 27,
};
// y = f(x) over n elements; y may alias x.
void activation(const float* x, float* y, int64_t n, Activation kind, float alpha, float beta);
// dx = dy * f'(x), with PyTorch's value at every kink: leaky_relu/elu/selu
// take the negative side at 0; clip (hardtanh) and hard_sigmoid pass dy only
// strictly inside the bounds; hard_swish is 0 below -3, dy (x/3 + 1/2) on
// [-3, 3], dy above; abs is 0 at 0; sign/floor/ceil/round are 0; the
// inverse trigonometric functions' derivatives are +-inf at the ends of
// their domains (x = +-1; acosh at 1), as PyTorch's. dx may alias dy.
void activation_grad(const float* x, const float* dy, float* dx, int64_t n, Activation kind,
                     float alpha, float beta);

// Comparisons and logic on run-time values (Compare.cpp), numpy
// broadcasting, bool results as uint8_t 0/1. The kinds are the runtime's
// copies of dtc.compare's predicate and dtc.logical's kind (same numbering).
enum class Compare : int { Eq = 0, Lt = 1, Gt = 2, Le = 3, Ge = 4 };
enum class Logic : int { And = 0, Or = 1, Xor = 2 };
// y = a PRED b, for T = every element type but bf16 (NaN: unequal, unordered).
template <typename T>
void compare(const T* a, const int64_t* aShape, int aRank, const T* b, const int64_t* bShape,
             int bRank, uint8_t* y, const int64_t* yShape, int yRank, Compare predicate);
// y = a KIND b on bools (any nonzero byte is true).
void logical(const uint8_t* a, const int64_t* aShape, int aRank, const uint8_t* b,
             const int64_t* bShape, int bRank, uint8_t* y, const int64_t* yShape, int yRank,
             Logic kind);
void logical_not(const uint8_t* x, uint8_t* y, int64_t n);

// y = max(a, b) / min(a, b) with numpy broadcasting (NaN propagates).
void maximum(const float* a, const int64_t* aShape, int aRank, const float* b,
             const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank);
void minimum(const float* a, const int64_t* aShape, int aRank, const float* b,
             const int64_t* bShape, int bRank, float* y, const int64_t* yShape, int yRank);
// Gradients of maximum (isMax) or minimum as PyTorch routes them: dy goes to
// the selected operand, half to each at a tie. da and db have yShape (the
// caller reduces them to the operands' shapes).
void extremum_grad(const float* a, const int64_t* aShape, int aRank, const float* b,
                   const int64_t* bShape, int bRank, const float* dy, float* da, float* db,
                   const int64_t* yShape, int yRank, bool isMax);

// Dropout: element i of a call keeps with probability 1-ratio; the decision is a
// pure function of (seed, step, offset+i) (counter-based hash, no state), so a
// replay or a chunked call (offset = index of the chunk's first element) gives
// the same mask. y = keep ? x/(1-ratio) : 0; mask[i] = keep (1/0).
// ratio = 0 keeps everything; ratio >= 1 drops everything (y = 0).
void dropout(const float* x, float* y, uint8_t* mask, int64_t n, float ratio,
             uint64_t seed, uint64_t step, uint64_t offset = 0);
// ONNX Dropout with its training_mode and ratio given at run time (each a
// one-element tensor): dropout() with *ratio (which must be in [0, 1)) when
// *training is nonzero, else y = x and every mask element 1.
void dropout_if(const float* x, float* y, uint8_t* mask, int64_t n, const float* ratio,
                const uint8_t* training, uint64_t seed, uint64_t step);
// dx = mask ? dy/(1-ratio) : 0 (0 everywhere if ratio >= 1).
void dropout_grad(const uint8_t* mask, const float* dy, float* dx, int64_t n, float ratio);

// Sum a broadcast gradient dy of shape outShape back to an operand's shape
// inShape (inShape must broadcast to outShape): dx[j] = sum of dy over the
// elements that operand element j was broadcast to. dx is overwritten.
void reduce_to_shape(const float* dy, const int64_t* outShape, int outRank, float* dx,
                     const int64_t* inShape, int inRank);
// The same on float64 and on int64/int32 (integer sums wrap), for ReduceSum
// in inference programs.
void reduce_to_shape(const double* dy, const int64_t* outShape, int outRank, double* dx,
                     const int64_t* inShape, int inRank);
void reduce_to_shape(const int64_t* dy, const int64_t* outShape, int outRank, int64_t* dx,
                     const int64_t* inShape, int inRank);
void reduce_to_shape(const int32_t* dy, const int64_t* outShape, int outRank, int32_t* dx,
                     const int64_t* inShape, int inRank);

// y = cond != 0 ? x : z, all three broadcast to yShape. cond is uint8/bool.
// (T = every element type: float, double, Float16, the integers, bools.)
template <typename T>
void where(const uint8_t* cond, const int64_t* cShape, int cRank, const T* x,
           const int64_t* xShape, int xRank, const T* z, const int64_t* zShape, int zRank,
           T* y, const int64_t* yShape, int yRank);

// y = a KIND b with numpy broadcasting (Arith.cpp), for T = the integers
// int8_t ... uint64_t (every kind; integer results wrap, Div truncates toward
// 0, a division or remainder by 0 gives 0, a negative Pow exponent gives 0
// unless a = +-1) and float, double and Float16 (float: used for Mod and
// Fmod; Float16 computes in float and rounds each result). Mod takes the
// divisor's sign (Python's %), Fmod the dividend's (C's fmod). ShiftLeft and
// ShiftRight (ONNX BitShift) are for the unsigned integers only: a << b and
// a >> b, 0 when b is at least the type's width.
enum class Arith : int { Add = 0, Sub = 1, Mul = 2, Div = 3, Max = 4, Min = 5, Pow = 6,
                         Mod = 7, Fmod = 8, ShiftLeft = 9, ShiftRight = 10 };
template <typename T>
void arith(const T* a, const int64_t* aShape, int aRank, const T* b, const int64_t* bShape,
           int bRank, T* y, const int64_t* yShape, int yRank, Arith kind);

// ArgMax (isMax) / ArgMin of x viewed as [outer, n, inner] along n
// (ArgExtremum.cpp): y [outer, inner] is the first index of the extremum, or
// the last with selectLast. T = float, int64_t, int32_t.
template <typename T>
void arg_extremum(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t* y,
                  bool isMax, bool selectLast);
// CumSum (CumSum.cpp): y = the cumulative sum of x (shape, rank) along
// `axis` (negative counts from the end; out of range throws), exclusive
// (each element's sum leaves itself out) and/or reverse (from the end).
// y may be x. T = float, double, int64_t, int32_t.
template <typename T>
void cumsum(const T* x, const int64_t* shape, int rank, int64_t axis, bool exclusive, bool reverse,
            T* y);
// ReduceMax (isMax) or ReduceMin: y (yShape: xShape with the reduced
// dimensions 1, same rank) = the extremum of x over the reduced dimensions.
// NaN propagates; an empty reduction gives -inf (max) or +inf (min).
void reduce_extremum(const float* x, const int64_t* xShape, int rank, float* y,
                     const int64_t* yShape, bool isMax);
// ReduceProd (Reduce.cpp): y (yShape: xShape with the reduced
// dimensions 1, same rank) = the product of x over the reduced dimensions
// (1 for an empty reduction). reduce_prod_grad: dx = dy times the product of
// the other elements of each element's group, from prefix and suffix
// products (no division: exact where x has zeros).
void reduce_prod(const float* x, const int64_t* xShape, int rank, float* y,
                 const int64_t* yShape);
void reduce_prod_grad(const float* x, const int64_t* xShape, int rank, const float* dy,
                      const int64_t* yShape, float* dx);
// ReduceLogSumExp (Reduce.cpp): y = log(sum(exp(x))) over the reduced
// dimensions (yShape as reduce_prod's), as m + log(sum(exp(x - m))) with m
// the group's maximum, in T's precision: no overflow; -inf for an empty
// group or one of only -inf, +inf if one is +inf, NaN if one is NaN.
// T = float, double.
template <typename T>
void reduce_log_sum_exp(const T* x, const int64_t* xShape, int rank, T* y,
                        const int64_t* yShape);
// TopK of x viewed as [outer, n, inner] along n (TopK.cpp): the k largest
// (or smallest) values [outer, k, inner] and their indices, in order (largest
// first, or smallest first), a tie to the lower index; NaN counts as larger
// than every number. T = float, double, int64_t, int32_t.
template <typename T>
void topk(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest,
          T* values, int64_t* indices);
// Det (Det.cpp): y[b] = the determinant of the n x n matrix x[b] (LU with
// partial pivoting). det_grad: dx[b] = dy[b] times the cofactor matrix of
// x[b] (the adjugate's transpose; exact for singular matrices too), each
// cofactor the determinant of a minor. Both take det_workspace(n) floats.
int64_t det_workspace(int64_t n);
void det(const float* x, int64_t batch, int64_t n, float* y, float* workspace);
void det_grad(const float* x, const float* dy, int64_t batch, int64_t n, float* dx,
              float* workspace);

void fill(float* y, int64_t n, float value);                // y[i] = value
void copy(const float* x, float* y, int64_t n);             // y[i] = x[i] (no overlap)
void scale(const float* x, float* y, int64_t n, float a);   // y[i] = a*x[i]; y may alias x
void axpy(int64_t n, float a, const float* x, float* y);    // y[i] += a*x[i]
void cast_f32_to_i64(const float* x, int64_t* y, int64_t n);  // truncation toward 0
void cast_i64_to_f32(const int64_t* x, float* y, int64_t n);  // round to nearest float
// y = x converted from `from` to `to` elementwise, with ONNX Cast's semantics
// (Cast.cpp), between any two element types: float to integer truncates
// toward 0 (NaN gives 0; out-of-range values saturate at int64's range, then
// wrap to the target as integers do); integer to narrower integer wraps;
// anything to a float type, float16 and bfloat16 included, rounds to nearest
// even (one rounding); to bool, nonzero (and NaN) is true.
void cast(const void* x, DType from, void* y, DType to, int64_t n);

// ============================================================================
// 2. GEMM (Gemm.cpp)
// ============================================================================

// C = alpha * op(A) op(B) + beta * C, row-major; op(A) is MxK, op(B) is KxN.
// lda/ldb/ldc are row strides of A, B, C as stored. beta = 0 ignores C's contents.
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc);

// Batched matmul, numpy semantics on the batch dims (all ranks >= 2):
//   A: [..., M, K] (stored [..., K, M] if transA), B: [..., K, N] ([..., N, K] if
//   transB), C: [..., M, N]. The batch dims of A, B and C broadcast to one batch
//   shape. C = alpha * sum_{batch elements mapping to it} op(A) op(B) + beta * C,
// i.e. when C's batch dims are smaller (broadcast) the products of the batch
// elements that map to the same C matrix are summed: this is the backward of a
// matmul whose operand was broadcast (e.g. dW of x[B,T,K] @ W[K,N] is
// batched_matmul(x^T, dY) with C shape [K,N]). Heavy lifting in sgemm; a shared
// 2-D right operand folds the batch into M for a single sgemm.
void batched_matmul(const float* A, const int64_t* aShape, int aRank, bool transA,
                    const float* B, const int64_t* bShape, int bRank, bool transB, float* C,
                    const int64_t* cShape, int cRank, float alpha = 1.0f, float beta = 0.0f);
// The same in float64 (dgemm), for MatMul and Einsum in inference programs.
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
          const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
          int64_t ldc);
void batched_matmul(const double* A, const int64_t* aShape, int aRank, bool transA,
                    const double* B, const int64_t* bShape, int bRank, bool transB, double* C,
                    const int64_t* cShape, int cRank, double alpha = 1.0, double beta = 0.0);

// Y[i, j] += bias[j] for an MxN row-major Y.
void add_bias_rows(float* Y, const float* bias, int64_t M, int64_t N);
// db[j] = sum_i dY[i, j] (column sums of an MxN dY: the bias gradient).
void sum_rows(const float* dY, int64_t M, int64_t N, float* db);

// ============================================================================
// 3. Conv2d, NCHW (Conv.cpp)
// ============================================================================

// Conv2dParams, the output size, the algorithm choice and the workspace
// sizes (conv2d_forward_workspace, ...: scratch in floats each pass needs)
// are header-only in ConvAlgorithm.h, shared with the compiler.
// y = conv(x, w) (+ bias[k] if bias is non-null). im2col + sgemm per image and group.
void conv2d_forward(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                    float* y, float* workspace);
// dx (overwritten) = gradient of sum(dy * conv(x, w)) w.r.t. x (sgemm + col2im).
void conv2d_backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx,
                          float* workspace);
// dw (overwritten) = gradient w.r.t. w, summed over the batch.
void conv2d_backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw,
                            float* workspace);
// Training keeps the im2col column matrix of the forward pass for the
// filter gradient instead of building it twice. conv2d_columns_floats is its
// size (0 for a 1x1/stride-1/no-pad conv, which needs none); conv2d_im2col
// fills it from x; the _columns variants read it instead of x (x is then
// unused, except by a pointwise conv). Results are identical to the plain
// versions; the workspace sizes above suffice.
int64_t conv2d_columns_floats(const Conv2dParams& p);
void conv2d_im2col(const Conv2dParams& p, const float* x, float* columns);
void conv2d_forward_columns(const Conv2dParams& p, const float* x, const float* columns,
                            const float* w, const float* bias, float* y, float* workspace);
void conv2d_backward_filter_columns(const Conv2dParams& p, const float* x,
                                    const float* columns, const float* dy, float* dw,
                                    float* workspace);
// db[k] = sum over n, oh, ow of dy[n, k, oh, ow].
void conv2d_backward_bias(const Conv2dParams& p, const float* dy, float* db);
// True when conv2d_forward/_backward_data/_backward_filter run p as a direct
// convolution (p's algorithm is Direct — the compiler's choice, or the shape
// rule for Automatic — and the CPU has AVX2 and FMA) rather than im2col + sgemm. conv2d_use_im2col_only(true) turns the direct
// path off (tests and benchmarks compare the two); results differ only by
// float summation order.
bool conv2d_runs_direct(const Conv2dParams& p);
// True when they run p as a depthwise convolution (algorithm Depthwise;
// ConvDepthwise.cpp) on any CPU; conv2d_use_im2col_only(true) and
// DTC_CONV_ALGO=im2col turn this path off as well.
bool conv2d_runs_depthwise(const Conv2dParams& p);
// True when `pass` of p runs on oneDNN (algorithm OneDnn for that pass;
// ConvOneDnn.cpp); conv2d_use_im2col_only(true) and DTC_CONV_ALGO=im2col
// turn it off too.
bool conv2d_runs_onednn(const Conv2dParams& p, ConvPass pass);
void conv2d_use_im2col_only(bool only);

// 3-D convolution, NCDHW (Conv3d.cpp): Conv3dParams and conv3d_workspace
// (the floats of scratch each pass needs) are in Window3d.h. vol2col + sgemm
// per image and group; the same semantics as the conv2d functions above.
void conv3d_forward(const Conv3dParams& p, const float* x, const float* w, const float* bias,
                    float* y, float* workspace);
// dx (overwritten) = gradient of sum(dy * conv3d(x, w)) w.r.t. x.
void conv3d_backward_data(const Conv3dParams& p, const float* dy, const float* w, float* dx,
                          float* workspace);
// dw (overwritten) = gradient w.r.t. w, summed over the batch.
void conv3d_backward_filter(const Conv3dParams& p, const float* x, const float* dy, float* dw,
                            float* workspace);

// ============================================================================
// 4. Pooling, NCHW (MaxPool.cpp, AvgPool.cpp)
// ============================================================================

// x: [N, C, H, W] -> y: [N, C, OH, OW]. pads top, left, bottom, right.
// OH = floor_or_ceil((H + padT + padB - dilH*(kH-1) - 1) / strideH) + 1; with
// ceilMode the last window must start inside the input or the top pad
// (PyTorch's rule), otherwise OH is decremented.
struct Pool2dParams {
  int64_t N, C, H, W;
  int64_t kH, kW;
  int64_t strideH, strideW;
  int64_t padT, padL, padB, padR;
  int64_t dilH, dilW;
  bool ceilMode;
  bool countIncludePad;  // average pool only
};
// The output size rule, header-only: the CUDA kernels use the same.
inline int64_t pool2d_out_size(int64_t in, int64_t k, int64_t padLo, int64_t padHi,
                               int64_t stride, int64_t dil, bool ceilMode) {
  const int64_t numer = in + padLo + padHi - dil * (k - 1) - 1;
  int64_t out = (ceilMode ? (numer + stride - 1) : numer);
  out = (out >= 0 ? out / stride : -((-out + stride - 1) / stride)) + 1;
  if (ceilMode && (out - 1) * stride >= in + padLo) --out;
  return out;
}
inline int64_t pool2d_out_h(const Pool2dParams& p) {
  return pool2d_out_size(p.H, p.kH, p.padT, p.padB, p.strideH, p.dilH, p.ceilMode);
}
inline int64_t pool2d_out_w(const Pool2dParams& p) {
  return pool2d_out_size(p.W, p.kW, p.padL, p.padR, p.strideW, p.dilW, p.ceilMode);
}
// Max over each window (pads count as -inf; NaN wins, as in PyTorch). If
// indices is non-null it receives, per output, the int32 flat index h*W + w of
// the chosen element inside its [H, W] plane (first maximum on ties).
void max_pool2d(const Pool2dParams& p, const float* x, float* y, int32_t* indices);
// dx (overwritten, zeroed first) [N,C,H,W]: dx[plane][indices[o]] += dy[o].
void max_pool2d_backward(const Pool2dParams& p, const float* dy, const int32_t* indices,
                         float* dx);
// The same scatter given only the sizes: `planes` = N*C planes of `outPerPlane`
// gradients (and indices) each, into planes of `inPerPlane` = H*W elements.
void max_pool2d_scatter(const float* dy, const int32_t* indices, int64_t planes,
                        int64_t outPerPlane, int64_t inPerPlane, float* dx);
// Mean over each window. countIncludePad: divisor counts the taps inside the
// padded input [-padT, H+padB) x [-padL, W+padR) (ceil-mode overhang never
// counts); otherwise only taps inside the input count (PyTorch semantics).
void avg_pool2d(const Pool2dParams& p, const float* x, float* y);
// dx (overwritten): each dy spread evenly (same divisor) over its window's input taps.
void avg_pool2d_backward(const Pool2dParams& p, const float* dy, float* dx);
// 3-D pooling, NCDHW (Pool3d.cpp), with the 2-D functions' semantics per
// dimension; Pool3dParams is in Window3d.h. Max pool's indices are flat in
// each [D, H, W] volume (d*H*W + h*W + w), and max_pool2d_scatter routes a
// gradient through them (planes of D*H*W elements).
inline int64_t pool3d_out(const Pool3dParams& p, int i) {
  return pool2d_out_size(p.in[i], p.kernel[i], p.padBegin[i], p.padEnd[i], p.stride[i],
                         p.dilation[i], p.ceilMode);
}
void max_pool3d(const Pool3dParams& p, const float* x, float* y, int32_t* indices);
void avg_pool3d(const Pool3dParams& p, const float* x, float* y);
void avg_pool3d_backward(const Pool3dParams& p, const float* dy, float* dx);
// y[n, c] = mean over HW of x[n, c, :]; x: [N, C, HW].
void global_avg_pool(const float* x, float* y, int64_t N, int64_t C, int64_t HW);
// dx[n, c, i] = dy[n, c] / HW.
void global_avg_pool_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t HW);

// ============================================================================
// 5. Normalization (Norm.cpp)
// ============================================================================

// Batch norm over x viewed as [N, C, HW] (HW = 1 for [N, C] input).
// Per channel c over M = N*HW values: mean, biased var; y = (x-mean)*inv_std*scale + bias
// with inv_std = 1/sqrt(var + eps). Writes savedMean[c], savedInvStd[c]. If
// runningMean/runningVar are non-null, updates them in place (ONNX convention):
//   running = running*momentum + batch*(1-momentum), batch var unbiased (M/(M-1)).
void batch_norm_train_forward(const float* x, int64_t N, int64_t C, int64_t HW,
                              const float* scale, const float* bias, float eps, float momentum,
                              float* y, float* savedMean, float* savedInvStd,
                              float* runningMean, float* runningVar);
// Gradients of batch_norm_train_forward (batch statistics): dx (overwritten),
// dscale[c] = sum dy*xhat, dbias[c] = sum dy (overwritten; either may be null).
void batch_norm_backward(const float* x, const float* dy, int64_t N, int64_t C, int64_t HW,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias);
// y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c].
void batch_norm_inference(const float* x, int64_t N, int64_t C, int64_t HW, const float* scale,
                          const float* bias, const float* mean, const float* var, float eps,
                          float* y);
// Layer norm over the last D elements of each of `rows` rows:
// y = (x - mean)*inv_std*scale[j] + bias[j] (scale/bias may be null = 1/0),
// inv_std = 1/sqrt(biased var + eps). savedMean/savedInvStd ([rows]) may be null.
void layer_norm(const float* x, int64_t rows, int64_t D, const float* scale, const float* bias,
                float eps, float* y, float* savedMean, float* savedInvStd);
// Gradients of layer_norm: dx (overwritten), dscale[j] = sum_rows dy*xhat,
// dbias[j] = sum_rows dy (overwritten; may be null). scale may be null (= 1).
void layer_norm_backward(const float* x, const float* dy, int64_t rows, int64_t D,
                         const float* scale, const float* savedMean, const float* savedInvStd,
                         float* dx, float* dscale, float* dbias);

// ============================================================================
// 6. Softmax (Softmax.cpp)
// ============================================================================

// Along the last axis of a [rows, cols] view; max-subtracted (stable). y may alias x.
void softmax(const float* x, float* y, int64_t rows, int64_t cols);
void log_softmax(const float* x, float* y, int64_t rows, int64_t cols);
// From the forward OUTPUT y: dx = y * (dy - sum_j dy*y)  (dx may alias dy).
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols);
// From the forward OUTPUT y (log-probs): dx = dy - exp(y) * sum_j dy.
void log_softmax_backward(const float* y, const float* dy, float* dx, int64_t rows,
                          int64_t cols);
// Same along the middle axis of an [outer, axis, inner] view (y must not alias x).
void softmax_inner(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner);
void log_softmax_inner(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner);
void softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t outer,
                            int64_t axis, int64_t inner);
void log_softmax_inner_backward(const float* y, const float* dy, float* dx, int64_t outer,
                                int64_t axis, int64_t inner);

// ============================================================================
// 7. Losses (Loss.cpp)
// ============================================================================

constexpr int64_t kIgnoreIndex = -100;

// Mean over non-ignored rows of -log_softmax(logits[i])[labels[i]]; logits [N, C]
// (N may be batch*time). labels[i] == kIgnoreIndex skips row i. Returns NaN
// when every row is ignored (as PyTorch). A label outside [0, C) aborts.
float softmax_cross_entropy(const float* logits, const int64_t* labels, int64_t N, int64_t C);
// dlogits = dloss * (softmax(logits) - onehot(label)) / count; ignored rows get 0.
void softmax_cross_entropy_backward(const float* logits, const int64_t* labels, int64_t N,
                                    int64_t C, float dloss, float* dlogits);
// Fused forward + backward in one pass over the logits; returns the loss and
// writes dlogits as the backward above with dloss. dlogits may alias logits.
float softmax_cross_entropy_with_grad(const float* logits, const int64_t* labels, int64_t N,
                                      int64_t C, float dloss, float* dlogits);
// torch.nn.functional.cross_entropy(label_smoothing=smoothing, weight=weights)
// with mean reduction (weights: C floats, or null for all 1): per row i with
// label y (rows labelled -100 ignored), w = weights or 1,
//   row_i = (1-smoothing) * w[y] * (lse_i - x[i,y])
//         + (smoothing/C) * sum_c w[c] * (lse_i - x[i,c]),
//   loss = sum_i row_i / sum_i w[y_i]   (NaN when that sum is 0);
// the backward kernel writes dloss times its gradient,
//   (p[i,c] * ((1-s) w[y] + s S/C) - (1-s) w[y] [c==y] - s w[c]/C) / sum_i w[y_i],
// S = sum_c w[c]. Sums in double.
float softmax_cross_entropy_smoothed(const float* logits, const int64_t* labels, int64_t N,
                                     int64_t C, double smoothing, const float* weights);
void softmax_cross_entropy_smoothed_backward(const float* logits, const int64_t* labels,
                                             int64_t N, int64_t C, double smoothing,
                                             const float* weights, float dloss, float* dlogits);
// --tp vocabulary-parallel cross-entropy (dtc.tp_softmax_cross_entropy):
// logits [N, C] are this rank's classes [lo, lo + C) of a vocabulary of V.
// The caller all-reduces between the steps: the row maxima (max) after
// row_max, the 2N partials (sum) after tp_cross_entropy_partials.
// row_max: max[i] = max_c logits[i, c].
void row_max(const float* logits, int64_t N, int64_t C, float* max);
// partials[i] = sum_c exp(logits[i, c] - max[i]) and partials[N + i] = the
// label's logit where this rank holds the label, else 0.
void tp_cross_entropy_partials(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                               int64_t lo, const float* max, float* partials);
// From the group's max and summed partials: writes each row's log-sum-exp
// into lse (which may alias max) and returns softmax_cross_entropy's mean
// (NaN when every row is ignored; a label outside [0, V) aborts).
float tp_cross_entropy_loss(const int64_t* labels, int64_t N, int64_t V, const float* max,
                            const float* partials, float* lse);
// This rank's columns of softmax_cross_entropy_backward, from the rows'
// log-sum-exp: dloss * (exp(x - lse) - onehot) / count; ignored rows get 0.
void tp_cross_entropy_backward(const float* logits, const int64_t* labels, int64_t N, int64_t C,
                               int64_t lo, const float* lse, float dloss, float* dlogits);
// mean((pred - target)^2) over n elements (accumulated in double).
float mse_loss(const float* pred, const float* target, int64_t n);
// dpred = dloss * 2 (pred - target) / n.
void mse_loss_backward(const float* pred, const float* target, int64_t n, float dloss,
                       float* dpred);
// Number of rows whose argmax (first maximum) equals the label; ignored rows never count.
int64_t accuracy_count(const float* logits, const int64_t* labels, int64_t N, int64_t C);
// Number of rows whose label is among the k largest logits (top-k accuracy),
// ties broken as accuracy_count's first maximum: a class ranks after the
// larger logits and the equal ones of lower index. A NaN label logit never
// counts; ignored rows never count. k = 1 gives accuracy_count's count
// (without NaNs).
int64_t topk_count(const float* logits, const int64_t* labels, int64_t N, int64_t C, int64_t k);

// ============================================================================
// 8. Shape and data movement (Shape.cpp)
// ============================================================================

// The data-movement kernels are templates over the element type T, defined
// for every element type (float, double, Float16, the integers; bf16 bits
// are a uint16_t, bools a uint8_t); the gradients (slice_backward,
// gather_backward) are float only.
//
// y = x.permute(perm): y's dim i is x's dim perm[i]; y shape = shape[perm[i]].
template <typename T>
void transpose(const T* x, const int64_t* shape, int rank, const int64_t* perm, T* y);
// y[i0..] = x[starts[d] + i_d*steps[d]] per axis d, for y of shape yShape (rank
// = x's). starts are already clamped/normalized; steps may be negative, not 0.
template <typename T>
void slice(const T* x, const int64_t* xShape, int rank, const int64_t* starts,
           const int64_t* steps, T* y, const int64_t* yShape);
// dx (overwritten) = zeros of xShape with dy scattered to the sliced positions.
void slice_backward(const float* dy, const int64_t* yShape, int rank, const int64_t* starts,
                    const int64_t* steps, float* dx, const int64_t* xShape);
// y = concat(xs[0..num), axis): input i has outShape except dim `axis` = axisSizes[i].
template <typename T>
void concat(const T* const* xs, const int64_t* axisSizes, int num, T* y,
            const int64_t* outShape, int rank, int axis);
// Inverse of concat (also concat's backward): x of shape inShape is split along
// `axis` into ys[i] with dim axis = axisSizes[i].
template <typename T>
void split(const T* x, const int64_t* inShape, int rank, int axis, const int64_t* axisSizes,
           int num, T* const* ys);
// y = take(data, indices, axis): data [pre..., D, post...], indices any shape with
// numIndices elements; y shape = pre + indices.shape + post. Negative indices
// wrap (ONNX); out-of-range aborts. Embedding lookup: axis 0 of a [V, E] table.
template <typename T>
void gather(const T* data, const int64_t* dataShape, int rank, int axis,
            const int64_t* indices, int64_t numIndices, T* y);
// dData (overwritten, zeroed first) of dataShape: scatter-add of dy (gather's output shape).
void gather_backward(const float* dy, const int64_t* indices, int64_t numIndices,
                     const int64_t* dataShape, int rank, int axis, float* dData);
// GatherElements: y (idxShape, same rank as data) picks data at the index's
// position with its `axis` coordinate replaced by the index (negative counts
// from the end; out of range throws). T = float, int64_t, int32_t.
template <typename T>
void gather_elements(const T* data, const int64_t* dataShape, const int64_t* indices,
                     const int64_t* idxShape, int rank, int axis, T* y);
// dData (overwritten, zeroed first): dy scatter-added to the picked elements.
void gather_elements_backward(const float* dy, const int64_t* indices, const int64_t* idxShape,
                              const int64_t* dataShape, int rank, int axis, float* dData);
// ScatterElements: y = data (dataShape), then y at each index's position
// with its `axis` coordinate replaced by the index (negative counts from the
// end; out of range throws) = updates (idxShape), or += with `add`. y may be
// data. T = float, int64_t, int32_t.
template <typename T>
void scatter_elements(const T* data, const int64_t* dataShape, const int64_t* indices,
                      const int64_t* idxShape, const T* updates, int rank, int axis, bool add,
                      T* y);
// ScatterND (ScatterGatherND.cpp): y = data (dataShape, rank), then each of
// the `tuples` k-tuples of indices ([tuples, k]; negative counts from the
// end, out of range throws) names the slice data[i0, ..., ik-1, :, ...] of
// dataShape[k:] elements, which is set to (None; a repeated tuple: the last
// wins), added to (Add) or multiplied by (Mul) the matching slice of
// updates. y may be data. T = every element type.
enum class ScatterReduction : int { None = 0, Add = 1, Mul = 2 };
template <typename T>
void scatter_nd(const T* data, const int64_t* dataShape, int rank, const int64_t* indices,
                int64_t tuples, int k, const T* updates, ScatterReduction reduction, T* y);
// GatherND: y [tuples, slice] = the slices the k-tuples of indices name, each
// in its batch: the first batchDims dimensions of data and indices are
// shared, and the tuples are batch-major. T = every element type.
template <typename T>
void gather_nd(const T* data, const int64_t* dataShape, int rank, int batchDims,
               const int64_t* indices, int64_t tuples, int k, T* y);
// y = broadcast of x (xShape) to yShape (numpy rules).
template <typename T>
void expand(const T* x, const int64_t* xShape, int xRank, T* y, const int64_t* yShape,
            int yRank);

// ============================================================================
// 9. Optimizers (Optimizer.cpp): torch.optim (1.13) semantics over flat buffers
// ============================================================================

// Hyperparameters are double, as PyTorch keeps them (Python floats); scalar
// factors are formed in double and rounded to float once, as PyTorch does.
//
// torch.optim.SGD step (maximize=False) on n elements:
//   d = grad + weight_decay*param
//   if momentum != 0: buf = first_step ? d : momentum*buf + (1-dampening)*d
//                     d = nesterov ? d + momentum*buf : buf
//   param -= lr*d
// momentumBuf may be null when momentum == 0. grad is not modified.
// gradScale: the gradient is read as grad*gradScale (in float; the clip
// coefficient of clip_grad_norm, 1 = the gradient as it is, exactly).
void sgd_update(float* param, const float* grad, float* momentumBuf, int64_t n, double lr,
                double momentum, double dampening, double weightDecay, bool nesterov,
                bool firstStep, float gradScale = 1.0f);
// torch.optim.Adam (decoupled = false) / AdamW (decoupled = true) step, step >= 1
// (amsgrad=False, maximize=False):
//   Adam: g = grad + wd*param        AdamW: g = grad; param *= 1 - lr*wd
//   m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g*g
//   bc1 = 1 - beta1^step, bc2 = 1 - beta2^step
//   param -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps)
void adam_update(float* param, const float* grad, float* m, float* v, int64_t n, double lr,
                 double beta1, double beta2, double eps, double weightDecay, bool decoupled,
                 int64_t step, float gradScale = 1.0f);

// torch.nn.utils.clip_grad_norm_(max_norm, norm_type=2) over `num`
// gradients (grads[i] of sizes[i] floats), without the multiplication:
// out[0] = the L2 norm of all of them together (squares summed in double),
// out[1] = min(1, max_norm / (norm + 1e-6)) formed in float as PyTorch does.
void clip_grad_norm(const float* const* grads, const int64_t* sizes, int num, double maxNorm,
                    float* out);
// The same in two parts, for gradients spread over ranks (--tp): the sum of
// the squares of `num` gradients (in double, in order; 0 for none), and
// out[0..1] from the sum of squares of all of them.
double grad_sum_squares(const float* const* grads, const int64_t* sizes, int num);
void clip_grad_norm_from_sum(double sumSquares, double maxNorm, float* out);

// ============================================================================
// 10. bfloat16 products (Bf16.cpp), for programs compiled with --precision=bf16
// ============================================================================
// A bf16 value is stored as its 16 bits (uint16_t: the upper half of the
// float32 with the same sign, exponent and top 7 mantissa bits). Casting
// rounds to nearest even (NaN stays NaN); widening is exact. The products
// below read bf16 operands and write a bf16 result: products of bf16 values
// are exact in float32, sums are float32 (the float32 kernels on the widened
// operands), and the result is rounded once. This is what the CUDA kernels
// of the same names compute on tensor cores, up to summation order.
// `workspace` holds the *_bf16_workspace floats (the widened operands,
// result and the float32 kernel's own scratch).
void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t n);
void cast_bf16_to_f32(const uint16_t* x, float* y, int64_t n);

// As gemm (beta 0) with contiguous operands: A is MxK (KxM if transA), B is
// KxN (NxK if transB), lda/ldb their row lengths; C is MxN with row length ldc.
int64_t gemm_bf16_workspace(int64_t M, int64_t N, int64_t K);
void gemm_bf16(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
               const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, uint16_t* C,
               int64_t ldc, float* workspace);
// As batched_matmul (alpha 1, beta 0).
int64_t batched_matmul_bf16_workspace(const int64_t* aShape, int aRank, const int64_t* bShape,
                                      int bRank, const int64_t* cShape, int cRank);
void batched_matmul_bf16(const uint16_t* A, const int64_t* aShape, int aRank, bool transA,
                         const uint16_t* B, const int64_t* bShape, int bRank, bool transB,
                         uint16_t* C, const int64_t* cShape, int cRank, float* workspace);
// As conv2d_forward (no bias), conv2d_backward_data, conv2d_backward_filter.
int64_t conv2d_forward_bf16_workspace(const Conv2dParams& p);
int64_t conv2d_backward_data_bf16_workspace(const Conv2dParams& p);
int64_t conv2d_backward_filter_bf16_workspace(const Conv2dParams& p);
void conv2d_forward_bf16(const Conv2dParams& p, const uint16_t* x, const uint16_t* w,
                         uint16_t* y, float* workspace);
void conv2d_backward_data_bf16(const Conv2dParams& p, const uint16_t* dy, const uint16_t* w,
                               uint16_t* dx, float* workspace);
void conv2d_backward_filter_bf16(const Conv2dParams& p, const uint16_t* x, const uint16_t* dy,
                                 uint16_t* dw, float* workspace);

// ============================================================================
// 11. Fused elementwise chains (Fused.cpp), from dtc.fused_elementwise
// ============================================================================
// Values 0..numInputs-1 are the inputs: output element e reads element
// (e / inner) % count of input k (a block broadcast; inner 1, count n for a
// full tensor), widened when it is bf16. Step j makes value numInputs + j
// from values a and b (b unused by unary steps); the output is the last
// value (rounded to bf16 bits when outBf16). The steps are the separate
// kernels' arithmetic exactly: add a+b, sub a-b, mul a*b, div a/b, neg -a,
// relu a<0?0:a, relu_grad (a = x, b = dy) a>0?b:0, bf16 (round to bf16 and
// widen), copy a. numInputs + numSteps <= kMaxFusedValues.
enum class FusedOp : int32_t { Add, Sub, Mul, Div, Neg, Relu, ReluGrad, Bf16, Copy };
struct FusedStep {
  FusedOp op;
  int32_t a, b;
};
struct FusedInput {
  const void* data;
  bool bf16;
  int64_t inner, count;
};
constexpr int kMaxFusedValues = 16;
constexpr int kMaxFusedInputs = 8;
void fused_elementwise(const FusedInput* inputs, int numInputs, const FusedStep* steps,
                       int numSteps, void* out, bool outBf16, int64_t n);

// ============================================================================
// 12. Padding and resizing (Resample.cpp): dtc.pad, dtc.resize, their grads
// ============================================================================
// Pad modes and resize modes: the runtime's copies of the dialect's strings.
enum class PadMode : int { Constant = 0, Reflect = 1, Edge = 2 };
// y (yShape = xShape + begin + end per dim) = x padded: pads are ONNX's
// [begin_0..begin_{rank-1}, end_0..end_{rank-1}], non-negative. Constant fills
// with `value` (converted to T: float16 rounded, integers and bools
// truncated; bf16 bits take it as their bits, so only 0 is meaningful);
// Reflect mirrors without repeating the border (pads < dim); Edge repeats
// the border. T = every element type.
template <typename T>
void pad(const T* x, const int64_t* xShape, int rank, const int64_t* pads, PadMode mode,
         double value, T* y);
// dx (overwritten) = gradient of sum(dy * pad(x)) w.r.t. x: dy's interior for
// Constant; for Reflect and Edge every dy element is added to the x element
// it was copied from (in a fixed order: the same bits for any thread count).
void pad_backward(const float* dy, const int64_t* xShape, int rank, const int64_t* pads,
                  PadMode mode, float* dx);

// Cubic: Keys' bicubic (A = cubicA, PyTorch's -0.75 by default) over 4 x 4
// taps, the source coordinate unclamped and the input's edge values repeated
// beyond it (CPU only).
enum class ResizeMode : int { Nearest = 0, Linear = 1, Cubic = 2 };
// How an output coordinate maps to an input one (ONNX coordinate_transformation_mode).
enum class ResizeCoordinate : int {
  HalfPixel = 0,         // (x + 0.5) / scale - 0.5
  PytorchHalfPixel = 1,  // as HalfPixel, but 0 when the output length is 1
  AlignCorners = 2,      // x * (in - 1) / (out - 1)
  Asymmetric = 3,        // x / scale
  // CPU only:
  TfHalfPixelForNn = 4,  // (x + 0.5) / scale
  // start * (in - 1) + x * (end - start) * (in - 1) / (out - 1) over the
  // crop [start, end] (roiH, roiW; fractions of the input); an output whose
  // source lies outside [0, in - 1] is `extrapolation`.
  TfCropAndResize = 5,
};
// How nearest mode rounds the input coordinate (ONNX nearest_mode).
enum class ResizeRounding : int { RoundPreferFloor = 0, RoundPreferCeil = 1, Floor = 2, Ceil = 3 };
struct Resize2dParams {
  int64_t planes, H, W;  // x is [planes, H, W]
  int64_t OH, OW;        // y is [planes, OH, OW]
  float scaleH, scaleW;  // the factors the coordinates are divided by
  ResizeMode mode;
  ResizeCoordinate coordinate;
  ResizeRounding rounding;
  // CPU only (the CUDA kernels take the defaults):
  float cubicA = -0.75f;        // Keys' A of cubic mode
  bool excludeOutside = false;  // cubic: taps outside the input weigh 0, the rest renormalized
  float roiH[2] = {0.0f, 1.0f}, roiW[2] = {0.0f, 1.0f};  // TfCropAndResize's crop
  float extrapolation = 0.0f;                             // TfCropAndResize's outside value
};
// y = x resized over its last two dimensions: nearest (the rounded source
// coordinate, clamped to the input), bilinear (source coordinates clamped
// to [0, in - 1], as ONNX and PyTorch) or bicubic.
void resize2d(const Resize2dParams& p, const float* x, float* y);
// dx (overwritten) = gradient of sum(dy * resize2d(x)) w.r.t. x: each dy
// element scatter-added to its source taps with the forward's weights.
void resize2d_backward(const Resize2dParams& p, const float* dy, float* dx);

// dtc --debug-checks: throws std::runtime_error naming `what` (the op and
// ONNX node that wrote x), the first non-finite element's index and value,
// and how many there are, if x[0, n) holds a NaN or an infinity.
void check_finite(const float* x, int64_t n, const char* what);
// A precondition of a compiled program on a value given at run time (an
// LSTM's sequence_lens): throws std::runtime_error with `what`, the first
// element of x[0, n) that is not `value`, its index and how many differ.
void check_all_equal(const int64_t* x, int64_t n, int64_t value, const char* what);

}  // namespace cpu
}  // namespace dtcrt
