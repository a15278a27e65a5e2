// ConvAlgorithm::OneDnn: 2-D convolutions on oneDNN (see ConvOneDnn.h).
//
// Each (shape, pass, thread count) gets one cache entry on its first call:
// the primitive
// descriptor with every layout left to oneDNN ("any"), the primitive, and
// for each tensor argument whose chosen layout is not plain NCHW/OIHW a
// blocked buffer with the reorders into and out of it. The scratchpad is
// owned by the entry too (user mode), so a call allocates nothing.
#include "runtime/cpu/ConvOneDnn.h"

#include "runtime/cpu/Internal.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Parallel.h"

#include <dnnl.hpp>

#include <array>
#include <memory>
#include <string>
#include <unordered_map>

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace dtcrt::cpu::onednn {
using detail::fail;

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// One tensor argument of a primitive: the caller's plain memory and, when
// oneDNN runs on another layout, the blocked copy and the reorders.
struct Operand {
  memory::desc plain;
  memory blocked;  // null when the primitive takes `plain` itself
  dnnl::reorder toBlocked, fromBlocked;

  void prepare(const dnnl::engine& engine, const memory::desc& wanted, bool isInput) {
    if (wanted == plain) return;
    blocked = memory(wanted, engine);
    memory plainMem(plain, engine, DNNL_MEMORY_NONE);
    if (isInput)
      toBlocked = dnnl::reorder(plainMem, blocked);
    else
      fromBlocked = dnnl::reorder(blocked, plainMem);
  }
  int64_t bytes() const { return blocked ? int64_t(blocked.get_desc().get_size()) : 0; }

  // The memory the primitive reads: `data` itself or its blocked copy.
  memory input(const dnnl::engine& engine, dnnl::stream& stream, const float* data) {
    memory user(plain, engine, const_cast<float*>(data));
    if (!blocked) return user;
    toBlocked.execute(stream, user, blocked);
    return blocked;
  }
  memory output(const dnnl::engine& engine, float* data) {
    return blocked ? blocked : memory(plain, engine, data);
  }
  void finish(const dnnl::engine& engine, dnnl::stream& stream, float* data) {
    if (!blocked) return;
    memory user(plain, engine, data);
    fromBlocked.execute(stream, blocked, user);
  }
};

// Per pass: forward (src, weights, dst), backward data (diff_dst, weights,
// diff_src), backward filter (src, diff_dst, diff_weights).
struct Entry {
  dnnl::primitive primitive;
  Operand first, second, result;
  memory bias;  // forward with a bias: plain [K]
  memory scratchpad;
  std::string implementation;
  int64_t bytes = 0;
};

using Key = std::array<int64_t, 19>;

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ uint64_t(v)) * 1099511628211ull;
    return size_t(h);
  }
};

// oneDNN sizes a primitive's work split for the OpenMP thread count it is
// created under, so the count is part of the key.
Key keyOf(const Conv2dParams& p, ConvPass pass, bool hasBias, int threads) {
  return {p.N,    p.C,    p.H,    p.W,         p.K,         p.R,
          p.S,    p.strideH, p.strideW, p.padT, p.padL,   p.padB,
          p.padR, p.dilH, p.dilW, p.groups, int64_t(pass), hasBias ? 1 : 0, threads};
}

struct Shapes {
  memory::dims src, weights, dst, strides, dilations, padL, padR;
  Tag weightsTag;
};

Shapes shapesOf(const Conv2dParams& p) {
  Shapes s;
  s.src = {p.N, p.C, p.H, p.W};
  s.dst = {p.N, p.K, conv2d_out_h(p), conv2d_out_w(p)};
  if (p.groups > 1) {
    s.weights = {p.groups, p.K / p.groups, p.C / p.groups, p.R, p.S};
    s.weightsTag = Tag::goihw;
  } else {
    s.weights = {p.K, p.C, p.R, p.S};
    s.weightsTag = Tag::oihw;
  }
  s.strides = {p.strideH, p.strideW};
  s.dilations = {p.dilH - 1, p.dilW - 1};  // oneDNN counts the gaps
  s.padL = {p.padT, p.padL};
  s.padR = {p.padB, p.padR};
  return s;
}

struct ThreadCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::unordered_map<Key, std::unique_ptr<Entry>, KeyHash> entries;
  int64_t bytes = 0;
};

ThreadCache& cache() {
  thread_local ThreadCache c;
  return c;
}

