// The SIMT scheduler: runs one kernel launch on the calling thread, block by
// block, the threads of a block as ucontext fibers switched round-robin at
// __syncthreads and warp primitives (see SimtRuntime.h for the model).
// Fiber stacks are mmap'd once (with a guard page each) and reused.
#include "SimtRuntime.h"
#include "SimtState.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <cstdarg>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define SIMT_ASAN 1
#else
#define SIMT_ASAN 0
#endif

namespace simt::detail {

thread_local Coordinates coords;

namespace {

enum class State { Ready, Barrier, Warp, Done };

struct Fiber {
  ucontext_t ctx;
  char* stack = nullptr;
  State state = State::Ready;
  uint3 tid{0, 0, 0};
  int linear = 0;
  // at a barrier
  const char* barFile = nullptr;
  int barLine = 0;
  // at a warp operation
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0;
  uint64_t bits = 0, result = 0;
  int arg = 0, width = 32;
#if SIMT_ASAN
  void* fakeStack = nullptr;
#endif
};

size_t stackBytes() {
  static const size_t bytes = [] {
    const char* env = std::getenv("DTC_SIMT_STACK_KB");
    const size_t kb = env ? std::strtoul(env, nullptr, 10) : (SIMT_ASAN ? 256 : 64);
    return (kb < 16 ? 16 : kb) * 1024;
  }();
  return bytes;
}

struct Block {
  const Site* site = nullptr;
  std::function<void()>* body = nullptr;
  std::vector<Fiber> fibers;
  int count = 0;
  ucontext_t sched;
  int current = -1;
  bool aborted = false;
  std::string why;
  std::vector<void*> sharedSeen;
  // fiber stacks: one mapping, reused while large enough
  char* stacks = nullptr;
  size_t mapped = 0;
#if SIMT_ASAN
  void* schedFake = nullptr;
  const void* schedBottom = nullptr;
  size_t schedSize = 0;
#endif
};

thread_local Block blk;

Fiber& self() { return blk.fibers[blk.current]; }

// Switches from the running fiber back to the scheduler.
void toScheduler(bool exiting) {
  Fiber& f = self();
#if SIMT_ASAN
  __sanitizer_start_switch_fiber(exiting ? nullptr : &f.fakeStack, blk.schedBottom,
                                 blk.schedSize);
#else
  (void)exiting;
#endif
  swapcontext(&f.ctx, &blk.sched);
#if SIMT_ASAN
  __sanitizer_finish_switch_fiber(f.fakeStack, nullptr, nullptr);
#endif
}

void fiberMain() {
#if SIMT_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &blk.schedBottom, &blk.schedSize);
#endif
  (*blk.body)();
  self().state = State::Done;
  toScheduler(true);
}

void runFiber(int i) {
  blk.current = i;
  Fiber& f = blk.fibers[i];
  coords.thread = f.tid;
#if SIMT_ASAN
  __sanitizer_start_switch_fiber(&blk.schedFake, f.stack, stackBytes());
#endif
  swapcontext(&blk.sched, &f.ctx);
#if SIMT_ASAN
  __sanitizer_finish_switch_fiber(blk.schedFake, nullptr, nullptr);
#endif
  blk.current = -1;
}

void violation(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void violation(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  blk.aborted = true;
  blk.why = buf;
}

const char* opName(WarpOp op) {
  switch (op) {
    case WarpOp::ShflXor: return "__shfl_xor_sync";
    case WarpOp::ShflDown: return "__shfl_down_sync";
    case WarpOp::ShflUp: return "__shfl_up_sync";
    case WarpOp::ShflIdx: return "__shfl_sync";
    case WarpOp::Ballot: return "__ballot_sync";
    case WarpOp::Any: return "__any_sync";
    case WarpOp::All: return "__all_sync";
    case WarpOp::Sync: return "__syncwarp";
  }
  return "?";
}

// The lane a shuffle of `lane` reads (its own when the source is outside its
// segment of `width` lanes, as the CUDA documentation specifies).
int shuffleSource(WarpOp op, int lane, int arg, int width) {
  const int base = lane & ~(width - 1);
  switch (op) {
    case WarpOp::ShflXor: {
      const int src = lane ^ arg;
      return src >= base + width ? lane : src;
    }
    case WarpOp::ShflDown:
      return (lane - base) + arg >= width ? lane : lane + arg;
    case WarpOp::ShflUp:
      return (lane - base) < arg ? lane : lane - arg;
    case WarpOp::ShflIdx:
      return base + (arg % width + width) % width;
    default:
      return lane;
  }
}

// Completes the warp group that lane `first` (parked at a warp operation)
// belongs to, if every lane of its mask has arrived. Returns true when it did.
bool tryCompleteWarp(int first) {
  Fiber& a = blk.fibers[first];
  const int warpBase = first & ~31;
  const unsigned mask = a.mask;
  if (!(mask & (1u << (first & 31)))) {
    violation("%s mask 0x%08x does not include the calling lane %d", opName(a.op), mask,
              first & 31);
    return false;
  }
  for (int l = 0; l < 32; ++l) {
    if (!(mask & (1u << l))) continue;
    const int t = warpBase + l;
    if (t >= blk.count) {
      violation("%s mask 0x%08x names lane %d, which does not exist (block of %d threads)",
                opName(a.op), mask, l, blk.count);
      return false;
    }
    const Fiber& b = blk.fibers[t];
    if (b.state == State::Done) {
      violation("%s mask 0x%08x names lane %d, which has exited", opName(a.op), mask, l);
      return false;
    }
    if (b.state != State::Warp) return false;  // not arrived yet (or at a barrier)
    if (b.op != a.op || b.mask != mask) {
      violation("lanes %d and %d of a warp meet at different warp operations (%s 0x%08x, "
                "%s 0x%08x)", first & 31, l, opName(a.op), mask, opName(b.op), b.mask);
      return false;
    }
  }
  uint32_t votes = 0;
  for (int l = 0; l < 32; ++l)
    if ((mask & (1u << l)) && blk.fibers[warpBase + l].bits) votes |= 1u << l;
  for (int l = 0; l < 32; ++l) {
    if (!(mask & (1u << l))) continue;
    Fiber& b = blk.fibers[warpBase + l];
    switch (b.op) {
      case WarpOp::Ballot: b.result = votes; break;
      case WarpOp::Any: b.result = votes != 0; break;
      case WarpOp::All: b.result = votes == mask; break;
      case WarpOp::Sync: b.result = 0; break;
      default: {
        if (b.width <= 0 || b.width > 32 || (b.width & (b.width - 1))) {
          violation("%s width %d is not a power of two <= 32", opName(b.op), b.width);
          return false;
        }
        const int src = shuffleSource(b.op, l, b.arg, b.width);
        if (!(mask & (1u << src))) {
          violation("%s: lane %d reads lane %d, which is not in mask 0x%08x", opName(b.op), l,
                    src, mask);
          return false;
        }
        b.result = blk.fibers[warpBase + src].bits;
      }
    }
  }
  for (int l = 0; l < 32; ++l)
    if (mask & (1u << l)) blk.fibers[warpBase + l].state = State::Ready;
  return true;
}

// Releases what can be released once no fiber is runnable: complete warp
// groups first, else the block barrier. False on a deadlock (or violation).
bool release() {
  bool any = false;
  for (int i = 0; i < blk.count && !blk.aborted; ++i)
    if (blk.fibers[i].state == State::Warp && tryCompleteWarp(i)) any = true;
  if (blk.aborted) return false;
  if (any) return true;
  const Fiber* first = nullptr;
  for (int i = 0; i < blk.count; ++i) {
    const Fiber& f = blk.fibers[i];
    if (f.state == State::Done) continue;
    if (f.state == State::Warp) {
      violation("deadlock: thread %d waits at %s (mask 0x%08x) for lanes that wait at "
                "__syncthreads", i, opName(f.op), f.mask);
      return false;
    }
    if (!first) {
      first = &f;
    } else if (f.barLine != first->barLine || std::strcmp(f.barFile, first->barFile) != 0) {
      violation("threads %d and %d wait at different __syncthreads (%s:%d and %s:%d)",
                first->linear, f.linear, first->barFile, first->barLine, f.barFile, f.barLine);
      return false;
    }
  }
  if (!first) return false;
  for (int i = 0; i < blk.count; ++i)
    if (blk.fibers[i].state == State::Barrier) blk.fibers[i].state = State::Ready;
  return true;
}

void ensureStacks(int count) {
  const size_t page = 4096, per = stackBytes() + page;
  const size_t need = per * (size_t)count;
  if (blk.mapped >= need) return;
  if (blk.stacks) munmap(blk.stacks, blk.mapped);
  void* m = mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "simt: cannot map %zu bytes of fiber stacks\n", need);
    std::abort();
  }
  blk.stacks = static_cast<char*>(m);
  blk.mapped = need;
  for (int i = 0; i < count; ++i) mprotect(blk.stacks + per * i, page, PROT_NONE);  // guard
}

// Runs one block; false when it was aborted (trap or violation).
bool runBlock() {
  const size_t page = 4096, per = stackBytes() + page;
  const dim3 bd = coords.bdim;
  blk.sharedSeen.clear();
  for (int i = 0; i < blk.count; ++i) {
    Fiber& f = blk.fibers[i];
    f.state = State::Ready;
    f.linear = i;
    f.tid = uint3{(unsigned)(i % bd.x), (unsigned)((i / bd.x) % bd.y),
                  (unsigned)(i / (bd.x * bd.y))};
    f.stack = blk.stacks + per * i + page;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = stackBytes();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiberMain, 0);
  }
  int live = blk.count;
  while (live > 0) {
    for (int i = 0; i < blk.count; ++i) {
      if (blk.fibers[i].state != State::Ready) continue;
      runFiber(i);
      if (blk.aborted) return false;
      if (blk.fibers[i].state == State::Done) --live;
    }
    if (live == 0) break;
    if (!release()) {
      if (!blk.aborted) violation("deadlock: no thread of the block can proceed");
      return false;
    }
  }
  return true;
}

}  // namespace

