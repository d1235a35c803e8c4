// The interface between a compiled kernel module (kernel.so, built from the user's source
// plus emu_prelude.h) and the runner process (runtime/runner.cpp) that loads and runs it.
// Everything here has C linkage; the runner defines it, the module refers to it.
#pragma once

struct __emu_uint3 { unsigned x, y, z; };

// One CUDA thread = one fiber. The module reads threadIdx etc. from the current fiber.
struct __emu_thread {
  __emu_uint3 tidx;  // threadIdx
  int tid;           // linear thread id in the block
  int lane;          // tid % 32
  int warp;          // tid / 32
};

// A static __shared__ array (see emu::SharedArray in the prelude): the runner re-poisons
// every registered array at the start of each block and clears its written-shadow.
struct __emu_shared_base {
  void* data;
  unsigned char* shadow;      // one byte per element (1 = written), or 0 when untracked
  unsigned long long bytes;   // size of data in bytes
  unsigned long long count;   // number of elements
  const char* name;
  int escaped;                // its address was taken: stop uninitialised-read checks
  struct __emu_shared_base* next;
  unsigned short* cp_shadow;  // cp.async copies not yet landed, per 4-byte granule (runner-owned; 0: none ever)
  unsigned ndims;             // its declared dimensions, so reports say tile[0][8], not a flat index
  unsigned long long dims[4];
  unsigned itemsize;
};

// Where a pointer points (for the rules a GPU enforces per memory space and allocation):
// kind 0 unknown, 1 a kernel argument (global), 2 a static __shared__ array, 3 dynamic
// shared memory (extern __shared__), 4 the thread's own stack (local memory).
struct __emu_region {
  int kind;
  const char* name;           // argument or array name ("extern __shared__" for dynamic)
  const char* base;           // its first byte (a GPU allocation starts 256-byte aligned)
  unsigned long long bytes;
  struct __emu_shared_base* arr;  // kind 2
};

typedef void (*__emu_combine_fn)(void** payloads, unsigned mask);

// warp collective kinds (used to match the lanes of one rendezvous)
enum {
  EMU_OP_SHFL = 1, EMU_OP_SHFL_UP, EMU_OP_SHFL_DOWN, EMU_OP_SHFL_XOR, EMU_OP_VOTE,
  EMU_OP_SYNCWARP, EMU_OP_WMMA_LOAD, EMU_OP_WMMA_STORE, EMU_OP_WMMA_MMA, EMU_OP_REDUCE,
  EMU_OP_MATCH, EMU_OP_PTX_MMA, EMU_OP_LDMATRIX
};

