// The SIMT scheduler: runs one kernel launch on the calling thread, block by
// block, the threads of a block as fibers switched round-robin at
// __syncthreads and warp primitives (see SimtRuntime.h for the model).
// A fiber is a stack (mmap'd once, with a guard page) started once with
// glibc's makecontext/swapcontext; it then runs one thread after another and
// is switched with _setjmp/_longjmp, which unlike swapcontext make no
// sigprocmask system call (a 100x cheaper switch). A fiber left inside a
// thread by a trap or violation is started afresh next time.
#include "SimtRuntime.h"
#include "SimtState.h"

#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <deque>

#include <chrono>
#include <map>
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

Coordinates coords;

namespace {

enum class State { Ready, Barrier, Warp, Done };

// What a switch touches lives apart from the scheduler's scans.
struct Switch {
  ucontext_t ctx;  // only to start the fiber
  jmp_buf jb;      // where it continues
};

// Small (scanned every round): the state, the coordinates, the operation
// it waits at.
struct Fiber {
  Switch* sw = nullptr;
  bool started = false;
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
  std::deque<Fiber> fibers;  // a deque: fibers never move
  int count = 0;
  ucontext_t sched;  // the scheduler while a fiber starts
  jmp_buf schedJb;   // the scheduler while a fiber runs
  int current = -1;  // the running fiber; -1 none (host code), kDirect a plain call
  int directThread = 0;
  bool aborted = false;
  std::string why;
  std::vector<void*> sharedSeen;
#if SIMT_ASAN
  void* schedFake = nullptr;
  const void* schedBottom = nullptr;
  size_t schedSize = 0;
#endif
};

// Never destroyed (its fibers outlive static destructors). Launches are
// serialized by the API lock (SimtCudaApi.cpp), so one block state suffices.
Block& blk = *new Block;
constexpr int kDirect = -2;
// Ends a thread that runs as a plain call (trap or violation).
struct DirectAbort {};

Fiber& self() { return blk.fibers[blk.current]; }

#if SIMT_ASAN
#define SIMT_START_SWITCH(fake, bottom, size) __sanitizer_start_switch_fiber(fake, bottom, size)
#define SIMT_FINISH_SWITCH(fake, bottom, size) __sanitizer_finish_switch_fiber(fake, bottom, size)
#else
#define SIMT_START_SWITCH(fake, bottom, size) ((void)0)
#define SIMT_FINISH_SWITCH(fake, bottom, size) ((void)0)
#endif

// Switches from the running fiber back to the scheduler; returns when the
// scheduler resumes it. `exiting`: it will not be resumed where it is.
void toScheduler(bool exiting) {
  Fiber& f = self();
#if SIMT_ASAN
  void** fake = exiting ? nullptr : &f.fakeStack;
#else
  (void)exiting;
#endif
  SIMT_START_SWITCH(fake, blk.schedBottom, blk.schedSize);
  if (!_setjmp(f.sw->jb)) _longjmp(blk.schedJb, 1);
  SIMT_FINISH_SWITCH(self().fakeStack, nullptr, nullptr);
}

// The body of every fiber: started once, then runs the thread it is given
// each time the scheduler resumes it, forever.
int starting = -1;
void fiberMain() {
  Fiber& f = blk.fibers[starting];
  SIMT_FINISH_SWITCH(nullptr, &blk.schedBottom, &blk.schedSize);
  if (!_setjmp(f.sw->jb)) {
    SIMT_START_SWITCH(&f.fakeStack, blk.schedBottom, blk.schedSize);
    swapcontext(&f.sw->ctx, &blk.sched);  // started; never resumed through ctx
  }
  SIMT_FINISH_SWITCH(f.fakeStack, nullptr, nullptr);
  for (;;) {
    (*blk.body)();
    self().state = State::Done;
    toScheduler(false);
  }
}

void startFiber(int i) {
  Fiber& f = blk.fibers[i];
  ucontext_t& ctx = f.sw->ctx;
  getcontext(&ctx);
  ctx.uc_stack.ss_sp = f.stack;
  ctx.uc_stack.ss_size = stackBytes();
  ctx.uc_link = nullptr;
  makecontext(&ctx, fiberMain, 0);
  starting = i;
  SIMT_START_SWITCH(&blk.schedFake, f.stack, stackBytes());
  swapcontext(&blk.sched, &f.sw->ctx);
  SIMT_FINISH_SWITCH(blk.schedFake, nullptr, nullptr);
  f.started = true;
}

void runFiber(int i) {
  blk.current = i;
  Fiber& f = blk.fibers[i];
  coords.thread = f.tid;
  SIMT_START_SWITCH(&blk.schedFake, f.stack, stackBytes());
  if (!_setjmp(blk.schedJb)) _longjmp(f.sw->jb, 1);
  SIMT_FINISH_SWITCH(blk.schedFake, nullptr, nullptr);
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

// Fibers for `count` threads, each with its own stack and a guard page.
void ensureFibers(int count) {
  const size_t page = 4096;
  while ((int)blk.fibers.size() < count) {
    void* m = mmap(nullptr, stackBytes() + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      std::fprintf(stderr, "simt: cannot map a fiber stack\n");
      std::abort();
    }
    mprotect(m, page, PROT_NONE);  // guard
    blk.fibers.emplace_back();
    blk.fibers.back().stack = static_cast<char*>(m) + page;
    blk.fibers.back().sw = new Switch;  // kept for the process's life, as the stack
  }
}

// Under the wide grid policy blocks, and the threads of a block, also run in
// reverse order: a kernel that relies on an order the device does not
// promise (a block reading another's output, a thread another's shared
// write without a barrier) then sees the other one.
bool reversedOrder() { return gridPolicy() == GridPolicy::Wide; }

// Runs one block of a kernel without primitives: each thread a plain call.
bool runBlockDirect() {
  const dim3 bd = coords.bdim;
  blk.sharedSeen.clear();
  blk.current = kDirect;
  try {
    for (int k = 0; k < blk.count; ++k) {
      const int i = reversedOrder() ? blk.count - 1 - k : k;
      coords.thread = uint3{(unsigned)(i % bd.x), (unsigned)((i / bd.x) % bd.y),
                            (unsigned)(i / (bd.x * bd.y))};
      (*blk.body)();
    }
  } catch (const DirectAbort&) {
  }
  blk.current = -1;
  return !blk.aborted;
}

// Runs one block; false when it was aborted (trap or violation): its
// fibers still inside a thread are then started afresh next time.
bool runBlock() {
  const dim3 bd = coords.bdim;
  blk.sharedSeen.clear();
  for (int i = 0; i < blk.count; ++i) {
    Fiber& f = blk.fibers[i];
    if (!f.started) startFiber(i);
    f.state = State::Ready;
    f.linear = i;
    f.tid = uint3{(unsigned)(i % bd.x), (unsigned)((i / bd.x) % bd.y),
                  (unsigned)(i / (bd.x * bd.y))};
  }
  int live = blk.count;
  bool ok = true;
  while (live > 0 && ok) {
    for (int k = 0; k < blk.count; ++k) {
      const int i = reversedOrder() ? blk.count - 1 - k : k;
      if (blk.fibers[i].state != State::Ready) continue;
      runFiber(i);
      if (blk.aborted) {
        ok = false;
        break;
      }
      if (blk.fibers[i].state == State::Done) --live;
    }
    if (!ok || live == 0) break;
    if (!release()) {
      if (!blk.aborted) violation("deadlock: no thread of the block can proceed");
      ok = false;
    }
  }
  if (!ok)
    for (int i = 0; i < blk.count; ++i)
      if (blk.fibers[i].state != State::Done) blk.fibers[i].started = false;
  return ok;
}

}  // namespace

// A primitive reached by a kernel the rewrite did not mark cooperative.
[[noreturn]] void notCooperative(const char* what) {
  violation("%s reached, but the kernel was not classified cooperative (simt_preprocess.py "
            "saw no primitive in its __device__ call graph)", what);
  throw DirectAbort{};
}

void syncthreads(const char* file, int line) {
  if (blk.current == kDirect) notCooperative("__syncthreads");
  if (blk.current < 0) return;  // host code
  Fiber& f = self();
  f.state = State::Barrier;
  f.barFile = file;
  f.barLine = line;
  toScheduler(false);
}

uint64_t warpExchange(WarpOp op, unsigned mask, uint64_t bits, int arg, int width) {
  if (blk.current == kDirect) notCooperative(opName(op));
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
  if (blk.current == kDirect) throw DirectAbort{};
  toScheduler(true);
  std::abort();  // never resumed: the scheduler restarts this fiber
}

void sharedDeclared(void* p, size_t bytes) {
  for (void* q : blk.sharedSeen)
    if (q == p) return;
  blk.sharedSeen.push_back(p);
  std::memset(p, 0xff, bytes);  // fresh shared memory holds garbage (NaN for floats)
}

namespace {

// DTC_SIMT_STATS=1: seconds, launches and blocks per kernel, printed at exit
// (a '*' marks the cooperative ones, which run as fibers).
struct Stat {
  double seconds = 0;
  uint64_t launches = 0, blocks = 0;
};
std::map<std::string, Stat>& stats() {
  static std::map<std::string, Stat>* m = [] {
    auto* table = new std::map<std::string, Stat>;
    std::atexit([] {
      for (const auto& [k, v] : stats())
        std::fprintf(stderr, "simt stats: %-28s %9.3f s %7llu launches %9llu blocks\n",
                     k.c_str(), v.seconds, (unsigned long long)v.launches,
                     (unsigned long long)v.blocks);
    });
    return table;
  }();
  return *m;
}
void runLaunch(const Site& site, dim3 grid, dim3 block, std::function<void()>& body);

}  // namespace

void executeLaunch(const Site& site, dim3 grid, dim3 block, std::function<void()>& body) {
  static const bool timed = std::getenv("DTC_SIMT_STATS") != nullptr;
  if (!timed) return runLaunch(site, grid, block, body);
  const auto t0 = std::chrono::steady_clock::now();
  runLaunch(site, grid, block, body);
  Stat& st = stats()[std::string(site.kernel) + (site.cooperative ? "*" : "")];
  st.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  st.launches++;
  st.blocks += (uint64_t)grid.x * grid.y * grid.z;
}

namespace {

void runLaunch(const Site& site, dim3 grid, dim3 block, std::function<void()>& body) {
  const int count = (int)(block.x * block.y * block.z);
  if (site.cooperative) ensureFibers(count);
  blk.site = &site;
  blk.body = &body;
  blk.count = count;
  blk.aborted = false;
  coords.bdim = block;
  coords.gdim = grid;
  const bool rev = reversedOrder();
  for (unsigned zi = 0; zi < grid.z; ++zi)
    for (unsigned yi = 0; yi < grid.y; ++yi)
      for (unsigned xi = 0; xi < grid.x; ++xi) {
        const unsigned x = rev ? grid.x - 1 - xi : xi, y = rev ? grid.y - 1 - yi : yi,
                       z = rev ? grid.z - 1 - zi : zi;
        coords.block = uint3{x, y, z};
        countBlock(site);
        if (!(site.cooperative ? runBlock() : runBlockDirect())) {
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

}  // namespace

}  // namespace simt::detail