memory::desc anyOf(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, Tag::any);
}
memory::desc plainOf(const memory::dims& dims, Tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

std::unique_ptr<Entry> build(ThreadCache& c, const Conv2dParams& p, ConvPass pass,
                             bool hasBias) {
  using namespace dnnl;
  const Shapes s = shapesOf(p);
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  const memory::desc src = anyOf(s.src), weights = anyOf(s.weights), dst = anyOf(s.dst);
  const memory::desc bias = plainOf({p.K}, Tag::x);
  // The backward passes take the forward descriptor as a hint.
  convolution_forward::primitive_desc forward(
      hasBias && pass == ConvPass::Forward
          ? convolution_forward::desc(prop_kind::forward_training,
                                      algorithm::convolution_direct, src, weights, bias, dst,
                                      s.strides, s.dilations, s.padL, s.padR)
          : convolution_forward::desc(prop_kind::forward_training,
                                      algorithm::convolution_direct, src, weights, dst,
                                      s.strides, s.dilations, s.padL, s.padR),
      attr, c.engine);
  auto e = std::make_unique<Entry>();
  const memory::desc plainSrc = plainOf(s.src, Tag::nchw), plainDst = plainOf(s.dst, Tag::nchw),
                     plainWeights = plainOf(s.weights, s.weightsTag);
  memory::desc scratch;
  switch (pass) {
    case ConvPass::Forward:
      e->first.plain = plainSrc, e->second.plain = plainWeights, e->result.plain = plainDst;
      e->first.prepare(c.engine, forward.src_desc(), true);
      e->second.prepare(c.engine, forward.weights_desc(), true);
      e->result.prepare(c.engine, forward.dst_desc(), false);
      if (hasBias) e->bias = memory(bias, c.engine, DNNL_MEMORY_NONE);
      e->primitive = convolution_forward(forward);
      e->implementation = forward.impl_info_str();
      scratch = forward.scratchpad_desc();
      break;
    case ConvPass::BackwardData: {
      convolution_backward_data::primitive_desc pd(
          convolution_backward_data::desc(algorithm::convolution_direct, src, weights, dst,
                                          s.strides, s.dilations, s.padL, s.padR),
          attr, c.engine, forward);
      e->first.plain = plainDst, e->second.plain = plainWeights, e->result.plain = plainSrc;
      e->first.prepare(c.engine, pd.diff_dst_desc(), true);
      e->second.prepare(c.engine, pd.weights_desc(), true);
      e->result.prepare(c.engine, pd.diff_src_desc(), false);
      e->primitive = convolution_backward_data(pd);
      e->implementation = pd.impl_info_str();
      scratch = pd.scratchpad_desc();
      break;
    }
    case ConvPass::BackwardFilter: {
      convolution_backward_weights::primitive_desc pd(
          convolution_backward_weights::desc(algorithm::convolution_direct, src, weights, dst,
                                             s.strides, s.dilations, s.padL, s.padR),
          attr, c.engine, forward);
      e->first.plain = plainSrc, e->second.plain = plainDst, e->result.plain = plainWeights;
      e->first.prepare(c.engine, pd.src_desc(), true);
      e->second.prepare(c.engine, pd.diff_dst_desc(), true);
      e->result.prepare(c.engine, pd.diff_weights_desc(), false);
      e->primitive = convolution_backward_weights(pd);
      e->implementation = pd.impl_info_str();
      scratch = pd.scratchpad_desc();
      break;
    }
  }
  e->scratchpad = memory(scratch, c.engine);
  e->bytes = e->first.bytes() + e->second.bytes() + e->result.bytes() + int64_t(scratch.get_size());
  return e;
}

// oneDNN runs on OpenMP's threads: as many as dtcrt::setNumThreads asked
// for, or one for a convolution too small to repay waking a second
// (detail::threadsFor; at oneDNN's ~90 GFLOP/s per thread here), set on the
// calling thread (each rank thread has its own count). Returns that count.
// Without it OpenMP would start a thread per core, which spin-wait between
// calls on the cores other ranks or OpenBLAS use.
int matchThreads(const Conv2dParams& p) {
  constexpr double kFlopsPerNs = 90.0;
  const double flops = 2.0 * double(p.N) * double(p.K) * double(conv2d_out_h(p)) *
                       double(conv2d_out_w(p)) * double(p.C / p.groups) * double(p.R * p.S);
  const int want = detail::threadsFor(flops / kFlopsPerNs);
  if (omp_get_max_threads() != want) omp_set_num_threads(want);
  return want;
}

Entry& entryFor(ThreadCache& c, const Conv2dParams& p, ConvPass pass, bool hasBias) {
  const Key key = keyOf(p, pass, hasBias, matchThreads(p));
  auto it = c.entries.find(key);
  if (it != c.entries.end()) return *it->second;
  std::unique_ptr<Entry> e;
  try {
    e = build(c, p, pass, hasBias);
  } catch (const dnnl::error& err) {
    fail("conv2d", "oneDNN has no convolution for this shape (%s)", err.what());
  }
  c.bytes += e->bytes;
  return *c.entries.emplace(key, std::move(e)).first->second;
}

// Runs entry's primitive: first and second are inputs, result the output.
void run(ThreadCache& c, Entry& e, const float* first, const float* second, float* result,
         const float* bias, int firstArg, int secondArg, int resultArg) {
  try {
    std::unordered_map<int, memory> args{
        {firstArg, e.first.input(c.engine, c.stream, first)},
        {secondArg, e.second.input(c.engine, c.stream, second)},
        {resultArg, e.result.output(c.engine, result)},
        {DNNL_ARG_SCRATCHPAD, e.scratchpad}};
    if (bias) {
      e.bias.set_data_handle(const_cast<float*>(bias));
      args.emplace(DNNL_ARG_BIAS, e.bias);
    }
    e.primitive.execute(c.stream, args);
    e.result.finish(c.engine, c.stream, result);
    c.stream.wait();
  } catch (const dnnl::error& err) {
    fail("conv2d", "oneDNN failed: %s", err.what());
  }
}

}  // namespace

void forward(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y) {
  ThreadCache& c = cache();
  Entry& e = entryFor(c, p, ConvPass::Forward, bias != nullptr);
  run(c, e, x, w, y, bias, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST);
}

void backward_data(const Conv2dParams& p, const float* dy, const float* w, float* dx) {
  ThreadCache& c = cache();
  Entry& e = entryFor(c, p, ConvPass::BackwardData, false);
  run(c, e, dy, w, dx, nullptr, DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC);
}

void backward_filter(const Conv2dParams& p, const float* x, const float* dy, float* dw) {
  ThreadCache& c = cache();
  Entry& e = entryFor(c, p, ConvPass::BackwardFilter, false);
  run(c, e, x, dy, dw, nullptr, DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS);
}

int64_t cached_bytes() { return cache().bytes; }

const char* implementation(const Conv2dParams& p, ConvPass pass) {
  return entryFor(cache(), p, pass, false).implementation.c_str();
}

}  // namespace dtcrt::cpu::onednn