#ifdef __cplusplus
extern "C" {
#endif
extern struct __emu_thread* __emu_cur;
extern struct __emu_uint3 __emu_bidx, __emu_bdim, __emu_gdim;
extern int __emu_check_uninit;
// a probe run: every matrix instruction computes (2A)B + C, so every output element that the
// tensor cores' products reach changes (grader/checking/tensor_work.py)
extern int __emu_tc_double;
// a keyed probe run: every matrix instruction's product a*b has its sign flipped where a keyed hash
// of its two operands' bits (sign bit cleared) says; the grader computes the same
// (grader/problems/signed_products.py: change both together). The key never enters a process that
// runs the kernel (a kernel runs natively and could read any memory of its own, and call any function
// its module can find): the runner's parent holds it and executes every matrix instruction of a keyed
// run whole, its operands in and D out, counting it as it does (runner.cpp, "keyed probe runs"). So the
// only question a kernel can put to the key is a whole instruction of a shape the hardware has, and
// asking it is executing it.
extern int __emu_tc_keyed;
// one matrix instruction for the runner's parent (a keyed run)
struct __emu_tc_instr {
  unsigned m, n, k;  // its shape
  unsigned f64;      // values are double (summed with fma), else float
  const void* a;     // m x k values, row-major (float or double, as f64 says)
  const void* b;     // k x n values
  const unsigned long long* abits;  // their bits as __emu_tc_bits gives them
  const unsigned long long* bbits;
  void* c;           // m x n: the accumulator in, D out
};
// Executes `ins` in the runner's parent. The calling thread waits for the answer while the other
// warps of its block run on, so the parent answers the block's instructions in batches.
void __emu_tc_mma(struct __emu_tc_instr* ins);
// an operand's bits, `width` of them, sign (the top one) cleared
static inline unsigned long long __emu_tc_bits(unsigned long long bits, int width) {
  if (width < 64) bits &= (1ull << width) - 1;
  return bits & ~(1ull << (width - 1));
}

// cp.async (__pipeline_memcpy_async & co., see the runner): copies issued by the block's
// threads and not landed yet, in all and into static __shared__ arrays (or memory the runner
// cannot place); one counter per 4-byte granule of dynamic shared memory.
extern long long __emu_cp_pending, __emu_cp_pending_other;
extern unsigned short* __emu_cp_dyn_shadow;
extern char* __emu_cp_dyn_base;
extern unsigned long long __emu_cp_dyn_bytes;

void __emu_syncthreads(int line);
// op: 0 count, 1 and, 2 or
int __emu_syncthreads_red(int line, int op, int pred);
// Rendezvous of the lanes in `mask` (restricted to lanes that exist). The last lane to
// arrive calls fn(payloads, participants) with every participant's payload pointer.
void __emu_warp_op(int kind, unsigned mask, int line, void* payload, __emu_combine_fn fn);
unsigned __emu_activemask(void);
// one warp-wide matrix instruction of shape m x n x k executed (called by its combine step)
void __emu_tensor_op(unsigned m, unsigned n, unsigned k);
void* __emu_dyn_smem(void);
unsigned long long __emu_dyn_smem_size(void);
void __emu_register_shared(struct __emu_shared_base* s);
__attribute__((noreturn, noinline)) void __emu_fault(const char* kind, const char* msg,
    const char* arg, long long index, long long size, int line);
// cuda_pipeline.h primitives, per thread (line: the caller's, for reports)
void __emu_cp_async(void* dst, const void* src, unsigned long long size, unsigned long long zfill, int line);
void __emu_cp_commit(void);
void __emu_cp_wait(unsigned long long prior, int line);
void __emu_cp_arrive(int line);
// A read (write=0) or write of [p, p+bytes) at `line`: faults if a copy not yet landed covers it.
void __emu_cp_touch(const void* p, unsigned long long bytes, int write, int line);
// which memory `p` points into (one lookup; see struct __emu_region)
void __emu_region_of(const void* p, struct __emu_region* r);
// memory traffic (a traffic launch only, else a no-op): a read (write=0) or write of `bytes` at p
// that the lane makes though the emulator performs it elsewhere (ldmatrix's rows: the last lane
// to arrive copies them all)
void __emu_tr_note(const void* p, unsigned bytes, int write);
int __emu_printf(const char* __restrict fmt, ...);
long long __emu_clock(void);
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
// The arithmetic of one matrix instruction, in its one home (the workers' WMMA and PTX mma, and the
// runner's parent in a keyed run): C (M x N) += A (M x K) B (K x N), row-major, each element summed in
// k order in T (the products of the inputs' formats are exact in float; double uses fma), a row of C
// at a time (N <= 64) so the elements' sums run side by side. `sign` (a keyed run): product (m, n, k)
// times sign[(m * K + k) * N + n], +1 or -1 (exact, and no branch on it).
template <class T>
static inline void __emu_tc_sum(unsigned M, unsigned N, unsigned K, const T* A, const T* B, T* C, const T* sign) {
  T s[64];
  for (unsigned m = 0; m < M; ++m) {
    for (unsigned n = 0; n < N; ++n) s[n] = C[m * N + n];
    for (unsigned k = 0; k < K; ++k) {
      const T a = A[m * K + k];
      const T* b = B + k * N;
      const T* f = sign ? sign + (m * K + k) * N : 0;
      for (unsigned n = 0; n < N; ++n) {
        const T ab = f ? a * f[n] : a;
        if constexpr (sizeof(T) == 8) s[n] = __builtin_fma(ab, b[n], s[n]);
        else s[n] += ab * b[n];
      }
    }
    for (unsigned n = 0; n < N; ++n) C[m * N + n] = s[n];
  }
}
#endif
