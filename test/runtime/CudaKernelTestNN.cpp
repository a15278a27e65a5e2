// CUDA conv, pooling, normalization, softmax, loss, shape and optimizer
// kernels against the CPU kernels on random data. Skipped when no CUDA
// device is visible.
#include "CudaKernelTestUtil.h"

namespace dtcrt_cuda_test {
namespace {

using cpu::Conv2dParams;
using cpu::Pool2dParams;

TEST_F(CudaKernel, Conv2d) {
  const Conv2dParams cases[] = {
      {2, 3, 9, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   // same padding
      {2, 4, 10, 8, 6, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 2},  // stride 2, groups 2
      {1, 3, 11, 11, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, // dilation 2
      {2, 8, 6, 6, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},   // pointwise
      {2, 3, 8, 7, 4, 3, 2, 1, 2, 0, 1, 1, 0, 1, 1, 1},   // asymmetric padding (direct)
      {2, 6, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6},   // depthwise
      {1, 4, 9, 6, 6, 3, 2, 2, 1, 1, 0, 2, 1, 2, 1, 2},   // asymmetric, dilated, grouped (direct)
  };
  for (const Conv2dParams& p : cases) {
    const int64_t OH = cpu::conv2d_out_h(p), OW = cpu::conv2d_out_w(p);
    const int64_t nx = p.N * p.C * p.H * p.W, nw = p.K * (p.C / p.groups) * p.R * p.S,
                  ny = p.N * p.K * OH * OW;
    const Vec x = rng.vec(nx), w = rng.vec(nw), bias = rng.vec(p.K), dy = rng.vec(ny);
    Vec ws((size_t)std::max({cpu::conv2d_forward_workspace(p),
                             cpu::conv2d_backward_data_workspace(p),
                             cpu::conv2d_backward_filter_workspace(p), (int64_t)1}));
    Vec y(ny), dx(nx), dw(nw), db(p.K);
    cpu::conv2d_forward(p, x.data(), w.data(), bias.data(), y.data(), ws.data());
    cpu::conv2d_backward_data(p, dy.data(), w.data(), dx.data(), ws.data());
    cpu::conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), ws.data());
    cpu::conv2d_backward_bias(p, dy.data(), db.data());
    DevF gx(x), gw(w), gb(bias), gdy(dy), gy(ny), gdx(nx), gdw(nw), gdb(p.K);
    gpu::conv2d_forward(ctx, p, gx, gw, gb, gy);
    gpu::conv2d_backward_data(ctx, p, gdy, gw, gdx);
    gpu::conv2d_backward_filter(ctx, p, gx, gdy, gdw);
    gpu::conv2d_backward_bias(p, gdy, gdb, s);
    const std::string tag = " (K=" + std::to_string(p.K) + " groups=" + std::to_string(p.groups) +
                            " padT=" + std::to_string(p.padT) + ")";
    expectNear(gy.get(), y, "conv2d_forward" + tag, 1e-4, 1e-4);
    expectNear(gdx.get(), dx, "conv2d_backward_data" + tag, 1e-4, 1e-4);
    expectNear(gdw.get(), dw, "conv2d_backward_filter" + tag, 1e-4, 1e-4);
    expectNear(gdb.get(), db, "conv2d_backward_bias" + tag, 1e-4, 1e-4);
  }
}

TEST_F(CudaKernel, Pooling) {
  const Pool2dParams cases[] = {
      {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false, false},
      {2, 3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, true},
      {1, 2, 10, 10, 3, 2, 1, 2, 1, 0, 1, 1, 2, 1, false, false},
      {1, 2, 7, 7, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, true, false},
  };
  for (const Pool2dParams& p : cases) {
    const int64_t OH = cpu::pool2d_out_h(p), OW = cpu::pool2d_out_w(p);
    const int64_t nx = p.N * p.C * p.H * p.W, ny = p.N * p.C * OH * OW;
    const Vec x = rng.distinct(nx, 0.01f), dy = rng.vec(ny);
    Vec y(ny), dx(nx);
    std::vector<int32_t> idx(ny);
    DevF gx(x), gdy(dy), gy(ny), gdx(nx), gdx2(nx);
    Dev<int32_t> gidx((size_t)ny);
    cpu::max_pool2d(p, x.data(), y.data(), idx.data());
    gpu::max_pool2d(p, gx, gy, gidx, s);
    expectNear(gy.get(), y, "max_pool2d", 0, 0);
    EXPECT_EQ(gidx.get(), idx);
    cpu::max_pool2d_backward(p, dy.data(), idx.data(), dx.data());
    gpu::max_pool2d_backward(p, gdy, gidx, gdx, s);
    expectNear(gdx.get(), dx, "max_pool2d_backward", 1e-6, 1e-6);
    gpu::max_pool2d_scatter(gdy, gidx, p.N * p.C, OH * OW, p.H * p.W, gdx2, s);
    expectNear(gdx2.get(), dx, "max_pool2d_scatter", 1e-6, 1e-6);
    cpu::avg_pool2d(p, x.data(), y.data());
    gpu::avg_pool2d(p, gx, gy, s);
    expectNear(gy.get(), y, "avg_pool2d", 1e-5, 1e-6);
    cpu::avg_pool2d_backward(p, dy.data(), dx.data());
    gpu::avg_pool2d_backward(p, gdy, gdx, s);
    expectNear(gdx.get(), dx, "avg_pool2d_backward", 1e-5, 1e-6);
  }
  const int64_t N = 3, C = 5, HW = 49;
  const Vec x = rng.vec(N * C * HW), dy = rng.vec(N * C);
  Vec y(N * C), dx(N * C * HW);
  cpu::global_avg_pool(x.data(), y.data(), N, C, HW);
  cpu::global_avg_pool_backward(dy.data(), dx.data(), N, C, HW);
  DevF gx(x), gdy(dy), gy(N * C), gdx(N * C * HW);
  gpu::global_avg_pool(gx, gy, N, C, HW, s);
  gpu::global_avg_pool_backward(gdy, gdx, N, C, HW, s);
  expectNear(gy.get(), y, "global_avg_pool", 1e-5, 1e-6);
  expectNear(gdx.get(), dx, "global_avg_pool_backward", 1e-6, 0);
}

TEST_F(CudaKernel, BatchNorm) {
  // {N, C, HW}: one chunk per channel (small), channels split into chunks
  // whose edges fall inside images (3 x 7000 values in 4096-value chunks,
  // and images smaller than a block), and more channels than one launch
  // group holds (1100 > 1024 chunk totals).
  const int64_t shapes[][3] = {{6, 5, 1}, {6, 5, 37}, {3, 2, 7000}, {300, 3, 29}, {2, 1100, 1}};
  for (const auto& shape : shapes) {
    const int64_t N = shape[0], C = shape[1], HW = shape[2], n = N * C * HW;
    const Vec x = rng.vec(n, -2, 3), scale = rng.vec(C), bias = rng.vec(C), dy = rng.vec(n),
              rm0 = rng.vec(C), rv0 = rng.vec(C, 0.5f, 1.5f);
    Vec y(n), mean(C), inv(C), rm = rm0, rv = rv0, dx(n), dscale(C), dbias(C), yi(n);
    cpu::batch_norm_train_forward(x.data(), N, C, HW, scale.data(), bias.data(), 1e-5f, 0.9f,
                                  y.data(), mean.data(), inv.data(), rm.data(), rv.data());
    cpu::batch_norm_backward(x.data(), dy.data(), N, C, HW, scale.data(), mean.data(), inv.data(),
                             dx.data(), dscale.data(), dbias.data());
    cpu::batch_norm_inference(x.data(), N, C, HW, scale.data(), bias.data(), rm0.data(),
                              rv0.data(), 1e-5f, yi.data());
    DevF gx(x), gs(scale), gb(bias), gdy(dy), grm(rm0), grv(rv0), gy(n), gm(C), gi(C), gdx(n),
        gds(C), gdb(C), gyi(n), grm0(rm0), grv0(rv0);
    gpu::batch_norm_train_forward(gx, N, C, HW, gs, gb, 1e-5f, 0.9f, gy, gm, gi, grm, grv, s);
    gpu::batch_norm_backward(gx, gdy, N, C, HW, gs, gm, gi, gdx, gds, gdb, s);
    gpu::batch_norm_inference(gx, N, C, HW, gs, gb, grm0, grv0, 1e-5f, gyi, s);
    expectNear(gy.get(), y, "batch_norm y", 1e-4, 1e-5);
    expectNear(gm.get(), mean, "batch_norm mean", 1e-4, 1e-6);
    expectNear(gi.get(), inv, "batch_norm invstd", 1e-4, 1e-6);
    expectNear(grm.get(), rm, "batch_norm running mean", 1e-4, 1e-6);
    expectNear(grv.get(), rv, "batch_norm running var", 1e-4, 1e-6);
    expectNear(gdx.get(), dx, "batch_norm dx", 1e-4, 1e-5);
    expectNear(gds.get(), dscale, "batch_norm dscale", 1e-4, 1e-5);
    expectNear(gdb.get(), dbias, "batch_norm dbias", 1e-4, 1e-5);
    expectNear(gyi.get(), yi, "batch_norm_inference", 1e-5, 1e-6);
  }
}

TEST_F(CudaKernel, LayerNorm) {
  for (int64_t D : {7, 64, 768, 3000}) {
    const int64_t rows = 33, n = rows * D;
    const Vec x = rng.vec(n, -2, 2), scale = rng.vec(D), bias = rng.vec(D), dy = rng.vec(n);
    for (bool affine : {true, false}) {
      const float* sc = affine ? scale.data() : nullptr;
      const float* bi = affine ? bias.data() : nullptr;
      Vec y(n), mean(rows), inv(rows), dx(n), ds(D), db(D);
      cpu::layer_norm(x.data(), rows, D, sc, bi, 1e-5f, y.data(), mean.data(), inv.data());
      cpu::layer_norm_backward(x.data(), dy.data(), rows, D, sc, mean.data(), inv.data(),
                               dx.data(), ds.data(), db.data());
      DevF gx(x), gs(scale), gb(bias), gdy(dy), gy(n), gm(rows), gi(rows), gdx(n), gds(D), gdb(D);
      gpu::layer_norm(gx, rows, D, affine ? gs.ptr : nullptr, affine ? gb.ptr : nullptr, 1e-5f, gy,
                      gm, gi, s);
      gpu::layer_norm_backward(gx, gdy, rows, D, affine ? gs.ptr : nullptr, gm, gi, gdx, gds, gdb,
                               s);
      const std::string tag = " D=" + std::to_string(D);
      expectNear(gy.get(), y, "layer_norm" + tag, 1e-4, 1e-5);
      expectNear(gm.get(), mean, "layer_norm mean" + tag, 1e-4, 1e-6);
      expectNear(gi.get(), inv, "layer_norm invstd" + tag, 1e-4, 1e-6);
      expectNear(gdx.get(), dx, "layer_norm dx" + tag, 1e-4, 1e-5);
      expectNear(gds.get(), ds, "layer_norm dscale" + tag, 1e-4, 1e-4);
      expectNear(gdb.get(), db, "layer_norm dbias" + tag, 1e-4, 1e-4);
    }
  }
}

TEST_F(CudaKernel, Softmax) {
  for (int64_t cols : {10, 1000, 5000}) {
    const int64_t rows = 17, n = rows * cols;
    const Vec x = rng.vec(n, -5, 5), dy = rng.vec(n);
    Vec y(n), ly(n), dx(n), ldx(n);
    cpu::softmax(x.data(), y.data(), rows, cols);
    cpu::log_softmax(x.data(), ly.data(), rows, cols);
    cpu::softmax_backward(y.data(), dy.data(), dx.data(), rows, cols);
    cpu::log_softmax_backward(ly.data(), dy.data(), ldx.data(), rows, cols);
    DevF gx(x), gdy(dy), gy(n), gly(n), gdx(n), gldx(n);
    gpu::softmax(gx, gy, rows, cols, s);
    gpu::log_softmax(gx, gly, rows, cols, s);
    gpu::softmax_backward(gy, gdy, gdx, rows, cols, s);
    gpu::log_softmax_backward(gly, gdy, gldx, rows, cols, s);
    const std::string tag = " cols=" + std::to_string(cols);
    expectNear(gy.get(), y, "softmax" + tag, 1e-5, 1e-7);
    expectNear(gly.get(), ly, "log_softmax" + tag, 1e-5, 1e-5);
    expectNear(gdx.get(), dx, "softmax_backward" + tag, 1e-4, 1e-6);
    expectNear(gldx.get(), ldx, "log_softmax_backward" + tag, 1e-4, 1e-5);
  }
  const int64_t outer = 3, axis = 7, inner = 11, n = outer * axis * inner;
  const Vec x = rng.vec(n, -5, 5), dy = rng.vec(n);
  Vec y(n), ly(n), dx(n), ldx(n);
  cpu::softmax_inner(x.data(), y.data(), outer, axis, inner);
  cpu::log_softmax_inner(x.data(), ly.data(), outer, axis, inner);
  cpu::softmax_inner_backward(y.data(), dy.data(), dx.data(), outer, axis, inner);
  cpu::log_softmax_inner_backward(ly.data(), dy.data(), ldx.data(), outer, axis, inner);
  DevF gx(x), gdy(dy), gy(n), gly(n), gdx(n), gldx(n);
  gpu::softmax_inner(gx, gy, outer, axis, inner, s);
  gpu::log_softmax_inner(gx, gly, outer, axis, inner, s);
  gpu::softmax_inner_backward(gy, gdy, gdx, outer, axis, inner, s);
  gpu::log_softmax_inner_backward(gly, gdy, gldx, outer, axis, inner, s);
  expectNear(gy.get(), y, "softmax_inner", 1e-5, 1e-7);
  expectNear(gly.get(), ly, "log_softmax_inner", 1e-5, 1e-5);
  expectNear(gdx.get(), dx, "softmax_inner_backward", 1e-4, 1e-6);
  expectNear(gldx.get(), ldx, "log_softmax_inner_backward", 1e-4, 1e-5);
}

TEST_F(CudaKernel, Losses) {
  for (int64_t C : {10, 3000}) {
    const int64_t N = 37;
    const Vec logits = rng.vec(N * C, -4, 4);
    std::vector<int64_t> labels(N);
    for (auto& l : labels) l = rng.integer(0, C - 1);
    labels[3] = cpu::kIgnoreIndex;
    labels[10] = cpu::kIgnoreIndex;
    const float loss = cpu::softmax_cross_entropy(logits.data(), labels.data(), N, C);
    Vec grad(N * C);
    cpu::softmax_cross_entropy_backward(logits.data(), labels.data(), N, C, 0.5f, grad.data());
    const int64_t correct = cpu::accuracy_count(logits.data(), labels.data(), N, C);
    DevF gl(logits), gloss(1), ggrad(N * C), gloss2(1);
    Dev<int64_t> glab(labels), gcount((size_t)1);
    Dev<char> ws(gpu::softmax_cross_entropy_workspace_bytes(N));
    gpu::softmax_cross_entropy(gl, glab, N, C, gloss, ws, s);
    gpu::softmax_cross_entropy_backward(gl, glab, N, C, 0.5f, ggrad, ws, s);
    gpu::accuracy_count(gl, glab, N, C, gcount, s);
    const std::string tag = " C=" + std::to_string(C);
    expectNear(gloss.get(), {loss}, "softmax_cross_entropy" + tag, 1e-5, 0);
    expectNear(ggrad.get(), grad, "softmax_cross_entropy_backward" + tag, 1e-4, 1e-7);
    EXPECT_EQ(gcount.scalar(), correct) << "accuracy_count" << tag;
    for (int64_t k : {1, 5}) {
      gpu::topk_count(gl, glab, N, C, k, gcount, s);
      EXPECT_EQ(gcount.scalar(), cpu::topk_count(logits.data(), labels.data(), N, C, k))
          << "topk_count k=" << k << tag;
    }
    // Fused, in place.
    gpu::softmax_cross_entropy_with_grad(gl, glab, N, C, 0.5f, gl, gloss2, ws, s);
    expectNear(gloss2.get(), {loss}, "softmax_cross_entropy_with_grad loss" + tag, 1e-5, 0);
    expectNear(gl.get(), grad, "softmax_cross_entropy_with_grad in place" + tag, 1e-4, 1e-7);
  }
  {  // every row ignored: NaN
    const std::vector<int64_t> labels(4, cpu::kIgnoreIndex);
    DevF gl(rng.vec(12)), gloss(1);
    Dev<int64_t> glab(labels);
    Dev<char> ws(gpu::softmax_cross_entropy_workspace_bytes(4));
    gpu::softmax_cross_entropy(gl, glab, 4, 3, gloss, ws, s);
    EXPECT_TRUE(std::isnan(gloss.scalar()));
  }
  const int64_t n = 100003;
  const Vec pred = rng.vec(n), target = rng.vec(n);
  const float mse = cpu::mse_loss(pred.data(), target.data(), n);
  Vec dpred(n);
  cpu::mse_loss_backward(pred.data(), target.data(), n, 2.0f, dpred.data());
  DevF gp(pred), gt(target), gloss(1), gdp(n);
  Dev<char> ws(gpu::mse_loss_workspace_bytes(n));
  gpu::mse_loss(gp, gt, n, gloss, ws, s);
  gpu::mse_loss_backward(gp, gt, n, 2.0f, gdp, s);
  expectNear(gloss.get(), {mse}, "mse_loss", 1e-5, 0);
  expectNear(gdp.get(), dpred, "mse_loss_backward", 1e-6, 0);
}

// Label smoothing and class weights (--label-smoothing, --class-weights):
// the CUDA kernels against the CPU definition, with and without weights,
// with ignored rows, at a small and a large class count (one block and
// several per row). Tolerances as the plain cross-entropy above.
TEST_F(CudaKernel, SmoothedWeightedCrossEntropy) {
  for (int64_t C : {10, 300}) {
    for (bool weighted : {false, true}) {
      const int64_t N = 23;
      const Vec logits = rng.vec(N * C, -4, 4);
      std::vector<int64_t> labels(N);
      for (auto& l : labels) l = rng.integer(0, C - 1);
      labels[2] = cpu::kIgnoreIndex;
      const Vec w = rng.vec(C, 0.2f, 2.0f);
      const float* weights = weighted ? w.data() : nullptr;
      const double smoothing = 0.1;
      const float loss = cpu::softmax_cross_entropy_smoothed(logits.data(), labels.data(), N, C,
                                                             smoothing, weights);
      Vec grad(N * C);
      cpu::softmax_cross_entropy_smoothed_backward(logits.data(), labels.data(), N, C,
                                                   smoothing, weights, 0.5f, grad.data());
      DevF gl(logits), gloss(1), ggrad(N * C);
      Dev<int64_t> glab(labels);
      Dev<char> ws(gpu::softmax_cross_entropy_workspace_bytes(N));
      gpu::softmax_cross_entropy_smoothed(gl, glab, N, C, smoothing, weights, gloss, ws, s);
      gpu::softmax_cross_entropy_smoothed_backward(gl, glab, N, C, smoothing, weights, 0.5f,
                                                   ggrad, ws, s);
      const std::string tag =
          " C=" + std::to_string(C) + (weighted ? " weighted" : " unweighted");
      expectNear(gloss.get(), {loss}, "softmax_cross_entropy_smoothed" + tag, 1e-5, 0);
      expectNear(ggrad.get(), grad, "softmax_cross_entropy_smoothed_backward" + tag, 1e-4,
                 1e-7);
    }
  }
}

// clip_grad_norm over a segment table (empty and one-element segments
// included): the global norm and the coefficient against the CPU kernel,
// once clipping (max norm below the norm) and once not (coefficient 1).
TEST_F(CudaKernel, ClipGradNorm) {
  const std::vector<int64_t> sizes = {5, 0, 4096, 1, 9000, 3};
  int64_t total = 0;
  for (int64_t k : sizes) total += k;
  const Vec g = rng.vec(total);
  std::vector<const float*> ptrs;
  int64_t at = 0;
  for (int64_t k : sizes) {
    ptrs.push_back(g.data() + at);
    at += k;
  }
  DevF gg(g);
  std::vector<gpu::NormSegment> segs;
  at = 0;
  for (int64_t k : sizes) {
    segs.push_back({gg.ptr + at, k, 0});
    at += k;
  }
  EXPECT_EQ(gpu::layout_segments(segs.data(), (int)segs.size()), total);
  Dev<char> table(segs.size() * sizeof(gpu::NormSegment));
  cudaOk(cudaMemcpy(table.ptr, segs.data(), table.n, cudaMemcpyHostToDevice), "upload");
  for (double maxNorm : {1.0, 1e6}) {
    float want[2];
    cpu::clip_grad_norm(ptrs.data(), sizes.data(), (int)sizes.size(), maxNorm, want);
    DevF out(2), norm(1);
    Dev<char> ws(gpu::clip_grad_norm_workspace_bytes());
    gpu::clip_grad_norm(reinterpret_cast<const gpu::NormSegment*>(table.ptr), (int)segs.size(),
                        total, maxNorm, out, norm, ws, s);
    const std::string tag = " max_norm=" + std::to_string(maxNorm);
    expectNear(out.get(), {want[0], want[1]}, "clip_grad_norm" + tag, 1e-6, 0);
    expectNear(norm.get(), {want[0]}, "clip_grad_norm normOut" + tag, 1e-6, 0);
  }
}

TEST_F(CudaKernel, ShapeOps) {
  {  // transpose
    const Shape sh = {3, 4, 5, 6};
    const int64_t perm[4] = {2, 0, 3, 1};
    const Vec x = rng.vec(360);
    Vec y(360);
    cpu::transpose(x.data(), sh.data(), 4, perm, y.data());
    DevF gx(x), gy(360);
    gpu::transpose(gx.ptr, sh.data(), 4, perm, gy.ptr, s);
    expectNear(gy.get(), y, "transpose", 0, 0);
  }
  {  // slice with negative steps, and its backward
    const Shape xs = {6, 7, 8}, ys = {3, 2, 8};
    const int64_t starts[3] = {5, 1, 0}, steps[3] = {-2, 3, 1};
    const Vec x = rng.vec(336), dy = rng.vec(48);
    Vec y(48), dx(336);
    cpu::slice(x.data(), xs.data(), 3, starts, steps, y.data(), ys.data());
    cpu::slice_backward(dy.data(), ys.data(), 3, starts, steps, dx.data(), xs.data());
    DevF gx(x), gy(48), gdy(dy), gdx(336);
    gpu::slice(gx.ptr, xs.data(), 3, starts, steps, gy.ptr, ys.data(), s);
    gpu::slice_backward(gdy, ys.data(), 3, starts, steps, gdx, xs.data(), s);
    expectNear(gy.get(), y, "slice", 0, 0);
    expectNear(gdx.get(), dx, "slice_backward", 0, 0);
  }
  {  // concat and split along the middle axis
    const Shape out = {4, 9, 5};
    const int64_t sizes[3] = {2, 3, 4};
    const Vec a = rng.vec(40), b = rng.vec(60), c = rng.vec(80);
    const float* xs[3] = {a.data(), b.data(), c.data()};
    Vec y(180);
    cpu::concat(xs, sizes, 3, y.data(), out.data(), 3, 1);
    DevF ga(a), gb(b), gc(c), gy(180), sa(40), sb(60), sc(80);
    const float* gxs[3] = {ga.ptr, gb.ptr, gc.ptr};
    gpu::concat(gxs, sizes, 3, gy.ptr, out.data(), 3, 1, s);
    expectNear(gy.get(), y, "concat", 0, 0);
    float* gys[3] = {sa.ptr, sb.ptr, sc.ptr};
    gpu::split(gy.ptr, out.data(), 3, 1, sizes, 3, gys, s);
    expectNear(sa.get(), a, "split 0", 0, 0);
    expectNear(sb.get(), b, "split 1", 0, 0);
    expectNear(sc.get(), c, "split 2", 0, 0);
  }
  {  // gather (negative and repeated indices) and its backward
    const Shape ds = {3, 10, 4};
    const std::vector<int64_t> idx = {0, 9, -1, 3, 3, 5};
    const Vec data = rng.vec(120), dy = rng.vec(3 * 6 * 4);
    Vec y(72), dd(120);
    cpu::gather(data.data(), ds.data(), 3, 1, idx.data(), 6, y.data());
    cpu::gather_backward(dy.data(), idx.data(), 6, ds.data(), 3, 1, dd.data());
    DevF gd(data), gy(72), gdy(dy), gdd(120);
    Dev<int64_t> gi(idx);
    gpu::gather(gd.ptr, ds.data(), 3, 1, gi.ptr, 6, gy.ptr, s);
    gpu::gather_backward(gdy, gi, 6, ds.data(), 3, 1, gdd, s);
    expectNear(gy.get(), y, "gather", 0, 0);
    expectNear(gdd.get(), dd, "gather_backward", 1e-6, 1e-7);
  }
  {  // expand
    const Shape xs = {3, 1, 5}, ys = {2, 3, 4, 5};
    const Vec x = rng.vec(15);
    Vec y(120);
    cpu::expand(x.data(), xs.data(), 3, y.data(), ys.data(), 4);
    DevF gx(x), gy(120);
    gpu::expand(gx.ptr, xs.data(), 3, gy.ptr, ys.data(), 4, s);
    expectNear(gy.get(), y, "expand", 0, 0);
  }
  {  // int64 token ids move like floats: transpose [N, T] -> [T, N]
    const Shape sh = {5, 7};
    const int64_t perm[2] = {1, 0};
    std::vector<int64_t> x(35), y(35);
    for (int i = 0; i < 35; ++i) x[i] = (int64_t(1) << 40) + i * 977;
    cpu::transpose(x.data(), sh.data(), 2, perm, y.data());
    EXPECT_EQ(y[1], x[7]);
    Dev<int64_t> gx(x), gy(y.size());
    gpu::transpose(gx.ptr, sh.data(), 2, perm, gy.ptr, s);
    EXPECT_EQ(gy.get(), y);
  }
}

TEST_F(CudaKernel, Optimizers) {
  const int64_t n = 5000;
  const Vec p0 = rng.vec(n), g = rng.vec(n), b0 = rng.vec(n), m0 = rng.vec(n),
            v0 = rng.vec(n, 0, 1);
  for (int variant = 0; variant < 4; ++variant) {
    const double momentum = variant == 0 ? 0.0 : 0.9;
    const bool nesterov = variant == 3, first = variant == 1;
    Vec p = p0, b = b0;
    cpu::sgd_update(p.data(), g.data(), b.data(), n, 0.1, momentum, 0.1, 1e-2, nesterov, first);
    DevF gp(p0), gg(g), gb(b0);
    gpu::sgd_update(gp, gg, gb, n, 0.1, momentum, 0.1, 1e-2, nesterov, first, s);
    expectNear(gp.get(), p, "sgd param", 1e-6, 1e-7);
    expectNear(gb.get(), b, "sgd momentum", 1e-6, 1e-7);
  }
  for (bool decoupled : {false, true}) {
    Vec p = p0, m = m0, v = v0;
    cpu::adam_update(p.data(), g.data(), m.data(), v.data(), n, 1e-3, 0.9, 0.999, 1e-8, 1e-2,
                     decoupled, 3);
    DevF gp(p0), gg(g), gm(m0), gv(v0);
    gpu::adam_update(gp, gg, gm, gv, n, 1e-3, 0.9, 0.999, 1e-8, 1e-2, decoupled, 3, s);
    expectNear(gp.get(), p, "adam param", 1e-6, 1e-7);
    expectNear(gm.get(), m, "adam m", 1e-6, 1e-7);
    expectNear(gv.get(), v, "adam v", 1e-6, 1e-7);
  }
}

TEST_F(CudaKernel, MultiTensorOptimizers) {
  const std::vector<int64_t> sizes = {5, 0, 4096, 1, 9000, 3};
  int64_t total = 0;
  for (int64_t k : sizes) total += k;
  const Vec p0 = rng.vec(total), g = rng.vec(total), b0 = rng.vec(total), v0 = rng.vec(total, 0, 1);
  // SGD with momentum, later step, nesterov.
  {
    Vec p = p0, b = b0;
    cpu::sgd_update(p.data(), g.data(), b.data(), total, 0.05, 0.9, 0.0, 1e-3, true, false);
    DevF gp(p0), gg(g), gb(b0);
    std::vector<gpu::SgdSegment> segs;
    int64_t at = 0;
    for (int64_t k : sizes) {
      segs.push_back({gp.ptr + at, gg.ptr + at, gb.ptr + at, k, 0});
      at += k;
    }
    EXPECT_EQ(gpu::layout_segments(segs.data(), (int)segs.size()), total);
    Dev<char> table(segs.size() * sizeof(gpu::SgdSegment));
    cudaOk(cudaMemcpy(table.ptr, segs.data(), table.n, cudaMemcpyHostToDevice), "upload");
    gpu::multi_tensor_sgd_update(reinterpret_cast<const gpu::SgdSegment*>(table.ptr),
                                 (int)segs.size(), total, 0.05, 0.9, 0.0, 1e-3, true, false, s);
    expectNear(gp.get(), p, "multi_tensor_sgd param", 1e-6, 1e-7);
    expectNear(gb.get(), b, "multi_tensor_sgd momentum", 1e-6, 1e-7);
  }
  {
    Vec p = p0, m = b0, v = v0;
    cpu::adam_update(p.data(), g.data(), m.data(), v.data(), total, 1e-3, 0.9, 0.99, 1e-8, 0.01,
                     true, 5);
    DevF gp(p0), gg(g), gm(b0), gv(v0);
    std::vector<gpu::AdamSegment> segs;
    int64_t at = 0;
    for (int64_t k : sizes) {
      segs.push_back({gp.ptr + at, gg.ptr + at, gm.ptr + at, gv.ptr + at, k, 0});
      at += k;
    }
    EXPECT_EQ(gpu::layout_segments(segs.data(), (int)segs.size()), total);
    Dev<char> table(segs.size() * sizeof(gpu::AdamSegment));
    cudaOk(cudaMemcpy(table.ptr, segs.data(), table.n, cudaMemcpyHostToDevice), "upload");
    gpu::multi_tensor_adam_update(reinterpret_cast<const gpu::AdamSegment*>(table.ptr),
                                  (int)segs.size(), total, 1e-3, 0.9, 0.99, 1e-8, 0.01, true, 5,
                                  s);
    expectNear(gp.get(), p, "multi_tensor_adam param", 1e-6, 1e-7);
    expectNear(gm.get(), m, "multi_tensor_adam m", 1e-6, 1e-7);
    expectNear(gv.get(), v, "multi_tensor_adam v", 1e-6, 1e-7);
  }
}

// --precision=bf16 products: the CUDA kernels (cuBLASLt / cuDNN bf16, tensor
// cores; own kernels for asymmetric padding) against the CPU kernels that
// define them. The CPU kernels round an fp32 sum once. cuBLASLt does too, so
// summation order may flip a rounding: an element may differ by one bf16 ulp
// (2^-8 relative) and few may differ at all (fewDiffer). cuDNN's bf16
// convolution algorithms (the one measured fastest is taken) may split the
// reduction and round partial sums to bf16: an element's error is then up to
// a few bf16 ulps of those partial sums, whose size is that of the output's
// values (their rms), not of the element, which cancellation can make small
// (seen on an H100, cuDNN 9.19: 3 of 27648 elements up to 4 ulps off, e.g.
// -5.379e-4 against -5.226e-4, outputs of rms ~4): the bound is 2^-10 of the
// rms (8 ulps of it). A wrong index or a missed term gives errors of the
// output's own size, far above either bound.
void expectBf16Close(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want,
                     const std::string& what, bool fewDiffer = true) {
  ASSERT_EQ(got.size(), want.size()) << what;
  Vec g(got.size()), w(want.size());
  cpu::cast_bf16_to_f32(got.data(), g.data(), (int64_t)g.size());
  cpu::cast_bf16_to_f32(want.data(), w.data(), (int64_t)w.size());
  double squares = 0;
  for (float v : w) squares += double(v) * v;
  const float rms = w.empty() ? 0.0f : float(std::sqrt(squares / double(w.size())));
  const float floor = fewDiffer ? 1e-6f : rms * (1.0f / 1024) + 1e-6f;
  size_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (got[i] == want[i]) continue;
    ++differ;
    EXPECT_LE(std::fabs(g[i] - w[i]), std::fabs(w[i]) * (1.0f / 128) + floor)
        << what << ": element " << i << " gpu " << g[i] << " cpu " << w[i] << " (rms " << rms
        << ")";
  }
  if (fewDiffer) {
    EXPECT_LE(differ, g.size() / 20 + 1) << what << ": " << differ << " of " << g.size() << " differ";
  }
}

std::vector<uint16_t> bf16Of(const Vec& v) {
  std::vector<uint16_t> out(v.size());
  cpu::cast_f32_to_bf16(v.data(), out.data(), (int64_t)v.size());
  return out;
}

TEST_F(CudaKernel, Bf16ProductsMatchTheCpuDefinition) {
  {  // gemm, all transposes
    const int64_t M = 33, N = 40, K = 72;
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const auto A = bf16Of(rng.vec(M * K)), B = bf16Of(rng.vec(K * N));
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        std::vector<uint16_t> want(M * N);
        Vec ws(cpu::gemm_bf16_workspace(M, N, K));
        cpu::gemm_bf16(ta, tb, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, want.data(), N,
                       ws.data());
        Dev<uint16_t> ga(A), gb(B), gc(M * N);
        gpu::gemm_bf16(ctx, ta, tb, M, N, K, 1.0f, ga, lda, gb, ldb, gc, N);
        expectBf16Close(gc.get(), want, "gemm_bf16 " + std::to_string(ta) + std::to_string(tb));
      }
  }
  {  // batched matmul: strided batches, and a weight gradient summed over them
    const int64_t aShape[] = {4, 16, 24}, bShape[] = {4, 24, 32}, cShape[] = {4, 16, 32};
    const auto A = bf16Of(rng.vec(4 * 16 * 24)), B = bf16Of(rng.vec(4 * 24 * 32));
    std::vector<uint16_t> want(4 * 16 * 32);
    Vec ws(cpu::batched_matmul_bf16_workspace(aShape, 3, bShape, 3, cShape, 3));
    cpu::batched_matmul_bf16(A.data(), aShape, 3, false, B.data(), bShape, 3, false, want.data(),
                             cShape, 3, ws.data());
    Dev<uint16_t> ga(A), gb(B), gc(want.size());
    gpu::batched_matmul_bf16(ctx, ga, aShape, 3, false, gb, bShape, 3, false, gc, cShape, 3);
    expectBf16Close(gc.get(), want, "batched_matmul_bf16");
    const int64_t xShape[] = {4, 24, 16}, dShape[] = {24, 32};  // x^T [4,24,16] @ dy [4,16,32]
    const int64_t yShape[] = {4, 16, 32};
    const auto X = bf16Of(rng.vec(4 * 24 * 16)), DY = bf16Of(rng.vec(4 * 16 * 32));
    std::vector<uint16_t> wantW(24 * 32);
    Vec ws2(cpu::batched_matmul_bf16_workspace(xShape, 3, yShape, 3, dShape, 2));
    cpu::batched_matmul_bf16(X.data(), xShape, 3, false, DY.data(), yShape, 3, false, wantW.data(),
                             dShape, 2, ws2.data());
    Dev<uint16_t> gx(X), gdy(DY), gw(wantW.size());
    gpu::batched_matmul_bf16(ctx, gx, xShape, 3, false, gdy, yShape, 3, false, gw, dShape, 2);
    expectBf16Close(gw.get(), wantW, "batched_matmul_bf16 (summed batches)");
  }
  const Conv2dParams cases[] = {
      {4, 16, 12, 12, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // cuDNN
      {2, 8, 9, 8, 16, 3, 2, 1, 2, 0, 1, 1, 0, 1, 1, 1},     // asymmetric padding (direct)
  };
  for (const Conv2dParams& p : cases) {
    const int64_t nx = p.N * p.C * p.H * p.W, nw = p.K * (p.C / p.groups) * p.R * p.S,
                  ny = p.N * p.K * cpu::conv2d_out_h(p) * cpu::conv2d_out_w(p);
    const auto X = bf16Of(rng.vec(nx)), W = bf16Of(rng.vec(nw)), DY = bf16Of(rng.vec(ny));
    std::vector<uint16_t> y(ny), dx(nx), dw(nw);
    Vec ws(std::max({cpu::conv2d_forward_bf16_workspace(p),
                     cpu::conv2d_backward_data_bf16_workspace(p),
                     cpu::conv2d_backward_filter_bf16_workspace(p)}));
    cpu::conv2d_forward_bf16(p, X.data(), W.data(), y.data(), ws.data());
    cpu::conv2d_backward_data_bf16(p, DY.data(), W.data(), dx.data(), ws.data());
    cpu::conv2d_backward_filter_bf16(p, X.data(), DY.data(), dw.data(), ws.data());
    Dev<uint16_t> gx(X), gw(W), gdy(DY), gy(ny), gdx(nx), gdw(nw);
    gpu::conv2d_forward_bf16(ctx, p, gx, gw, gy);
    gpu::conv2d_backward_data_bf16(ctx, p, gdy, gw, gdx);
    gpu::conv2d_backward_filter_bf16(ctx, p, gx, gdy, gdw);
    const std::string tag = " (padT=" + std::to_string(p.padT) + ")";
    const bool direct = p.padT != p.padB || p.padL != p.padR;  // own kernels
    expectBf16Close(gy.get(), y, "conv2d_forward_bf16" + tag, direct);
    expectBf16Close(gdx.get(), dx, "conv2d_backward_data_bf16" + tag, direct);
    expectBf16Close(gdw.get(), dw, "conv2d_backward_filter_bf16" + tag, direct);
  }
}

// What a captured training step does: the updates and dropout read lr and
// step from ctx.scalars; step 1 runs directly, the later ones replay one
// graph after set_step_scalars. Every step must equal the CPU kernels with
// that step's lr and step (SGD's first-step momentum, Adam's bias correction,
// dropout's mask).
TEST_F(CudaKernel, CapturedUpdatesReplayWithTheCurrentStepScalars) {
  const std::vector<int64_t> sizes = {7, 4096, 1, 5000};
  int64_t total = 0;
  for (int64_t k : sizes) total += k;
  const Vec p0 = rng.vec(total), g = rng.vec(total), b0 = rng.vec(total), v0 = rng.vec(total, 0, 1);
  const int64_t nDrop = 3000;
  const Vec x = rng.vec(nDrop);
  auto lrOf = [](int64_t step) { return 0.01 * double(step); };

  Vec sp = p0, sb = b0, ap = p0, am = b0, av = v0;
  DevF gsp(p0), gsb(b0), gap(p0), gam(b0), gav(v0), gg(g), gx(x), gy(static_cast<size_t>(nDrop));
  Dev<uint8_t> gmask(nDrop);
  std::vector<gpu::SgdSegment> sgd;
  std::vector<gpu::AdamSegment> adam;
  int64_t at = 0;
  for (int64_t k : sizes) {
    sgd.push_back({gsp.ptr + at, gg.ptr + at, gsb.ptr + at, k, 0});
    adam.push_back({gap.ptr + at, gg.ptr + at, gam.ptr + at, gav.ptr + at, k, 0});
    at += k;
  }
  gpu::layout_segments(sgd.data(), (int)sgd.size());
  gpu::layout_segments(adam.data(), (int)adam.size());
  Dev<char> sgdTable(sgd.size() * sizeof(gpu::SgdSegment));
  Dev<char> adamTable(adam.size() * sizeof(gpu::AdamSegment));
  cudaOk(cudaMemcpy(sgdTable.ptr, sgd.data(), sgdTable.n, cudaMemcpyHostToDevice), "upload");
  cudaOk(cudaMemcpy(adamTable.ptr, adam.data(), adamTable.n, cudaMemcpyHostToDevice), "upload");
  auto step = [&] {
    gpu::multi_tensor_sgd_update(reinterpret_cast<const gpu::SgdSegment*>(sgdTable.ptr),
                                 (int)sgd.size(), total, ctx.scalars, 0.9, 0.0, 1e-3, true,
                                 1.0, nullptr, s);
    gpu::multi_tensor_adam_update(reinterpret_cast<const gpu::AdamSegment*>(adamTable.ptr),
                                  (int)adam.size(), total, ctx.scalars, 0.9, 0.99, 1e-8, 0.01,
                                  true, 1.0, nullptr, s);
    gpu::dropout(gx, gy, gmask, nDrop, 0.25f, 99, ctx.scalars, 0, s);
  };
  gpu::StepGraph* graph = nullptr;
  for (int64_t k = 1; k <= 4; ++k) {
    cpu::sgd_update(sp.data(), g.data(), sb.data(), total, lrOf(k), 0.9, 0.0, 1e-3, true, k == 1);
    cpu::adam_update(ap.data(), g.data(), am.data(), av.data(), total, lrOf(k), 0.9, 0.99, 1e-8,
                     0.01, true, k);
    gpu::set_step_scalars(ctx, lrOf(k), k);
    if (k == 1) {
      step();
    } else {
      if (!graph) {
        gpu::begin_capture(ctx);
        step();
        std::string why;
        graph = gpu::end_capture(ctx, &why);
        ASSERT_NE(graph, nullptr) << why;
      }
      gpu::replay(ctx, graph);
    }
    ctx.synchronize();
    const std::string at = " after step " + std::to_string(k);
    expectNear(gsp.get(), sp, "sgd param" + at, 1e-6, 1e-7);
    expectNear(gsb.get(), sb, "sgd momentum" + at, 1e-6, 1e-7);
    expectNear(gap.get(), ap, "adam param" + at, 1e-6, 1e-7);
    expectNear(gav.get(), av, "adam v" + at, 1e-6, 1e-7);
    Vec y(nDrop);
    std::vector<uint8_t> mask(nDrop);
    cpu::dropout(x.data(), y.data(), mask.data(), nDrop, 0.25f, 99, uint64_t(k));
    EXPECT_EQ(gmask.get(), mask) << "dropout mask" << at;
  }
  gpu::destroy_graph(graph);
}

// A capture that meets a synchronizing call fails cleanly: end_capture
// returns null with the reason, and the context keeps working.
TEST_F(CudaKernel, AFailedCaptureLeavesTheContextUsable) {
  DevF a(Vec{1, 2, 3});
  gpu::begin_capture(ctx);
  gpu::relu(a, a, 3, s);
  (void)cudaStreamSynchronize(s);  // not allowed while capturing
  std::string why;
  gpu::StepGraph* graph = gpu::end_capture(ctx, &why);
  EXPECT_EQ(graph, nullptr);
  EXPECT_FALSE(why.empty());
  gpu::neg(a, a, 3, s);
  ctx.synchronize();
  EXPECT_EQ(a.get(), (Vec{-1, -2, -3}));
}

TEST_F(CudaKernel, ContextAndArena) {
  EXPECT_GE(ctx.device, 0);
  EXPECT_NE(ctx.lt, nullptr);
  EXPECT_NE(ctx.dnn, nullptr);
  void* arena = gpu::arena_alloc(size_t(256) << 20);
  ASSERT_NE(arena, nullptr);
  EXPECT_GE(gpu::memory_peak_bytes(), size_t(256) << 20);
  gpu::arena_free(arena);
  gpu::Context moved = std::move(ctx);
  EXPECT_EQ(ctx.stream, nullptr);
  EXPECT_NE(moved.stream, nullptr);
  // A second context on the same rank binds the same device.
  gpu::Context other = gpu::Context::create(gpu::deviceCount());
  EXPECT_EQ(other.device, 0);
}

}  // namespace
}  // namespace dtcrt_cuda_test