void syncthreads(const char* file, int line) {
  if (blk.current < 0) return;  // host code
  Fiber& f = self();
  f.state = State::Barrier;
  f.barFile = file;
  f.barLine = line;
  toScheduler(false);
}

uint64_t warpExchange(WarpOp op, unsigned mask, uint64_t bits, int arg, int width) {
  Fiber& f = self();
  f.state = State::Warp;
  f.op = op;
  f.mask = mask;
  f.bits = bits;
  f.arg = arg;
  f.width = width;
  toScheduler(false);
  return self().result;
}

void trap(const char* file, int line) {
  violation("__trap() at %s:%d", file, line);
  toScheduler(true);
  std::abort();  // never resumed
}

void sharedDeclared(void* p, size_t bytes) {
  for (void* q : blk.sharedSeen)
    if (q == p) return;
  blk.sharedSeen.push_back(p);
  std::memset(p, 0xff, bytes);  // fresh shared memory holds garbage (NaN for floats)
}

void executeLaunch(const Site& site, dim3 grid, dim3 block, std::function<void()>& body) {
  const int count = (int)(block.x * block.y * block.z);
  ensureStacks(count);
  blk.site = &site;
  blk.body = &body;
  blk.count = count;
  if ((int)blk.fibers.size() < count) blk.fibers.resize(count);
  blk.aborted = false;
  coords.bdim = block;
  coords.gdim = grid;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        coords.block = uint3{x, y, z};
        countBlock(site);
        if (!runBlock()) {
          char where[160];
          std::snprintf(where, sizeof where, "%s (%s:%d), block (%u,%u,%u): ", site.kernel,
                        site.file, site.line, x, y, z);
          setLaunchFailure(std::string(where) + blk.why);
          blk.body = nullptr;
          return;
        }
      }
  blk.body = nullptr;
}

}  // namespace simt::detail
