// emu_runner: runs one kernel launch of a compiled kernel module (kernel.so) on the CPU.
//
//   emu_runner MODULE.so INPUT OUTPUT REPORT
//
// INPUT (written by grader/emu/launch.py) holds the launch configuration and the
// arguments; OUTPUT receives every pointer argument's bytes after the launch; REPORT
// receives a key=value fault record when the kernel breaks a rule (exit status 3).
//
// Each CUDA thread of a block is a fiber with its own stack; a block's fibers run on one
// OS thread and switch only at __syncthreads / warp collectives / exit (hand-written
// x86-64 stack switch). Every fiber starts on a stack whose used part is filled with 0xFF
// bytes (NaN as float, double, half and bf16) and with all-ones xmm registers, so an
// uninitialised floating-point local reads as NaN rather than a value left by an earlier
// thread. Blocks are shared out to up to `nworkers` forked worker
// processes; argument buffers live in MAP_SHARED memory with PROT_NONE guard pages on
// both sides, so an out-of-bounds access raises SIGSEGV, which the handler turns into a
// report naming the argument, the element index, the thread and the block.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "emu_abi.h"

extern "C" {
__emu_thread* __emu_cur = 0;
__emu_uint3 __emu_bidx, __emu_bdim, __emu_gdim;
int __emu_check_uninit = 1;
int __emu_tc_double = 0;  // flag 32: every matrix instruction doubles its A operand (a probe run)
int __emu_tc_keyed = 0;  // flag 64: products' signs flipped by a keyed hash (a keyed probe run, emu_abi.h)
long long __emu_cp_pending = 0, __emu_cp_pending_other = 0;
unsigned short* __emu_cp_dyn_shadow = 0;
char* __emu_cp_dyn_base = 0;
unsigned long long __emu_cp_dyn_bytes = 0;
void emu_switch(void** save_sp, void* to_sp);
}

asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size emu_switch,.-emu_switch
)");

namespace {

const size_t PAGE = 4096;
const size_t STACK = 256 * 1024;  // per CUDA thread (virtual; only touched pages cost)
// Stack poisoning: when a fiber starts, [fill_lo, stack_hi) of its stack is all 0xFF bytes.
// When it finishes (its stack still in cache), only the part below the lowest byte that is
// no longer 0xFF needs refilling (found by a scan up from fill_lo); when a fiber used all of
// its filled part (or its stack pointer went below it), its filled part grows. It starts at
// g_fill_init: FILL_INIT, or more when the module's own functions have larger frames (g++
// -fstack-usage, passed in by launch.py), so even locals no thread ever writes read NaN. A
// fresh stack gets at least its top page (FILL_FIRST) filled at once.
const size_t FILL_INIT = 512;
const size_t FILL_FIRST = 4096;
size_t g_fill_init = FILL_INIT;

enum { RUNNABLE, AT_BARRIER, AT_WARP, DONE, AT_TC /* its matrix instruction is with the runner's parent */ };

// One cp.async (__pipeline_memcpy_async) that has not landed yet (see "cp.async" below).
struct CpCopy {
  unsigned char* dst;
  unsigned short* shadow;    // the counter of its first 4-byte granule (0: memory we cannot place)
  unsigned long long group;  // its thread's commit group (the open batch: == committed)
  unsigned long long nwaits; // its thread's __pipeline_wait_prior calls before it was issued
  unsigned size;
  int line;
  bool other;                // counted in __emu_cp_pending_other (a static __shared__ array)
  unsigned char data[16];    // the source bytes, read when issued
};
struct CpThread {
  std::vector<CpCopy> q;  // in issue order; [head, size) have not landed
  size_t head = 0;
  unsigned long long committed = 0;  // commit groups closed so far
  unsigned long long nwaits = 0;     // __pipeline_wait_prior calls so far
  unsigned long long wait_prior = 0, wait_committed = 0;  // the last wait's argument, and `committed` then
  int wait_line = 0;
  void reset() { q.clear(); head = 0; committed = nwaits = wait_prior = wait_committed = 0; wait_line = 0; }
};

struct Fiber {
  __emu_thread t;  // must be first: __emu_cur points here
  void* sp;
  int state;
  int line;
  char* stack_lo;  // guard page start
  char* stack_hi;
  char* fill_lo;    // [fill_lo, stack_hi) is all 0xFF when the fiber starts
  uintptr_t min_sp; // lowest saved stack pointer seen at a switch in the last run
  CpThread cp;      // its asynchronous copies
};

struct Warp {
  unsigned exist;    // lanes that exist in this warp
  unsigned arrived;  // lanes waiting in the pending collective
  unsigned mask;     // participants of the pending collective
  int kind, line;
  __emu_combine_fn fn;
  void* payloads[32];
};

struct Buffer {
  std::string name;
  unsigned itemsize;
  size_t nbytes;
  char* region;  // mapping start (guard page)
  size_t region_len;
  char* start;   // first byte of the data
  char* end;     // one past the last byte (page aligned; a guard page follows)
};

const int TC_SHAPES = 16;
struct Control {  // MAP_SHARED between workers
  unsigned long long next_block;
  int reported;
  int failed;
  // tensor-core instructions executed in this launch, per shape (m << 20 | n << 10 | k): the
  // grade's evidence that a kernel ran on tensor cores (what runs counts, not what compiles)
  int tc_lock;
  unsigned tc_shape[TC_SHAPES];
  unsigned long long tc_count[TC_SHAPES];
};

// launch state
typedef void (*tramp_fn)(void**);
tramp_fn g_tramp;
void** g_args;
std::vector<Buffer> g_bufs;
Control* g_ctl;
unsigned g_nthreads, g_nwarps;
unsigned long long g_nblocks;
int g_order_mode;       // 0 forward, 1 reversed, 2 lanes of each warp reversed, 3 warps reversed
std::vector<unsigned> g_order;  // the order the threads of a block are resumed in
int g_report_fd = -1;
uintptr_t g_mod_base;
char *g_smem_region, *g_smem, *g_smem_end;
size_t g_smem_size, g_smem_region_len;

// block state (per worker)
std::vector<Fiber> g_fibers;
std::vector<Warp> g_warps;
char* g_stacks;
size_t g_stacks_len;
void* g_sched_sp;
unsigned g_done;
unsigned g_bar_arrived;
int g_bar_line;
unsigned g_bar_gen;
int g_bar_red[3];
int g_bar_result[2][3];
__emu_shared_base* g_shared_head;

// memory traffic (traffic.h): on only for a launch that asks for it
bool g_tr_on = false;
const char* g_tr_path = 0;
void tr_init();
void tr_block_start();
void tr_block_end();
void tr_write(const char* path);

// printf capture
char g_out[1 << 16];
size_t g_out_len;
size_t g_out_total;
const size_t OUT_CAP = 4u << 20;
bool g_out_truncated;

void out_flush() {
  size_t off = 0;
  while (off < g_out_len) {
    ssize_t w = write(1, g_out + off, g_out_len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  g_out_len = 0;
}

const char* op_name(int kind) {
  switch (kind) {
    case EMU_OP_SHFL: return "__shfl_sync";
    case EMU_OP_SHFL_UP: return "__shfl_up_sync";
    case EMU_OP_SHFL_DOWN: return "__shfl_down_sync";
    case EMU_OP_SHFL_XOR: return "__shfl_xor_sync";
    case EMU_OP_VOTE: return "__ballot_sync/__any_sync/__all_sync";
    case EMU_OP_SYNCWARP: return "__syncwarp";
    case EMU_OP_WMMA_LOAD: return "wmma::load_matrix_sync";
    case EMU_OP_WMMA_STORE: return "wmma::store_matrix_sync";
    case EMU_OP_WMMA_MMA: return "wmma::mma_sync";
    case EMU_OP_REDUCE: return "__reduce_*_sync";
    case EMU_OP_MATCH: return "__match_any_sync";
    case EMU_OP_PTX_MMA: return "mma.sync (inline PTX)";
    case EMU_OP_LDMATRIX: return "ldmatrix (inline PTX)";
  }
  return "warp collective";
}

// ------------------------------------------------------------------ fault reports
struct Rep {
  char buf[8192];
  size_t n = 0;
  void add(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
    va_end(ap);
    if (k > 0) n += (size_t)k < sizeof(buf) - n ? (size_t)k : sizeof(buf) - n - 1;
  }
  void str(const char* key, const char* v) {  // value with newlines escaped
    add("%s=", key);
    for (const char* p = v; *p && n < sizeof(buf) - 4; ++p) {
      if (*p == '\n') { buf[n++] = '\\'; buf[n++] = 'n'; }
      else if (*p == '\\') { buf[n++] = '\\'; buf[n++] = '\\'; }
      else buf[n++] = *p;
    }
    buf[n++] = '\n';
  }
};

bool in_module(uintptr_t pc, uintptr_t* off) {
  Dl_info info;
  if (!pc || !dladdr((void*)pc, &info)) return false;
  if ((uintptr_t)info.dli_fbase != g_mod_base) return false;
  *off = pc - g_mod_base;
  return true;
}

// Collect return addresses inside the kernel module by walking frame pointers.
void add_pcs(Rep& r, uintptr_t first_pc, uintptr_t first_ret, uintptr_t rbp) {
  r.add("pcs=");
  int n = 0;
  uintptr_t off;
  if (first_pc && in_module(first_pc, &off)) { r.add("%lx,", (unsigned long)off); ++n; }
  if (first_ret && in_module(first_ret, &off)) { r.add("%lx,", (unsigned long)(off - 1)); ++n; }
  Fiber* f = (Fiber*)__emu_cur;
  for (int depth = 0; depth < 32 && rbp && f; ++depth) {
    if (rbp < (uintptr_t)f->stack_lo + PAGE || rbp + 16 > (uintptr_t)f->stack_hi || (rbp & 7)) break;
    uintptr_t ret = ((uintptr_t*)rbp)[1];
    if (in_module(ret, &off)) { r.add("%lx,", (unsigned long)(off - 1)); ++n; }
    uintptr_t next = ((uintptr_t*)rbp)[0];
    if (next <= rbp) break;
    rbp = next;
  }
  r.add("\n");
}

void add_where(Rep& r, const Fiber* f) {
  if (f) r.add("thread=%u,%u,%u\n", f->t.tidx.x, f->t.tidx.y, f->t.tidx.z);
  r.add("block=%u,%u,%u\n", __emu_bidx.x, __emu_bidx.y, __emu_bidx.z);
}

[[noreturn]] void finish_report(Rep& r) {
  if (g_ctl && __atomic_exchange_n(&g_ctl->reported, 1, __ATOMIC_SEQ_CST) == 0) {
    if (g_report_fd >= 0) {
      size_t off = 0;
      while (off < r.n) {
        ssize_t w = write(g_report_fd, r.buf + off, r.n - off);
        if (w <= 0) break;
        off += (size_t)w;
      }
    }
  }
  if (g_ctl) g_ctl->failed = 1;
  out_flush();
  _exit(3);
}

[[noreturn]] void fault_at(const char* kind, const char* msg, const Fiber* f, int line,
                           const char* extra = 0) {
  Rep r;
  r.add("kind=%s\n", kind);
  r.str("message", msg);
  add_where(r, f);
  if (line > 0) r.add("line=%d\n", line);
  if (extra) r.add("%s", extra);
  finish_report(r);
}

void unit3(char* b, size_t n, const Fiber* f) {
  snprintf(b, n, "(%u,%u,%u)", f->t.tidx.x, f->t.tidx.y, f->t.tidx.z);
}

// "lanes 0-15, 20" (a warp mask as a list of lanes: easier to read than hex)
const char* lanes_text(unsigned m, char* b, size_t n) {
  if (m == 0xffffffffu) { snprintf(b, n, "all 32 lanes"); return b; }
  if (!m) { snprintf(b, n, "no lane"); return b; }
  int k = snprintf(b, n, "lane%s ", __builtin_popcount(m) == 1 ? "" : "s");
  bool first = true;
  for (int l = 0; l < 32 && k > 0 && (size_t)k < n; ++l) {
    if (!(m >> l & 1)) continue;
    int e = l;
    while (e + 1 < 32 && (m >> (e + 1) & 1)) ++e;
    k += e > l ? snprintf(b + k, n - k, "%s%d-%d", first ? "" : ", ", l, e) : snprintf(b + k, n - k, "%s%d", first ? "" : ", ", l);
    first = false;
    l = e;
  }
  return b;
}

// ------------------------------------------------------------------ scheduling
[[noreturn]] void deadlock() {
  char msg[2048], a[64], b[64];
  // a warp collective some lanes never reached
  for (unsigned w = 0; w < g_nwarps; ++w) {
    Warp& W = g_warps[w];
    if (!W.arrived) continue;
    unsigned missing = W.mask & ~W.arrived;
    int waiting = __builtin_ctz(W.arrived), other = missing ? __builtin_ctz(missing) : -1;
    Fiber* fw = &g_fibers[w * 32 + waiting];
    unit3(a, sizeof a, fw);
    const char* why = "has not arrived";
    int oline = 0;
    if (other >= 0) {
      Fiber* fo = &g_fibers[w * 32 + other];
      unit3(b, sizeof b, fo);
      if (fo->state == DONE) why = "had already finished the kernel";
      else if (fo->state == AT_BARRIER) { why = "is waiting at __syncthreads()"; oline = fo->line; }
    } else snprintf(b, sizeof b, "?");
    char oline_s[32] = "";
    if (oline) snprintf(oline_s, sizeof oline_s, " at line %d", oline);
    char lm[160], la[160];
    snprintf(msg, sizeof msg,
             "%s at line %d was reached by only %d of the %d lanes of warp %u that must take part "
             "(%s must; %s arrived): e.g. thread %s waits there, but thread %s %s%s",
             op_name(W.kind), W.line, __builtin_popcount(W.arrived), __builtin_popcount(W.mask), w,
             lanes_text(W.mask, lm, sizeof lm), lanes_text(W.arrived, la, sizeof la), a, b, why, oline_s);
    fault_at("partial-warp-collective", msg, fw, W.line);
  }
  // a barrier that can never open
  int exited = -1, waiting = -1;
  for (unsigned i = 0; i < g_nthreads; ++i) {
    if (g_fibers[i].state == DONE && exited < 0) exited = i;
    if (g_fibers[i].state == AT_BARRIER && waiting < 0) waiting = i;
  }
  if (waiting >= 0) {
    Fiber* fw = &g_fibers[waiting];
    unit3(a, sizeof a, fw);
    unsigned ndone = g_done;
    if (exited >= 0) unit3(b, sizeof b, &g_fibers[exited]);
    snprintf(msg, sizeof msg,
             "__syncthreads() at line %d can never complete: %u of %u threads of the block wait there "
             "(e.g. thread %s) but %u threads finished the kernel without reaching it (e.g. thread %s). "
             "Every thread of a block must reach every __syncthreads()",
             fw->line, g_bar_arrived, g_nthreads, a, ndone, exited >= 0 ? b : "?");
    fault_at("divergent-barrier", msg, fw, fw->line);
  }
  fault_at("crash", "the block's threads are deadlocked (internal emulator state)", 0, 0);
}

void yield_to_sched(Fiber* f) { emu_switch(&f->sp, g_sched_sp); }

void fiber_start() {
  // all-ones (NaN) in every xmm register: an uninitialised float the compiler keeps in a
  // register that nothing wrote reads NaN, as one kept on the (0xFF-filled) stack does
  asm volatile(
      "pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\tpcmpeqd %%xmm2, %%xmm2\n\t"
      "pcmpeqd %%xmm3, %%xmm3\n\tpcmpeqd %%xmm4, %%xmm4\n\tpcmpeqd %%xmm5, %%xmm5\n\t"
      "pcmpeqd %%xmm6, %%xmm6\n\tpcmpeqd %%xmm7, %%xmm7\n\tpcmpeqd %%xmm8, %%xmm8\n\t"
      "pcmpeqd %%xmm9, %%xmm9\n\tpcmpeqd %%xmm10, %%xmm10\n\tpcmpeqd %%xmm11, %%xmm11\n\t"
      "pcmpeqd %%xmm12, %%xmm12\n\tpcmpeqd %%xmm13, %%xmm13\n\tpcmpeqd %%xmm14, %%xmm14\n\t"
      "pcmpeqd %%xmm15, %%xmm15" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
      "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  g_tramp(g_args);
  Fiber* f = (Fiber*)__emu_cur;
  f->state = DONE;
  ++g_done;
  emu_switch(&f->sp, g_sched_sp);
  __builtin_trap();
}

void reset_shared() {
  for (__emu_shared_base* s = g_shared_head; s; s = s->next) {
    memset(s->data, 0xff, s->bytes);
    if (s->shadow) memset(s->shadow, 0, s->count);
    s->escaped = 0;
  }
  if (g_smem_size) memset(g_smem, 0xff, g_smem_end - g_smem);
}

// cp.async state of a new block: no copy in flight (copies nobody waited for are dropped with
// the block that issued them, as its shared memory is)
void cp_reset_block() {
  for (unsigned i = 0; i < g_nthreads; ++i) g_fibers[i].cp.reset();
  if (__emu_cp_pending) {
    if (__emu_cp_dyn_shadow) memset(__emu_cp_dyn_shadow, 0, ((g_smem_size + 3) / 4) * sizeof(unsigned short));
    for (__emu_shared_base* s = g_shared_head; s; s = s->next)
      if (s->cp_shadow) memset(s->cp_shadow, 0, ((s->bytes + 3) / 4) * sizeof(unsigned short));
  }
  __emu_cp_pending = __emu_cp_pending_other = 0;
}

// Make [fill_lo, stack_hi) all 0xFF again for the fiber's next start, touching only what its
// run can have changed: everything below the lowest non-0xFF byte is still 0xFF.
void refill_stack(Fiber& f) {
  char* hi = f.stack_hi;
  uintptr_t min_sp = f.min_sp;
  f.min_sp = (uintptr_t)hi;
  const uint64_t* p = (const uint64_t*)f.fill_lo;
  const uint64_t* end = (const uint64_t*)hi;
  while (p < end && *p == ~0ull) ++p;
  char* dirty = (char*)p;
  if (dirty == f.fill_lo || min_sp < (uintptr_t)f.fill_lo + 256) {
    // it reached the bottom of its filled part (or its stack pointer went below it, red
    // zone included) and may have used more: fill twice as much, at least 1 KiB below the
    // deepest stack pointer seen
    size_t have = (size_t)(hi - f.fill_lo), used = (size_t)(hi - (char*)min_sp) + 1024;
    size_t want = 2 * have > used ? 2 * have : used;
    want = (want + 255) / 256 * 256;
    if (want > STACK - PAGE) want = STACK - PAGE;
    f.fill_lo = hi - want;
    dirty = f.fill_lo;
  }
  memset(dirty, 0xff, (size_t)(hi - dirty));
}

// a keyed probe run's matrix instructions waiting for the runner's parent (below)
bool tc_waiting();
void tc_flush();

void run_block(unsigned long long b) {
  __emu_bidx.x = (unsigned)(b % __emu_gdim.x);
  __emu_bidx.y = (unsigned)((b / __emu_gdim.x) % __emu_gdim.y);
  __emu_bidx.z = (unsigned)(b / ((unsigned long long)__emu_gdim.x * __emu_gdim.y));
  reset_shared();
  cp_reset_block();
  if (g_tr_on) tr_block_start();
  for (unsigned i = 0; i < g_nthreads; ++i) {
    Fiber& f = g_fibers[i];
    f.state = RUNNABLE;
    f.line = 0;
    uintptr_t top = (uintptr_t)f.stack_hi & ~(uintptr_t)15;
    uintptr_t* sp = (uintptr_t*)(top - 64);
    // r15 r14 r13 r12 rbx: all ones, like the rest of the stack (once popped, these slots
    // lie where the kernel's first locals go); rbp 0 ends the frame-pointer chain
    sp[0] = sp[1] = sp[2] = sp[3] = sp[4] = ~(uintptr_t)0;
    sp[5] = 0;
    sp[6] = (uintptr_t)&fiber_start;
    sp[7] = 0;
    f.sp = sp;
  }
  for (unsigned w = 0; w < g_nwarps; ++w) { g_warps[w].arrived = 0; }
  g_done = 0;
  g_bar_arrived = 0;
  g_bar_red[0] = 0; g_bar_red[1] = 1; g_bar_red[2] = 0;
  // The reversed run is also greedy: it resumes the first runnable thread in its order each time, so a
  // warp whose collective (ldmatrix, mma.sync, shuffle) completes runs on to its next barrier before the
  // other warps move. Round robin keeps the warps in step at every collective, which hides a warp that
  // overwrites shared memory another warp has still to read (no __syncthreads() before the next tile).
  const bool greedy = g_order_mode == 1;
  while (g_done < g_nthreads) {
    unsigned resumed = 0;
    for (unsigned k = 0; k < g_nthreads; ++k) {
      Fiber* f = &g_fibers[g_order[k]];
      if (f->state != RUNNABLE) continue;
      __emu_cur = &f->t;
      ++resumed;
      emu_switch(&g_sched_sp, f->sp);
      if ((uintptr_t)f->sp < f->min_sp) f->min_sp = (uintptr_t)f->sp;
      if (f->state == DONE) refill_stack(*f);
      if (greedy) k = (unsigned)-1;  // from the first thread in order again
    }
    __emu_cur = 0;
    if (tc_waiting() && !resumed) {  // every thread waits: its warp's instruction, a barrier, a collective
      tc_flush();
      continue;
    }
    if (!resumed && g_done < g_nthreads) deadlock();
  }
  if (g_tr_on) tr_block_end();
}

// ------------------------------------------------------------------ signals
void on_signal(int sig, siginfo_t* si, void* uc_) {
  ucontext_t* uc = (ucontext_t*)uc_;
  Fiber* f = (Fiber*)__emu_cur;
  uintptr_t addr = (uintptr_t)si->si_addr;
  uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t rsp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  uintptr_t rbp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  bool write_access = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
  const char* rw = write_access ? "write" : "read";
  Rep r;
  char msg[1024];
  if (sig == SIGSEGV || sig == SIGBUS) {
    // argument buffers: exact hit in a guard page, else the nearest buffer within 64 MiB
    const Buffer* best = 0;
    uintptr_t bestd = (uintptr_t)64 << 20;
    for (const Buffer& B : g_bufs) {
      uintptr_t d = addr < (uintptr_t)B.start ? (uintptr_t)B.start - addr
                  : addr >= (uintptr_t)B.end ? addr - (uintptr_t)B.end + 1 : 0;
      if (d < bestd) { bestd = d; best = &B; }
    }
    bool in_smem = g_smem_region && addr >= (uintptr_t)g_smem_region &&
                   addr < (uintptr_t)g_smem_region + g_smem_region_len;
    bool in_stack = f && addr >= (uintptr_t)f->stack_lo && addr < (uintptr_t)f->stack_lo + PAGE;
    if (in_smem) {
      long long off = (long long)(addr - (uintptr_t)g_smem);
      snprintf(msg, sizeof msg,
               "out-of-bounds %s of dynamic shared memory (extern __shared__): byte offset %lld, but the "
               "launch has shared_mem=%zu bytes",
               rw, off, g_smem_size);
      r.add("kind=shared-out-of-bounds\n");
      r.str("message", msg);
      r.add("argument=extern __shared__\nindex=%lld\nsize=%zu\n", off, g_smem_size);
    } else if (in_stack) {
      r.add("kind=crash\n");
      r.str("message", "stack overflow in a CUDA thread (a very large local array, or deep/infinite recursion)");
    } else if (best) {
      long long idx = (long long)((intptr_t)(addr - (uintptr_t)best->start));
      idx = idx >= 0 ? idx / (long long)best->itemsize : -((-idx + best->itemsize - 1) / (long long)best->itemsize);
      long long n = (long long)(best->nbytes / best->itemsize);
      snprintf(msg, sizeof msg,
               "out-of-bounds %s of argument '%s': element index %lld, but '%s' has %lld elements "
               "(valid indices 0..%lld)",
               rw, best->name.c_str(), idx, best->name.c_str(), n, n - 1);
      r.add("kind=out-of-bounds\n");
      r.str("message", msg);
      r.add("argument=%s\nindex=%lld\nsize=%lld\n", best->name.c_str(), idx, n);
    } else {
      snprintf(msg, sizeof msg, "invalid memory %s at address %p%s", rw, (void*)addr,
               addr < 65536 ? " (a null or uninitialised pointer?)" : " (not inside any argument buffer)");
      r.add("kind=crash\n");
      r.str("message", msg);
    }
  } else {
    const char* what = sig == SIGFPE ? "arithmetic exception (integer division by zero?)"
                     : sig == SIGILL ? "illegal instruction (reached code marked unreachable?)"
                     : sig == SIGABRT ? "abort() was called"
                     : sig == SIGTRAP ? "trap" : "fatal signal";
    snprintf(msg, sizeof msg, "%s (signal %d)", what, sig);
    r.add("kind=crash\n");
    r.str("message", msg);
  }
  add_where(r, f);
  add_pcs(r, rip, f && rsp ? *(uintptr_t*)rsp : 0, rbp);
  finish_report(r);
}

void install_handlers() {
  static char altstack[1 << 16];
  stack_t ss;
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  ss.ss_flags = 0;
  sigaltstack(&ss, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP};
  for (int s : sigs) sigaction(s, &sa, 0);
}

// ------------------------------------------------------------------ input
struct Reader {
  const char* p;
  const char* end;
  template <class T> T get() {
    T v;
    if (p + sizeof(T) > end) { fprintf(stderr, "emu_runner: truncated input\n"); exit(2); }
    memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  std::string str() {
    unsigned n = get<unsigned>();
    if (p + n > end) { fprintf(stderr, "emu_runner: truncated input\n"); exit(2); }
    std::string s(p, n);
    p += n;
    return s;
  }
};

std::vector<char> slurp(const char* path) {
  std::vector<char> v;
  FILE* fp = fopen(path, "rb");
  if (!fp) { perror(path); exit(2); }
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, fp)) > 0) v.insert(v.end(), buf, buf + n);
  fclose(fp);
  return v;
}

char* map_or_die(size_t len, int flags) {
  void* m = mmap(0, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) { perror("emu_runner: mmap"); exit(2); }
  return (char*)m;
}

const unsigned char CANARY = 0xA5;

int worker_main() {
  install_handlers();
  // fiber stacks, each with a guard page at its low end
  g_fibers.assign(g_nthreads, Fiber());
  g_warps.assign(g_nwarps, Warp());
  size_t per = STACK + PAGE;
  g_stacks_len = per * g_nthreads;
  g_stacks = map_or_die(g_stacks_len, MAP_PRIVATE);
  for (unsigned i = 0; i < g_nthreads; ++i) {
    Fiber& f = g_fibers[i];
    f.stack_lo = g_stacks + per * i;
    f.stack_hi = f.stack_lo + per;
    mprotect(f.stack_lo, PAGE, PROT_NONE);
    memset(f.stack_hi - (g_fill_init > FILL_FIRST ? g_fill_init : FILL_FIRST), 0xff,
           g_fill_init > FILL_FIRST ? g_fill_init : FILL_FIRST);  // fresh pages
    f.fill_lo = f.stack_hi - g_fill_init;
    f.min_sp = (uintptr_t)f.stack_hi;
    f.t.tid = (int)i;
    f.t.lane = (int)(i % 32);
    f.t.warp = (int)(i / 32);
    f.t.tidx.x = i % __emu_bdim.x;
    f.t.tidx.y = (i / __emu_bdim.x) % __emu_bdim.y;
    f.t.tidx.z = i / (__emu_bdim.x * __emu_bdim.y);
  }
  for (unsigned w = 0; w < g_nwarps; ++w) {
    unsigned n = g_nthreads - w * 32 >= 32 ? 32 : g_nthreads - w * 32;
    g_warps[w].exist = n == 32 ? 0xffffffffu : ((1u << n) - 1);
  }
  // the order a block's threads are resumed in (a race shows as a result that depends on it)
  g_order.clear();
  for (unsigned k = 0; k < g_nwarps; ++k) {
    unsigned w = g_order_mode == 1 || g_order_mode == 3 ? g_nwarps - 1 - k : k;
    unsigned lo = w * 32, hi = lo + 32 < g_nthreads ? lo + 32 : g_nthreads;
    bool lanes_reversed = g_order_mode == 1 || g_order_mode == 2;
    for (unsigned t = lo; t < hi; ++t) g_order.push_back(lanes_reversed ? hi - 1 - (t - lo) : t);
  }
  // dynamic shared memory: guard page before and after
  size_t rounded = (g_smem_size + PAGE - 1) / PAGE * PAGE;
  g_smem_region_len = rounded + 2 * PAGE;
  g_smem_region = map_or_die(g_smem_region_len, MAP_PRIVATE);
  mprotect(g_smem_region, PAGE, PROT_NONE);
  mprotect(g_smem_region + PAGE + rounded, PAGE, PROT_NONE);
  g_smem_end = g_smem_region + PAGE + rounded;
  g_smem = g_smem_end - (g_smem_size + 15) / 16 * 16;
  // cp.async: a counter per 4-byte granule of dynamic shared memory (+2: reads past the end)
  __emu_cp_dyn_shadow = (unsigned short*)calloc((g_smem_size + 3) / 4 + 2, sizeof(unsigned short));
  __emu_cp_dyn_base = g_smem;
  __emu_cp_dyn_bytes = g_smem_size;
  for (;;) {
    if (g_ctl->failed) break;
    unsigned long long b = __atomic_fetch_add(&g_ctl->next_block, 1ull, __ATOMIC_SEQ_CST);
    if (b >= g_nblocks) break;
    run_block(g_order_mode == 1 ? g_nblocks - 1 - b : b);
  }
  if (g_tr_on && g_tr_path) tr_write(g_tr_path);
  if (g_out_truncated) {
    const char* note = "\n[emulator: printf output truncated at 4 MiB]\n";
    if (g_out_len + strlen(note) < sizeof g_out) { memcpy(g_out + g_out_len, note, strlen(note)); g_out_len += strlen(note); }
  }
  out_flush();
  return 0;
}

}  // namespace

#include "traffic.h"

// ------------------------------------------------------------------ cp.async (cuda_pipeline.h)
// __pipeline_memcpy_async / __pipeline_commit / __pipeline_wait_prior with the ordering a GPU
// guarantees and no more, per thread. A copy reads its source when it is issued (a GPU reads
// it at some time between issue and completion: inputs do not change meanwhile), makes its
// destination read as poison (0xFF bytes: NaN as half, float, double) and joins the thread's
// open batch; __pipeline_commit closes the batch into a commit group (an empty one too);
// __pipeline_wait_prior(n) lands (writes) the copies of every committed group of the thread
// except the n most recent. A copy its thread never waits for never lands: a thread may exit
// with copies in flight (legal on a GPU: empty groups, tiles nobody reads), but no thread can
// legally read their bytes. Reads and writes the emulator sees (wmma load/store, checked
// __shared__ arrays) of bytes a copy has not landed on are reported, naming the copy.

namespace {
// Where a copy's destination lives: its first granule counter (0 if unknown), and whether
// it counts as "other" (a static __shared__ array).
struct CpPlace { unsigned short* shadow; bool other; __emu_shared_base* arr; long long off; };

__emu_shared_base* static_array_of(uintptr_t p) {
  for (__emu_shared_base* s = g_shared_head; s; s = s->next)
    if (p >= (uintptr_t)s->data && p < (uintptr_t)s->data + s->bytes) return s;
  return 0;
}

const Buffer* buffer_of(uintptr_t p) {
  for (const Buffer& B : g_bufs)
    if (p >= (uintptr_t)B.start && p < (uintptr_t)B.end) return &B;
  return 0;
}

void land(CpCopy& c) {
  for (unsigned i = 0; i < c.size; ++i) c.dst[i] = c.data[i];
  if (c.shadow)
    for (unsigned g = 0; g < c.size / 4; ++g) --c.shadow[g];
  if (c.other) --__emu_cp_pending_other;
  --__emu_cp_pending;
}

void land_until(CpThread& t, unsigned long long group_limit) {
  while (t.head < t.q.size() && t.q[t.head].group < group_limit) land(t.q[t.head++]);
  if (t.head == t.q.size()) { t.q.clear(); t.head = 0; }
}

// a misuse of __pipeline_memcpy_async itself; `hint` replaces the kind's usual one
void cp_fault(const char* kind, const char* msg, int line, const char* extra = 0, const char* hint = 0) {
  char more[512];
  snprintf(more, sizeof more, "%s%s%s%s", extra ? extra : "", hint ? "hint=" : "", hint ? hint : "", hint ? "\n" : "");
  fault_at(kind, msg, (Fiber*)__emu_cur, line, more);
}
const char* CP_USAGE = "__pipeline_memcpy_async(dst, src, bytes) copies 4, 8 or 16 bytes (16: 8 halves, the fastest) "
                       "from global memory (src) into shared memory (dst), both addresses multiples of bytes.";

void who(char* b, size_t n, const Fiber* f, const Fiber* me) {
  char u[64];
  unit3(u, sizeof u, f);
  snprintf(b, n, f == me ? "this thread %s" : "thread %s", u);
}
}  // namespace

extern "C" {

void __emu_cp_async(void* dst, const void* src, unsigned long long size, unsigned long long zfill, int line) {
  Fiber* f = (Fiber*)__emu_cur;
  char msg[1024], extra[256];
  if (size != 4 && size != 8 && size != 16) {
    snprintf(msg, sizeof msg, "__pipeline_memcpy_async copies 4, 8 or 16 bytes (its size_and_align), not %llu", size);
    cp_fault("async-copy", msg, line, 0, CP_USAGE);
  }
  if (zfill > size) {
    snprintf(msg, sizeof msg, "__pipeline_memcpy_async: zfill (%llu) is larger than size_and_align (%llu)", zfill, size);
    cp_fault("async-copy", msg, line, 0, CP_USAGE);
  }
  uintptr_t d = (uintptr_t)dst, sp = (uintptr_t)src;
  CpPlace pl{0, false, 0, 0};
  bool in_dyn = g_smem_region && d >= (uintptr_t)g_smem_region && d < (uintptr_t)g_smem_region + g_smem_region_len;
  if (in_dyn) {  // dynamic shared memory or its guard pages
    pl.off = (long long)(d - (uintptr_t)g_smem);
    if (pl.off < 0 || (unsigned long long)pl.off + size > g_smem_size) {
      snprintf(msg, sizeof msg, "__pipeline_memcpy_async writes %llu bytes at dynamic shared memory (extern __shared__) "
               "byte offset %lld, outside it: the launch has shared_mem=%zu bytes", size, pl.off, g_smem_size);
      snprintf(extra, sizeof extra, "argument=extern __shared__\nindex=%lld\nsize=%zu\n", pl.off, g_smem_size);
      cp_fault("shared-out-of-bounds", msg, line, extra);
    }
    pl.shadow = __emu_cp_dyn_shadow + (pl.off >> 2);
  } else if ((pl.arr = static_array_of(d)) != 0) {
    pl.off = (long long)(d - (uintptr_t)pl.arr->data);
    if ((unsigned long long)pl.off + size > pl.arr->bytes) {
      snprintf(msg, sizeof msg, "__pipeline_memcpy_async writes %llu bytes at byte offset %lld of __shared__ '%s', "
               "past its end (%llu bytes)", size, pl.off, pl.arr->name, pl.arr->bytes);
      snprintf(extra, sizeof extra, "index=%lld\nsize=%llu\n", pl.off, pl.arr->bytes);
      cp_fault("shared-out-of-bounds", msg, line, extra);
    }
    if (!pl.arr->cp_shadow)  // runner-owned, kept for the process (cleared per block)
      pl.arr->cp_shadow = (unsigned short*)calloc((pl.arr->bytes + 3) / 4 + 2, sizeof(unsigned short));
    pl.shadow = pl.arr->cp_shadow + (pl.off >> 2);
    pl.other = true;
  } else if (const Buffer* B = buffer_of(d)) {
    snprintf(msg, sizeof msg, "__pipeline_memcpy_async copies from global into SHARED memory, but its destination "
             "points into argument '%s' (global memory): pass a pointer into a __shared__ array", B->name.c_str());
    cp_fault("async-copy", msg, line, 0, CP_USAGE);
  } else if (f && d >= (uintptr_t)f->stack_lo && d < (uintptr_t)f->stack_hi) {
    cp_fault("async-copy", "__pipeline_memcpy_async copies from global into SHARED memory, but its destination is a "
             "local variable of the thread: pass a pointer into a __shared__ array", line, 0, CP_USAGE);
  }  // else: memory the runner cannot place (a __shared__ array of an unchecked build): no read checks
  if (d & (size - 1)) {
    snprintf(msg, sizeof msg, "misaligned __pipeline_memcpy_async: a %llu-byte copy needs a destination address that is "
             "a multiple of %llu, but it is %llu bytes past one%s", size, size, (unsigned long long)(d & (size - 1)),
             in_dyn || pl.arr ? " (check the shared-memory offsets and the padded row length)" : "");
    cp_fault("misaligned-address", msg, line);
  }
  const Buffer* SB = buffer_of(sp);
  unsigned long long soff = SB ? (unsigned long long)(sp - (uintptr_t)SB->start) : (unsigned long long)sp;
  if (soff & (size - 1)) {  // a GPU allocation starts 256-byte aligned: judge the offset into it
    if (SB)
      snprintf(msg, sizeof msg, "misaligned __pipeline_memcpy_async: a %llu-byte copy needs a source address that is a "
               "multiple of %llu, but it starts at byte %llu of '%s' (element %llu): check the column offset and the "
               "row stride (the leading dimension times the element size must be a multiple of %llu)",
               size, size, soff, SB->name.c_str(), soff / SB->itemsize, size);
    else
      snprintf(msg, sizeof msg, "misaligned __pipeline_memcpy_async: a %llu-byte copy needs a source address that is a "
               "multiple of %llu", size, size);
    cp_fault("misaligned-address", msg, line);
  }
  if (g_tr_on) {  // memory traffic: the copy reads global memory and writes shared memory
    tr_access(sp, (unsigned)size, 0, (uintptr_t)__builtin_return_address(0));
    tr_access(d, (unsigned)size, 1, (uintptr_t)__builtin_return_address(0) + 1);
  }
  CpThread& t = f->cp;
  t.q.emplace_back();
  CpCopy& c = t.q.back();
  c.dst = (unsigned char*)dst;
  c.shadow = pl.shadow;
  c.group = t.committed;
  c.nwaits = t.nwaits;
  c.size = (unsigned)size;
  c.line = line;
  c.other = pl.other;
  const unsigned char* s = (const unsigned char*)src;
  unsigned n = (unsigned)(size - zfill);
  for (unsigned i = 0; i < n; ++i) c.data[i] = s[i];  // an out-of-bounds source faults here
  for (unsigned i = n; i < size; ++i) c.data[i] = 0;
  for (unsigned i = 0; i < size; ++i) c.dst[i] = 0xff;  // undefined until it lands
  if (c.shadow)
    for (unsigned g = 0; g < size / 4; ++g) ++c.shadow[g];
  if (c.other) ++__emu_cp_pending_other;
  ++__emu_cp_pending;
}

void __emu_cp_commit(void) { ++((Fiber*)__emu_cur)->cp.committed; }

void __emu_cp_wait(unsigned long long prior, int line) {
  CpThread& t = ((Fiber*)__emu_cur)->cp;
  land_until(t, t.committed > prior ? t.committed - prior : 0);
  ++t.nwaits;
  t.wait_prior = prior;
  t.wait_committed = t.committed;
  t.wait_line = line;
}

// __pipeline_arrive_on(barrier): the copies are then tracked by an mbarrier, which the
// emulator does not model: they land at once (all of this thread's, committed or not).
void __emu_cp_arrive(int line) {
  (void)line;
  land_until(((Fiber*)__emu_cur)->cp, ~0ull);
}

void __emu_cp_touch(const void* p, unsigned long long bytes, int write, int line) {
  Fiber* me = (Fiber*)__emu_cur;
  uintptr_t a = (uintptr_t)p;
  // which granules, of which memory
  const unsigned short* sh = 0;
  long long off = 0;
  const char* where_name = "extern __shared__";
  if (g_smem_size && a >= (uintptr_t)g_smem && a < (uintptr_t)g_smem + g_smem_size) {
    off = (long long)(a - (uintptr_t)g_smem);
    sh = __emu_cp_dyn_shadow;
  } else if (__emu_shared_base* s = static_array_of(a)) {
    if (!s->cp_shadow) return;
    off = (long long)(a - (uintptr_t)s->data);
    sh = s->cp_shadow;
    where_name = s->name;
  } else {
    return;
  }
  bool hit = false;
  for (long long g = off >> 2; g <= (off + (long long)bytes - 1) >> 2; ++g) hit |= sh[g] != 0;
  if (!hit) return;
  // the copy: search every thread's copies in flight
  const Fiber* owner = 0;
  const CpCopy* cc = 0;
  for (unsigned i = 0; i < g_nthreads && !cc; ++i) {
    const CpThread& t = g_fibers[i].cp;
    for (size_t k = t.head; k < t.q.size(); ++k) {
      const CpCopy& c = t.q[k];
      if ((uintptr_t)c.dst < a + bytes && a < (uintptr_t)c.dst + c.size) { owner = &g_fibers[i]; cc = &c; break; }
    }
  }
  char msg[2048], place[256], ow[96], state[768];
  if (sh == __emu_cp_dyn_shadow)
    snprintf(place, sizeof place, "dynamic shared memory (extern __shared__) byte offset %lld", off);
  else
    snprintf(place, sizeof place, "__shared__ '%s' byte offset %lld", where_name, off);
  if (!cc) {
    snprintf(msg, sizeof msg, "%s of shared memory written by a cp.async that has not been waited for "
             "(__pipeline_wait_prior): %s", write ? "write" : "read", place);
  } else {
    const CpThread& t = owner->cp;
    who(ow, sizeof ow, owner, me);
    if (t.nwaits == cc->nwaits && !t.wait_line)
      snprintf(state, sizeof state, "%s has not called __pipeline_wait_prior yet%s", ow,
               cc->group >= t.committed ? " (nor __pipeline_commit since issuing it)" : "");
    else if (t.nwaits == cc->nwaits)
      snprintf(state, sizeof state, "%s issued it after its last __pipeline_wait_prior (line %d), so nothing has "
               "waited for it yet: a copy into a buffer that is still being read, or a read before the wait for its "
               "tile", ow, t.wait_line);
    else if (cc->group >= t.wait_committed)
      snprintf(state, sizeof state, "%s had not committed it (__pipeline_commit) before its last wait "
               "(__pipeline_wait_prior at line %d), so that wait did not cover it", ow, t.wait_line);
    else {
      unsigned long long later = t.wait_committed - 1 - cc->group;
      snprintf(state, sizeof state, "the last wait of %s, __pipeline_wait_prior(%llu) at line %d, left it in flight: "
               "%llu commit group(s) had been committed after its group by then, so landing it needed "
               "__pipeline_wait_prior(%llu) or less there", ow, t.wait_prior, t.wait_line, later, later);
    }
    snprintf(msg, sizeof msg,
             "%s of shared memory written by a cp.async that has not been waited for (__pipeline_wait_prior): "
             "%s is the destination of the %u-byte __pipeline_memcpy_async at line %d, still in flight: %s. "
             "%s. __pipeline_wait_prior(n) lands a thread's own copies except its n most recent commit groups; "
             "a __syncthreads() after every thread's wait makes the whole tile visible to the block",
             write ? "write" : "read", place, cc->size, cc->line, state,
             write ? "When it lands it overwrites what is written here"
                   : "Its bytes are undefined until it lands (here they read as NaN)");
  }
  Rep r;
  r.add("kind=async-copy\n");
  r.str("message", msg);
  add_where(r, me);
  if (line > 0) r.add("line=%d\n", line);
  r.add("argument=%s\nindex=%lld\n", where_name, off);
  add_pcs(r, 0, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_frame_address(0));
  finish_report(r);
}

}  // extern "C"

// ------------------------------------------------------------------ ABI used by kernel.so
extern "C" {

void __emu_syncthreads(int line) {
  Fiber* f = (Fiber*)__emu_cur;
  f->state = AT_BARRIER;
  f->line = line;
  if (g_bar_arrived == 0) g_bar_line = line;
  if (++g_bar_arrived == g_nthreads) {
    int other = -1;
    for (unsigned i = 0; i < g_nthreads; ++i)
      if (g_fibers[i].line != line) { other = (int)i; break; }
    if (other >= 0) {
      char msg[512], a[64], b[64];
      unit3(a, sizeof a, f);
      unit3(b, sizeof b, &g_fibers[other]);
      snprintf(msg, sizeof msg,
               "threads of one block wait at different __syncthreads(): thread %s at line %d, thread %s at "
               "line %d. A __syncthreads() inside a branch must be reached by every thread of the block",
               a, line, b, g_fibers[other].line);
      fault_at("divergent-barrier", msg, f, line);
    }
    g_bar_arrived = 0;
    for (unsigned i = 0; i < g_nthreads; ++i) g_fibers[i].state = RUNNABLE;
    return;
  }
  yield_to_sched(f);
}

int __emu_syncthreads_red(int line, int op, int pred) {
  unsigned gen = g_bar_gen;
  g_bar_red[0] += pred ? 1 : 0;
  g_bar_red[1] &= pred ? 1 : 0;
  g_bar_red[2] |= pred ? 1 : 0;
  if (g_bar_arrived + 1 == g_nthreads) {
    memcpy(g_bar_result[gen & 1], g_bar_red, sizeof g_bar_red);
    g_bar_red[0] = 0; g_bar_red[1] = 1; g_bar_red[2] = 0;
    ++g_bar_gen;
  }
  __emu_syncthreads(line);
  return g_bar_result[gen & 1][op];
}

void __emu_warp_op(int kind, unsigned mask, int line, void* payload, __emu_combine_fn fn) {
  Fiber* f = (Fiber*)__emu_cur;
  Warp& W = g_warps[f->t.warp];
  unsigned me = 1u << f->t.lane;
  unsigned parts = (mask & W.exist) | me;
  if (W.arrived == 0) {
    W.mask = parts; W.kind = kind; W.line = line; W.fn = fn;
  } else if (W.mask != parts || W.kind != kind) {
    char msg[768], a[64], lm[160], la[160], lp[160];
    unit3(a, sizeof a, f);
    snprintf(msg, sizeof msg,
             "lanes of warp %d reached different warp collectives: %s at line %d (for %s; %s waiting) and "
             "thread %s at %s at line %d (for %s)",
             f->t.warp, op_name(W.kind), W.line, lanes_text(W.mask, lm, sizeof lm), lanes_text(W.arrived, la, sizeof la),
             a, op_name(kind), line, lanes_text(parts, lp, sizeof lp));
    fault_at("partial-warp-collective", msg, f, line);
  }
  // a participant that already exited can never arrive
  unsigned base = (unsigned)f->t.warp * 32;
  for (unsigned m = parts; m; m &= m - 1) {
    unsigned l = __builtin_ctz(m);
    if (g_fibers[base + l].state == DONE) {
      char msg[640], a[64], b[64], lp[160];
      unit3(a, sizeof a, f);
      unit3(b, sizeof b, &g_fibers[base + l]);
      snprintf(msg, sizeof msg,
               "%s at line %d (for %s) needs lane %u of warp %d, but that thread %s had already finished "
               "the kernel; thread %s is waiting for it",
               op_name(kind), line, lanes_text(parts, lp, sizeof lp), l, f->t.warp, b, a);
      fault_at("partial-warp-collective", msg, f, line);
    }
  }
  W.payloads[f->t.lane] = payload;
  W.arrived |= me;
  if (W.arrived == W.mask) {
    if (W.fn) W.fn(W.payloads, W.mask);
    for (unsigned m = W.mask; m; m &= m - 1) g_fibers[base + __builtin_ctz(m)].state = RUNNABLE;
    W.arrived = 0;
    return;
  }
  f->state = AT_WARP;
  f->line = line;
  yield_to_sched(f);
}

void __emu_tensor_op(unsigned m, unsigned n, unsigned k) {
  unsigned key = m << 20 | n << 10 | k;
  while (__atomic_exchange_n(&g_ctl->tc_lock, 1, __ATOMIC_ACQUIRE)) {}
  for (int i = 0; i < TC_SHAPES; ++i)
    if (g_ctl->tc_shape[i] == key || g_ctl->tc_shape[i] == 0) {
      g_ctl->tc_shape[i] = key;
      ++g_ctl->tc_count[i];
      break;
    }
  __atomic_store_n(&g_ctl->tc_lock, 0, __ATOMIC_RELEASE);
}

unsigned __emu_activemask(void) {
  Fiber* f = (Fiber*)__emu_cur;
  Warp& W = g_warps[f->t.warp];
  unsigned base = (unsigned)f->t.warp * 32, m = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((W.exist >> l & 1) && g_fibers[base + l].state != DONE) m |= 1u << l;
  return m;
}

void* __emu_dyn_smem(void) { return g_smem; }
unsigned long long __emu_dyn_smem_size(void) { return g_smem_size; }

void __emu_region_of(const void* p, __emu_region* r) {
  uintptr_t a = (uintptr_t)p;
  memset(r, 0, sizeof *r);
  if (const Buffer* B = buffer_of(a)) {
    r->kind = 1; r->name = B->name.c_str(); r->base = B->start; r->bytes = B->nbytes;
  } else if (__emu_shared_base* s = static_array_of(a)) {
    r->kind = 2; r->name = s->name; r->base = (const char*)s->data; r->bytes = s->bytes; r->arr = s;
  } else if (g_smem_region && a >= (uintptr_t)g_smem_region && a < (uintptr_t)g_smem_region + g_smem_region_len) {
    r->kind = 3; r->name = "extern __shared__"; r->base = g_smem; r->bytes = g_smem_size;
  } else if (Fiber* f = (Fiber*)__emu_cur) {
    if (a >= (uintptr_t)f->stack_lo && a < (uintptr_t)f->stack_hi) { r->kind = 4; r->name = "a local variable"; }
  }
}

// Vector loads and stores (float4, int2, half2 ...): a module whose source uses vector types is
// built with g++ -fsanitize=alignment, which calls this for an access its type's alignment
// forbids (GCC's TypeMismatchData layout). A GPU faults there ("misaligned address"). The
// address is judged from the start of its allocation (argument buffers here start wherever
// their end lands on a page; a GPU allocation starts 256-byte aligned).
struct UbsanLoc { const char* file; unsigned line, column; };
struct UbsanType { unsigned short kind, info; char name[1]; };
struct UbsanMismatch { UbsanLoc loc; const UbsanType* type; unsigned char log_alignment, check_kind; };
static void ubsan_mismatch(UbsanMismatch* d, uintptr_t ptr) {
  if (!ptr || !d->log_alignment) return;
  unsigned long long align = 1ull << d->log_alignment;
  __emu_region reg;
  __emu_region_of((const void*)ptr, &reg);
  unsigned long long off = reg.kind == 1 || reg.kind == 3 ? (unsigned long long)(ptr - (uintptr_t)reg.base) : ptr;
  if (off % align == 0) return;
  char msg[700], at[200] = "";
  if (reg.kind == 1) snprintf(at, sizeof at, " into argument '%s' at byte %llu", reg.name, off);
  else if (reg.kind == 2 || reg.kind == 3) snprintf(at, sizeof at, " into %s%s at byte %llu",
      reg.kind == 3 ? "dynamic shared memory (extern __shared__)" : "__shared__ ", reg.kind == 3 ? "" : reg.name,
      (unsigned long long)(ptr - (uintptr_t)reg.base));
  const char* what = d->check_kind == 1 ? "store" : d->check_kind == 0 ? "load" : "access";
  snprintf(msg, sizeof msg, "misaligned %s of a %s%s: a %llu-byte access needs an address that is a multiple of "
           "%llu bytes, but this one is %llu bytes past one (a GPU faults with \"misaligned address\"): check the "
           "offset you cast to a wider pointer and that the row length keeps every row a multiple of %llu bytes",
           what, d->type ? d->type->name : "value", at, align, align, off % align, align);
  Rep r;
  r.add("kind=misaligned-address\n");
  r.str("message", msg);
  add_where(r, (Fiber*)__emu_cur);
  if (reg.kind == 1) r.add("argument=%s\nindex=%llu\n", reg.name, off / (buffer_of(ptr) ? buffer_of(ptr)->itemsize : 1));
  if (d->loc.line) r.add("line=%u\n", d->loc.line);
  finish_report(r);
}
void __ubsan_handle_type_mismatch_v1(UbsanMismatch* d, uintptr_t ptr) { ubsan_mismatch(d, ptr); }
void __ubsan_handle_type_mismatch_v1_abort(UbsanMismatch* d, uintptr_t ptr) { ubsan_mismatch(d, ptr); }

void __emu_register_shared(__emu_shared_base* s) {
  s->next = g_shared_head;
  g_shared_head = s;
}

void __emu_fault(const char* kind, const char* msg, const char* arg, long long index, long long size, int line) {
  Rep r;
  r.add("kind=%s\n", kind);
  r.str("message", msg);
  add_where(r, (Fiber*)__emu_cur);
  if (arg) {
    r.str("argument", arg);
    r.add("index=%lld\nsize=%lld\n", index, size);
  }
  if (line > 0) r.add("line=%d\n", line);
  add_pcs(r, 0, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_frame_address(0));
  finish_report(r);
}

int __emu_printf(const char* __restrict fmt, ...) {
  char tmp[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return n;
  size_t len = (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1;
  if (g_out_total + len > OUT_CAP) { g_out_truncated = true; return n; }
  g_out_total += len;
  if (g_out_len + len > sizeof g_out) out_flush();
  memcpy(g_out + g_out_len, tmp, len);
  g_out_len += len;
  return n;
}

long long __emu_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

}  // extern "C"

// ---------------------------------------------------------------- keyed probe runs
// The key reaches this process's parent only (on stdin, read after the workers started): a worker
// runs the kernel natively, so whatever it holds a kernel can read, and whatever it can call (a
// function, its socket) a kernel can call too. So the parent executes every matrix instruction of a
// keyed run whole, operands in and D out, and counts it: all a worker can ask of it is instructions
// of the shapes the hardware has, each executed and counted, never a product's flip alone.
// A block's instructions go in batches, one round trip each: a warp whose instruction is out waits
// (AT_TC) while the block's other threads run to theirs, and the scheduler sends the batch when no
// thread of the block can run (run_block), or when it is full.
static const unsigned TC_BATCH = 64;  // instructions per round trip at most
static const size_t TC_MAX_BYTES = 16 + 2 * (512 + 512) * 8 + 256 * 8;  // one instruction's request at most
static int g_flip_fd = -1;  // a worker's end of its socket to the parent

static bool tc_shape_ok(unsigned long long m, unsigned long long n, unsigned long long k) {
  // WMMA m16n16k16, m32n8k16, m8n32k16, m16n16k8 (tf32), m8n8k4 (f64); mma.sync m16n8k16, m16n8k8,
  // m16n8k4 (f64), m16n8k32 (fp8, mma.sp)
  static const unsigned shapes[][3] = {{16, 16, 16}, {32, 8, 16}, {8, 32, 16}, {16, 16, 8}, {8, 8, 4},
                                       {16, 8, 16}, {16, 8, 8}, {16, 8, 4}, {16, 8, 32}};
  for (const auto& s : shapes)
    if (m == s[0] && n == s[1] && k == s[2]) return true;
  return false;
}

static bool read_full(int fd, void* p, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = recv(fd, (char*)p + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += (size_t)r;
  }
  return true;
}
static bool write_full(int fd, const void* p, size_t n) {
  for (size_t put = 0; put < n;) {
    ssize_t r = send(fd, (const char*)p + put, n - put, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    put += (size_t)r;
  }
  return true;
}

namespace {
struct TcWaiting { Fiber* f; __emu_tc_instr* ins; };
std::vector<TcWaiting> g_tc_waiting;
std::vector<unsigned char> g_tc_msg;

bool tc_waiting() { return !g_tc_waiting.empty(); }

// the batch to the parent and its answers back; every waiting thread runnable again
void tc_flush() {
  g_tc_msg.assign(16, 0);
  size_t answer = 0;
  for (const TcWaiting& w : g_tc_waiting) {
    const __emu_tc_instr& in = *w.ins;
    const size_t es = in.f64 ? 8 : 4, mk = (size_t)in.m * in.k, kn = (size_t)in.k * in.n, mn = (size_t)in.m * in.n;
    const unsigned head[4] = {in.m, in.n, in.k, in.f64 ? 1u : 0u};
    const unsigned char* parts[] = {(const unsigned char*)head, (const unsigned char*)in.a, (const unsigned char*)in.b,
                                    (const unsigned char*)in.abits, (const unsigned char*)in.bbits,
                                    (const unsigned char*)in.c};
    const size_t sizes[] = {16, mk * es, kn * es, mk * 8, kn * 8, mn * es};
    for (int i = 0; i < 6; ++i) g_tc_msg.insert(g_tc_msg.end(), parts[i], parts[i] + sizes[i]);
    answer += mn * es;
  }
  const unsigned long long hdr[2] = {g_tc_msg.size() - 16, g_tc_waiting.size()};
  memcpy(g_tc_msg.data(), hdr, 16);
  std::vector<unsigned char> back(answer);
  if (g_flip_fd < 0 || !write_full(g_flip_fd, g_tc_msg.data(), g_tc_msg.size()) ||
      !read_full(g_flip_fd, back.data(), answer))
    __emu_fault("crash", "a keyed probe run's matrix instruction was not answered by the emulator's runner", 0, -1,
                -1, 0);
  size_t off = 0;
  for (const TcWaiting& w : g_tc_waiting) {
    const size_t bytes = (size_t)w.ins->m * w.ins->n * (w.ins->f64 ? 8 : 4);
    memcpy(w.ins->c, back.data() + off, bytes);
    off += bytes;
    w.f->state = RUNNABLE;
  }
  g_tc_waiting.clear();
}
}  // namespace

extern "C" void __emu_tc_mma(__emu_tc_instr* ins) {
  Fiber* f = (Fiber*)__emu_cur;
  if (g_flip_fd < 0 || !f || !tc_shape_ok(ins->m, ins->n, ins->k))
    __emu_fault("crash", "a matrix instruction of a keyed probe run was asked for outside one, or of a shape "
                "no tensor core has", 0, -1, -1, 0);
  g_tc_waiting.push_back(TcWaiting{f, ins});
  if (g_tc_waiting.size() >= TC_BATCH) {
    tc_flush();
    return;
  }
  f->state = AT_TC;
  yield_to_sched(f);
}

static unsigned long long tc_mix64(unsigned long long z) {  // splitmix64's finaliser, as signed_products.py
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The parent: one instruction executed, products flipped by the key (emu_abi.h: __emu_tc_sum, the same
// arithmetic as an unkeyed run's)
template <class T>
static void tc_execute(unsigned m, unsigned n, unsigned k, const unsigned char* p, unsigned long long key,
                       unsigned char* d) {
  static T A[512], B[512], C[256];
  static unsigned long long HA[512], HB[512];
  static T sign[4096];
  const size_t mk = (size_t)m * k, kn = (size_t)k * n, mn = (size_t)m * n;
  memcpy(A, p, mk * sizeof(T)), p += mk * sizeof(T);
  memcpy(B, p, kn * sizeof(T)), p += kn * sizeof(T);
  memcpy(HA, p, mk * 8), p += mk * 8;
  memcpy(HB, p, kn * 8), p += kn * 8;
  memcpy(C, p, mn * sizeof(T));
  for (size_t i = 0; i < mk; ++i) HA[i] = tc_mix64(HA[i] + key);
  for (size_t i = 0; i < kn; ++i) HB[i] = tc_mix64(HB[i] + key);
  T* f = sign;
  for (unsigned i = 0; i < m; ++i)  // in __emu_tc_sum's order: (m, k, n)
    for (unsigned l = 0; l < k; ++l)
      for (unsigned j = 0; j < n; ++j) *f++ = (T)1 - (T)2 * (T)(tc_mix64(HA[i * k + l] + HB[l * n + j]) >> 63);
  __emu_tc_sum<T>(m, n, k, A, B, C, sign);
  memcpy(d, C, mn * sizeof(T));
}

// the instructions the parent executed, per shape (a keyed run reports these, not the workers' table)
static unsigned g_tc_shape[TC_SHAPES];
static unsigned long long g_tc_count[TC_SHAPES];

// one batch on `fd` executed and answered; false when the worker is gone or sent anything but
// matrix instructions (the parent then closes its socket, and the worker's instruction faults)
static bool tc_serve(int fd, unsigned long long key) {
  static std::vector<unsigned char> body, answer;
  unsigned long long hdr[2];
  if (!read_full(fd, hdr, sizeof hdr) || !hdr[1] || hdr[1] > TC_BATCH || hdr[0] > TC_BATCH * TC_MAX_BYTES) return false;
  body.resize(hdr[0]);
  if (!read_full(fd, body.data(), body.size())) return false;
  answer.clear();
  size_t off = 0;
  for (unsigned long long i = 0; i < hdr[1]; ++i) {
    unsigned head[4];
    if (off + 16 > body.size()) return false;
    memcpy(head, body.data() + off, 16);
    off += 16;
    const unsigned m = head[0], n = head[1], k = head[2];
    if (!tc_shape_ok(m, n, k) || head[3] > 1) return false;
    const size_t es = head[3] ? 8 : 4, mk = (size_t)m * k, kn = (size_t)k * n, mn = (size_t)m * n;
    const size_t need = (mk + kn + mn) * es + (mk + kn) * 8;
    if (off + need > body.size()) return false;
    answer.resize(answer.size() + mn * es);
    if (head[3]) tc_execute<double>(m, n, k, body.data() + off, key, answer.data() + answer.size() - mn * es);
    else tc_execute<float>(m, n, k, body.data() + off, key, answer.data() + answer.size() - mn * es);
    off += need;
    const unsigned shape = m << 20 | n << 10 | k;
    for (int s = 0; s < TC_SHAPES; ++s)
      if (g_tc_shape[s] == shape || g_tc_shape[s] == 0) {
        g_tc_shape[s] = shape;
        ++g_tc_count[s];
        break;
      }
  }
  return off == body.size() && write_full(fd, answer.data(), answer.size());
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: emu_runner MODULE.so INPUT OUTPUT REPORT [TRAFFIC]\n");
    return 2;
  }
  std::vector<char> in = slurp(argv[2]);
  Reader rd{in.data(), in.data() + in.size()};
  if (rd.get<unsigned>() != 0x31554d45u) { fprintf(stderr, "emu_runner: bad input magic\n"); return 2; }
  __emu_gdim.x = rd.get<unsigned>(); __emu_gdim.y = rd.get<unsigned>(); __emu_gdim.z = rd.get<unsigned>();
  __emu_bdim.x = rd.get<unsigned>(); __emu_bdim.y = rd.get<unsigned>(); __emu_bdim.z = rd.get<unsigned>();
  g_smem_size = (size_t)rd.get<unsigned long long>();
  unsigned flags = rd.get<unsigned>();
  unsigned nworkers = rd.get<unsigned>();
  unsigned stack_bytes = rd.get<unsigned>();  // the module's own frames (0: not known)
  // its frames, plus the trampoline and fiber_start above them, rounded to 256 bytes
  g_fill_init = ((size_t)stack_bytes + 256 + 255) / 256 * 256;
  if (g_fill_init < FILL_INIT) g_fill_init = FILL_INIT;
  if (g_fill_init > STACK - PAGE) g_fill_init = STACK - PAGE;
  std::string sym = rd.str();
  unsigned nargs = rd.get<unsigned>();
  // flags: 1 reversed order (blocks, and the threads of a block), 2 check uninitialised (16: memory traffic,
  // 32: matrix instructions double A, a probe)
  // __shared__ reads, 4 reverse the lanes of each warp only, 8 reverse the warps only
  g_order_mode = (flags & 1) ? 1 : (flags & 4) ? 2 : (flags & 8) ? 3 : 0;
  __emu_check_uninit = (flags & 2) ? 1 : 0;
  __emu_tc_double = (flags & 32) ? 1 : 0;
  __emu_tc_keyed = (flags & 64) ? 1 : 0;
  g_nthreads = __emu_bdim.x * __emu_bdim.y * __emu_bdim.z;
  g_nwarps = (g_nthreads + 31) / 32;
  g_nblocks = (unsigned long long)__emu_gdim.x * __emu_gdim.y * __emu_gdim.z;

  g_report_fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  g_ctl = (Control*)map_or_die(PAGE, MAP_SHARED);
  memset(g_ctl, 0, sizeof(Control));

  // argument buffers and scalar slots
  std::vector<unsigned long long> slots(nargs);
  g_args = (void**)calloc(nargs ? nargs : 1, sizeof(void*));
  std::vector<int> buf_of(nargs, -1);
  for (unsigned i = 0; i < nargs; ++i) {
    unsigned kind = rd.get<unsigned>();
    unsigned itemsize = rd.get<unsigned>();
    unsigned long long nbytes = rd.get<unsigned long long>();
    std::string name = rd.str();
    if (rd.p + nbytes > rd.end) { fprintf(stderr, "emu_runner: truncated argument data\n"); return 2; }
    if (kind == 0) {
      memcpy(&slots[i], rd.p, nbytes < 8 ? nbytes : 8);
      g_args[i] = &slots[i];
    } else {
      Buffer B;
      B.name = name;
      B.itemsize = itemsize ? itemsize : 1;
      B.nbytes = nbytes;
      size_t rounded = (nbytes + PAGE - 1) / PAGE * PAGE;
      B.region_len = rounded + 2 * PAGE;
      B.region = map_or_die(B.region_len, MAP_SHARED);
      B.end = B.region + PAGE + rounded;
      B.start = B.end - nbytes;
      memset(B.region + PAGE, CANARY, B.start - (B.region + PAGE));
      memcpy(B.start, rd.p, nbytes);
      mprotect(B.region, PAGE, PROT_NONE);
      mprotect(B.end, PAGE, PROT_NONE);
      buf_of[i] = (int)g_bufs.size();
      g_bufs.push_back(B);
      slots[i] = (unsigned long long)(uintptr_t)B.start;
      g_args[i] = &slots[i];
    }
    rd.p += nbytes;
  }

  void* mod = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!mod) { fprintf(stderr, "emu_runner: %s\n", dlerror()); return 2; }
  g_tramp = (tramp_fn)dlsym(mod, sym.c_str());
  if (!g_tramp) { fprintf(stderr, "emu_runner: kernel entry %s not found\n", sym.c_str()); return 2; }
  Dl_info info;
  if (dladdr((void*)g_tramp, &info)) g_mod_base = (uintptr_t)info.dli_fbase;

  if (flags & 16) {  // memory traffic into argv[5], from one worker (traffic.h)
    g_tr_path = argc == 6 ? argv[5] : 0;
    tr_init();
    nworkers = 1;
  }
  if (nworkers < 1) nworkers = 1;
  if (nworkers > g_nblocks) nworkers = (unsigned)(g_nblocks ? g_nblocks : 1);
  fflush(stdout);
  // a keyed run: one socket per worker; this process, which runs no kernel code, holds the key and
  // cannot be read by its workers (not dumpable: no ptrace, no /proc/PID/mem of it for them)
  std::vector<int> parent_end(nworkers, -1), worker_end(nworkers, -1);
  if (__emu_tc_keyed) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    for (unsigned w = 0; w < nworkers; ++w) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) { perror("emu_runner: socketpair"); return 2; }
      parent_end[w] = sv[0], worker_end[w] = sv[1];
    }
  }
  std::vector<pid_t> kids;
  for (unsigned w = 0; w < nworkers; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      close(0);  // the key comes on stdin, for the parent only
      if (__emu_tc_keyed) {
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        for (unsigned v = 0; v < nworkers; ++v) {
          close(parent_end[v]);
          if (v != w) close(worker_end[v]);
        }
        g_flip_fd = worker_end[w];
      }
      _exit(worker_main());
    }
    if (pid < 0) { perror("emu_runner: fork"); return 2; }
    kids.push_back(pid);
  }
  unsigned long long key = 0;
  if (__emu_tc_keyed) {
    for (int fd : worker_end) close(fd);
    size_t have = 0;
    while (have < sizeof key) {
      ssize_t r = read(0, (char*)&key + have, sizeof key - have);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      have += (size_t)r;
    }
    if (have != sizeof key) { fprintf(stderr, "emu_runner: a keyed run needs its key on stdin\n"); key = 0; }
  }
  int result = 0;
  size_t left = kids.size();
  std::vector<bool> reaped(kids.size(), false);
  std::vector<pollfd> pf(parent_end.size());
  size_t open_fds = __emu_tc_keyed ? parent_end.size() : 0;
  while (left > 0) {
    int st;
    pid_t pid;
    if (open_fds > 0) {  // answer the workers' requests until each has exited
      for (size_t i = 0; i < pf.size(); ++i) pf[i] = pollfd{parent_end[i], POLLIN, 0};
      if (poll(pf.data(), pf.size(), -1) < 0 && errno != EINTR) { open_fds = 0; continue; }
      size_t gone = pf.size();
      for (size_t i = 0; i < pf.size() && gone == pf.size(); ++i) {
        if (parent_end[i] < 0 || !pf[i].revents) continue;
        if ((pf[i].revents & POLLIN) && key && tc_serve(parent_end[i], key)) continue;
        close(parent_end[i]);
        parent_end[i] = -1;
        --open_fds;
        gone = i;
      }
      if (gone == pf.size() || reaped[gone]) continue;
      // its socket closed: it has exited (or is about to): its status, as below
      do pid = waitpid(kids[gone], &st, 0); while (pid < 0 && errno == EINTR);
      if (pid < 0) continue;
    } else {
      pid = waitpid(-1, &st, 0);
      if (pid < 0) { if (errno == EINTR) continue; break; }
    }
    for (size_t i = 0; i < kids.size(); ++i) if (kids[i] == pid) reaped[i] = true;
    --left;
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok && result == 0) {
      result = WIFEXITED(st) && WEXITSTATUS(st) == 3 ? 3 : 4;
      g_ctl->failed = 1;
      for (pid_t k : kids) if (k != pid) kill(k, SIGKILL);
      if (result == 4) {
        char msg[256];
        if (WIFSIGNALED(st)) snprintf(msg, sizeof msg, "kind=crash\nmessage=the emulator worker died with signal %d\n", WTERMSIG(st));
        else snprintf(msg, sizeof msg, "kind=crash\nmessage=the emulator worker exited with status %d\n", WEXITSTATUS(st));
        if (__atomic_exchange_n(&g_ctl->reported, 1, __ATOMIC_SEQ_CST) == 0) { ssize_t w_ = write(g_report_fd, msg, strlen(msg)); (void)w_; }
        result = 3;
      }
    }
  }
  if (result) return result;
  // writes just before an argument's first element (inside its page) are caught afterwards
  for (const Buffer& B : g_bufs) {
    for (char* p = B.region + PAGE; p < B.start; ++p)
      if ((unsigned char)*p != CANARY) {
        long long off = (long long)(p - B.start);
        long long idx = -((-off + B.itemsize - 1) / (long long)B.itemsize);
        long long n = (long long)(B.nbytes / B.itemsize);
        dprintf(g_report_fd,
                "kind=out-of-bounds\nmessage=out-of-bounds write of argument '%s' at a negative element index "
                "(about %lld); '%s' has %lld elements (valid indices 0..%lld). The emulator found this after the "
                "launch, so it cannot say which thread did it\nargument=%s\nindex=%lld\nsize=%lld\n",
                B.name.c_str(), idx, B.name.c_str(), n, n - 1, B.name.c_str(), idx, n);
        return 3;
      }
  }
  // success: the report file carries the tensor-core count instead of a fault; in a keyed run the
  // parent's own (what it executed), and only that: the workers, gone now, could write to the file
  const unsigned* shape = __emu_tc_keyed ? g_tc_shape : g_ctl->tc_shape;
  const unsigned long long* count = __emu_tc_keyed ? g_tc_count : g_ctl->tc_count;
  if (__emu_tc_keyed && ftruncate(g_report_fd, 0) != 0) return 2;
  for (int i = 0; i < TC_SHAPES && shape[i]; ++i)
    dprintf(g_report_fd, "tensor=%u,%u,%u,%llu\n", shape[i] >> 20, (shape[i] >> 10) & 1023, shape[i] & 1023, count[i]);
  FILE* out = fopen(argv[3], "wb");
  if (!out) { perror(argv[3]); return 2; }
  for (const Buffer& B : g_bufs) fwrite(B.start, 1, B.nbytes, out);
  fclose(out);
  return 0;
}
