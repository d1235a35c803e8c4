// Inline PTX on the CPU emulator: the forms the course's mma.sync kernels use (notebook 10).
//
// translate.py reads every `asm(...)` statement, checks that each PTX instruction in its
// template is one of the forms below (anything else is refused at compile time, naming the
// instruction), and rewrites the statement into calls of this header on one line (the user's
// line numbers are kept). Operands become Slots: an output operand writes through to its C++
// lvalue, an input operand holds its value, a `.reg` the template declares is a local Slot.
//
//   mma.sync.aligned.m16n8k16 / m16n8k8 .row.col .f32|.f16 .f16|.bf16 ... (f16/bf16 in)
//   mma.sync.aligned.m8n8k4 / m16n8k4 / m16n8k8 / m16n8k16 .row.col.f64.f64.f64.f64
//   mma.sync.aligned.m16n8k32.row.col.f32|f16 .e4m3|e5m2 .e4m3|e5m2 .f32|f16 (sm_89+; D and C alike)
//   mma.sp{::ordered_metadata}.sync.aligned.m16n8k16|m16n8k32.row.col.f32|f16.f16|bf16 ... , e, sel
//   cvt.rn.satfinite{.relu}.e4m3x2|e5m2x2.f32|f16x2, cvt.rn.f16x2.e4m3x2|e5m2x2
//   ldmatrix.sync.aligned.m8n8.x1|x2|x4{.trans}{.shared{::cta}}.b16
//   cp.async.ca|cg.shared{::cta}.global{.L2::64B|128B|256B} [dst], [src], 4|8|16{, src-size}
//   cp.async.commit_group, cp.async.wait_group N, cp.async.wait_all
//   cvta.to.shared / cvta.shared .u32|.u64, cvt.u32.u64, cvt.u64.u32, mov.b32|u32|s32|b64|u64
//
// Fragment layouts: PTX ISA 9.1, section 9.7.14.5 "Matrix multiply-accumulate operation using
// mma instruction" (9.7.14.5.6-9.7.14.5.8 for m16n8k4/k8/k16, "Matrix Fragments for
// mma.m8n8k4 with .f64" for m8n8k4) and 9.7.14.5.15 "ldmatrix" (Figure 104); tests/emu/
// test_emu_ptx.py checks every form against those formulas, written out independently.
// g = lane >> 2, t = lane & 3, element i of a lane's fragment, (r, c) in that operand's matrix:
//   f16/bf16 m16n8k16  A (16x16, 4 regs, 2 elements each, low half first):
//                         r = g + 8*((i>>1)&1), c = 2t + (i&1) + 8*(i>>2)
//                      B (16x8, 2 regs): r = 2t + (i&1) + 8*(i>>1), c = g
//   f16/bf16 m16n8k8   A (16x8, 2 regs): r = g + 8*(i>>1), c = 2t + (i&1);  B (8x8, 1 reg): r = 2t + i, c = g
//   f64 m16n8k4        A: r = g + 8i, c = t;  B: r = t, c = g
//   f64 m16n8k8/k16    A: r = g + 8*(i&1), c = t + 4*(i>>1);  B: r = t + 4i, c = g
//   f64 m8n8k4         A: (g, t);  B: (t, g);  C/D (2 regs): (g, 2t + i)
//   C/D of every m16n8 shape (4 f32/f64 regs, or 2 f16x2 regs): r = g + 8*(i>>1), c = 2t + (i&1)
//   e4m3/e5m2 m16n8k32 (9.7.14.5.10, "Matrix Fragments for mma.m16n8k32"; 4 elements per register,
//                      lowest byte first)  A (16x32, 4 regs): r = g + 8*((i>>2)&1), c = 4t + (i&3) + 16*(i>>3)
//                      B (32x8, 2 regs): r = 4t + (i&3) + 16*(i>>2), c = g
//   mma.sp f16/bf16    A: the non-zeros, as a dense A of K/2 columns (m16n8k8 / m16n8k16 layout above;
//                      9.7.14.6.2.1-2); B of m16n8k32 (32x8, 4 regs): r = 2t + (i&1) + 8*(i>>1), c = g;
//                      metadata: see sparse_meta_lane below
//   ldmatrix: lanes 8j..8j+7 give the row addresses (16 bytes each) of matrix j; register j of
//     lane l holds row g, columns 2t, 2t+1 of matrix j (low half first); .trans: rows 2t, 2t+1
//     of column g, i.e. the matrix transposed.
// mma numerics as WMMA here: exact products, summed in k order in float (double for f64) from
// C; an f16 D is rounded once at the end. The hardware's order and truncation differ in the
// last bits (FACTS.md, numerics).
//
// Shared-memory addresses: a 32-bit "shared window" address (what cvta.to.shared and
// __cvta_generic_to_shared give, what .shared operands take) keeps the low 20 bits of the real
// address and puts a slot number in bits 20-31 that names its 1 MiB-aligned region (slots are
// taken in pairs, so an array that crosses a 1 MiB boundary stays contiguous). So offsets, XOR
// swizzles and comparisons on these addresses behave as on a GPU; an address no cvta gave is
// reported, not followed.
#ifndef EMU_PTX_H
#define EMU_PTX_H
#define EMU_PTX_VERSION 2

namespace emu {
namespace ptx {

// ---------------------------------------------------------------- shared window addresses
struct Window {
  uintptr_t base[4096];  // slot -> 1 MiB-aligned region (slot 0: never used, so 0 is no address)
  unsigned n = 0;        // slots taken: 1..n
  unsigned last = 0;     // the slot of the last lookup (a kernel asks for the same region again and again)
};
inline Window g_window;

__attribute__((noinline, noreturn)) inline void bad_shared(const char* what, unsigned long long a, int line) {
  char msg[320];
  snprintf(msg, sizeof msg,
           "%s: 0x%llx is not a shared-memory address (the .shared state space takes what cvta.to.shared "
           "or __cvta_generic_to_shared gives for a pointer into __shared__ memory)", what, a);
  __emu_fault("crash", msg, 0, -1, -1, line);
}

EMU_AI unsigned to_shared(const void* p) {
  const uintptr_t u = (uintptr_t)p, region = u & ~(uintptr_t)0xFFFFF;
  Window& w = g_window;
  if (w.last && w.base[w.last] == region) return (w.last << 20) | (unsigned)(u & 0xFFFFF);
  for (unsigned s = 1; s <= w.n; ++s)
    if (w.base[s] == region) { w.last = s; return (s << 20) | (unsigned)(u & 0xFFFFF); }
  if (w.n + 2 >= 4096) __emu_fault("crash", "too many shared-memory regions for the emulator's cvta", 0, -1, -1, 0);
  const unsigned s = w.n + 1;
  w.base[s] = region;
  w.base[s + 1] = region + 0x100000;  // the next MiB, so (address + offset) stays contiguous
  w.n += 2;
  w.last = s;
  return (s << 20) | (unsigned)(u & 0xFFFFF);
}

EMU_AI void* from_shared(unsigned long long a, const char* what, int line) {
  const unsigned s = (unsigned)(a >> 20);
  if (a >> 32 || s == 0 || s > g_window.n) bad_shared(what, a, line);
  return (void*)(g_window.base[s] + (uintptr_t)(a & 0xFFFFF));
}
}  // namespace ptx
}  // namespace emu

// CUDA's conversions between generic pointers and shared-window addresses
EMU_AI size_t __cvta_generic_to_shared(const void* p) { return (size_t)::emu::ptx::to_shared(p); }
EMU_AI void* __cvta_shared_to_generic(size_t a) { return ::emu::ptx::from_shared(a, "__cvta_shared_to_generic", 0); }

namespace emu {
namespace ptx {

// ---------------------------------------------------------------- operands
struct Slot {
  void* p;                   // the C++ lvalue of an output operand, else 0
  unsigned long long v;      // the value (bits), low bytes first
  unsigned char size;        // bytes written through p
};
template <class T> EMU_AI unsigned long long bits_of(const T& x) {
  const typename value_of<T>::type& y0 = x;  // a checked __shared__ element: its value
  auto y = +y0;                              // arrays decay to pointers
  unsigned long long b = 0;
  memcpy(&b, &y, sizeof(y) < 8 ? sizeof(y) : 8);
  return b;
}
template <class T> EMU_AI Slot out(T& x) {
  Slot s; s.p = (void*)&x; s.v = 0; s.size = sizeof(T) < 8 ? sizeof(T) : 8; return s;
}
template <class T> EMU_AI Slot inout(T& x) { Slot s = out(x); memcpy(&s.v, &x, s.size); return s; }
template <class T> EMU_AI Slot in(const T& x) { Slot s; s.p = 0; s.v = bits_of(x); s.size = 8; return s; }
EMU_AI Slot imm(long long v) { Slot s; s.p = 0; s.v = (unsigned long long)v; s.size = 8; return s; }
EMU_AI Slot reg() { Slot s; s.p = 0; s.v = 0; s.size = 8; return s; }
EMU_AI void set(Slot* s, unsigned long long v) {
  s->v = v;
  if (s->p) memcpy(s->p, &s->v, s->size);
}

// ---------------------------------------------------------------- scalar instructions
EMU_AI void mov(Slot* d, const Slot* a, int bits) {
  set(d, bits == 64 ? a->v : (a->v & 0xFFFFFFFFull));
}
// prmt.b32, the generic form: byte n of d is byte c[4n+2:4n] of {b, a} (a bytes 0-3, b bytes 4-7), or, where
// the nibble's top bit c[4n+3] is set, that byte's sign bit copied into all 8 bits (PTX ISA, prmt)
EMU_AI void prmt(Slot* d, const Slot* a, const Slot* b, const Slot* c) {
  const unsigned long long ba = (b->v & 0xFFFFFFFFull) << 32 | (a->v & 0xFFFFFFFFull);
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) {
    const unsigned sel = (unsigned)(c->v >> (4 * n)) & 15, byte = (unsigned)(ba >> (8 * (sel & 7))) & 0xFF;
    r |= (sel & 8 ? (byte & 0x80 ? 0xFFu : 0u) : byte) << (8 * n);
  }
  set(d, r);
}
EMU_AI void cvta_to_shared(Slot* d, const Slot* a) { set(d, to_shared((const void*)(uintptr_t)a->v)); }
EMU_AI void cvta_shared(Slot* d, const Slot* a, int line) {
  set(d, (unsigned long long)(uintptr_t)from_shared(a->v & 0xFFFFFFFFull, "cvta.shared", line));
}

// cp.async: the runner's __pipeline_memcpy_async (same ordering, same fault reports)
EMU_AI void cp_async(int line, const Slot* dst, long long doff, bool dst_shared, const Slot* src, long long soff,
                     unsigned size, const Slot* src_size) {
  void* d = dst_shared ? from_shared(dst->v + doff, "cp.async destination", line) : (void*)(uintptr_t)(dst->v + doff);
  const void* s = (const void*)(uintptr_t)(src->v + soff);
  unsigned long long zfill = 0;
  if (src_size) {
    const unsigned long long n = src_size->v & 0xFFFFFFFFull;
    if (n > size) {
      char msg[160];
      snprintf(msg, sizeof msg, "cp.async: src-size %llu is larger than cp-size %u", n, size);
      __emu_fault("async-copy", msg, 0, -1, -1, line);
    }
    zfill = size - n;  // the bytes past src-size are written with zeros
  }
  __emu_cp_async(d, s, size, zfill, line);
}

// ---------------------------------------------------------------- warp collectives
__attribute__((noinline)) inline void whole_warp(const char* what, int line) {
  unsigned n = __emu_bdim.x * __emu_bdim.y * __emu_bdim.z;
  unsigned have = n - (unsigned)__emu_cur->warp * 32u;
  if (have < 32) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s needs all 32 lanes of a warp, but warp %d of this block has only %u threads "
             "(block of %u threads)", what, __emu_cur->warp, have, n);
    __emu_fault("partial-warp-collective", msg, 0, -1, -1, line);
  }
}

enum { F16 = 0, BF16 = 1, F32 = 2, F64 = 3, E4M3 = 4, E5M2 = 5 };
constexpr int bits_of_type(int t) { return t == F64 ? 64 : t == F32 ? 32 : (t == E4M3 || t == E5M2) ? 8 : 16; }
// registers per lane for a warp's `elems` elements of type t (a Slot holds one f32 or f64, or 32 bits of narrower ones)
constexpr int regs_of(int elems, int t) { return bits_of_type(t) >= 32 ? elems / 32 : elems / 32 * bits_of_type(t) / 32; }

// (r, c) of element i of a lane's A (M x K), B (K x N) or C/D (M x N) fragment (table above);
// `bits`: the element width of A and B (8 for e4m3/e5m2, 16 for f16/bf16, 64 for f64)
EMU_AI void a_rc(int M, int K, int bits, int lane, int i, int& r, int& c) {
  const int g = lane >> 2, t = lane & 3;
  if (M == 8) { r = g; c = t; return; }  // f64 m8n8k4
  if (bits == 64) {
    if (K == 4) { r = g + 8 * i; c = t; }
    else { r = g + 8 * (i & 1); c = t + 4 * (i >> 1); }
    return;
  }
  if (bits == 8) { r = g + 8 * ((i >> 2) & 1); c = 4 * t + (i & 3) + 16 * (i >> 3); return; }  // m16n8k32
  if (K == 16) { r = g + 8 * ((i >> 1) & 1); c = 2 * t + (i & 1) + 8 * (i >> 2); }
  else { r = g + 8 * (i >> 1); c = 2 * t + (i & 1); }
}
EMU_AI void b_rc(int M, int K, int bits, int lane, int i, int& r, int& c) {
  const int g = lane >> 2, t = lane & 3;
  c = g;
  if (M == 8 || bits == 64) r = t + 4 * i;
  else if (bits == 8) r = 4 * t + (i & 3) + 16 * (i >> 2);  // m16n8k32 e4m3/e5m2
  else if (K >= 16) r = 2 * t + (i & 1) + 8 * (i >> 1);     // m16n8k16, and mma.sp m16n8k32's 32 x 8 B
  else r = 2 * t + i;
}
EMU_AI void c_rc(int M, int lane, int i, int& r, int& c) {
  const int g = lane >> 2, t = lane & 3;
  if (M == 8) { r = g; c = 2 * t + i; return; }
  r = g + 8 * (i >> 1); c = 2 * t + (i & 1);
}

EMU_AI double elem(unsigned long long bits, int type) {
  if (type == F16) return (double)__builtin_bit_cast(_Float16, (unsigned short)bits);
  if (type == BF16) return (double)__builtin_bit_cast(float, (unsigned)(bits & 0xFFFF) << 16);
  if (type == F32) return (double)__builtin_bit_cast(float, (unsigned)bits);
  if (type == E4M3 || type == E5M2) return ::emu::fp8::decode((unsigned char)bits, type == E5M2);
  return __builtin_bit_cast(double, bits);
}
// element i of a fragment whose registers hold 32/bits elements each (low bits first)
template <int T> EMU_AI unsigned long long field(const unsigned long long* regs, int i) {
  constexpr int B = bits_of_type(T);
  if constexpr (B >= 32) return regs[i];
  else return regs[i / (32 / B)] >> (B * (i % (32 / B))) & ((1ull << B) - 1);
}

struct MmaPayload {
  unsigned long long a[8], b[4], c[4], d[4];  // register bits, as the lane holds them
  unsigned meta;                              // mma.sp: the lane's metadata register
  int sel;                                    // mma.sp: the sparsity selector
};
// mma.sp (PTX ISA 9.7.14.6.1 "Sparse matrix storage", 9.7.14.6.2.1/.2 "Matrix Fragments for sparse
// mma.m16n8k16 / m16n8k32 with .f16 and .bf16 types"): A is M x K with 2 non-zeros in every 4
// consecutive elements of a row; the fragment holds the M x K/2 non-zeros in the layout of a dense
// M x K/2 A (low half of a register first), and metadata says where they sit. In each quad of
// lanes, T = K/16 lanes hold it: lanes 4g + sel*T .. 4g + sel*T + T-1 (sel: the sparsity selector, 0..4/T-1);
// lane 4g + sel*T + h has, in bits 4j..4j+3 (j = 0..3), the two 2-bit column indices (low pair
// first) of the non-zeros of chunk 4h + j (columns 16h + 4j .. +3) of row g, and in bits 16 + 4j ..
// the same for row g + 8.
EMU_AI int sparse_meta_lane(int K, int sel, int r, int chunk) { return 4 * (r & 7) + sel * (K / 16) + chunk / 4; }
EMU_AI int sparse_meta_shift(int r, int chunk) { return (r >= 8 ? 16 : 0) + 4 * (chunk & 3); }

// one warp-wide mma: M x N x K, element types of D, A, B and C; SP: A is 2:4 sparse (mma.sp)
template <int M, int N, int K, int DT, int AT, int BT, int CT, bool SP> void mma_combine(void** pl, unsigned) {
  __emu_tensor_op(M, N, K);  // counted where it runs: the grade's tensor-core evidence
  constexpr bool f64 = AT == F64;
  constexpr int KA = SP ? K / 2 : K;  // columns of A the fragment holds
  constexpr int NA = M * KA / 32, NB = K * N / 32, NC = M * N / 32;
  typedef typename std::conditional<f64, double, float>::type acc_t;
  acc_t A[M * K], B[K * N], C[M * N];
  acc_t Ac[M * KA];  // A as the fragments hold it (the non-zeros, for mma.sp)
  // a keyed probe run's operand bits in their own type (emu_abi.h)
  unsigned long long HA[M * K], HAc[M * KA], HB[K * N];
  const bool keyed = __emu_tc_keyed != 0;
  for (int lane = 0; lane < 32; ++lane) {
    const MmaPayload* p = (const MmaPayload*)pl[lane];
    for (int i = 0; i < NA; ++i) {
      int r, c; a_rc(M, KA, bits_of_type(AT), lane, i, r, c);
      Ac[r * KA + c] = (acc_t)elem(field<AT>(p->a, i), AT) * (__emu_tc_double ? 2 : 1);  // a probe run's doubling is exact
      if (keyed) HAc[r * KA + c] = __emu_tc_bits(field<AT>(p->a, i), bits_of_type(AT));
    }
    for (int i = 0; i < NB; ++i) {
      int r, c; b_rc(M, K, bits_of_type(BT), lane, i, r, c);
      B[r * N + c] = (acc_t)elem(field<BT>(p->b, i), BT);
      if (keyed) HB[r * N + c] = __emu_tc_bits(field<BT>(p->b, i), bits_of_type(BT));
    }
    for (int i = 0; i < NC; ++i) {
      int r, c; c_rc(M, lane, i, r, c);
      C[r * N + c] = (acc_t)elem(field<CT>(p->c, i), CT);
    }
  }
  if constexpr (SP) {
    const int sel = ((const MmaPayload*)pl[0])->sel;
    for (int i = 0; i < M * K; ++i) A[i] = 0, HA[i] = 0;  // a zero's product is zero, flipped or not
    for (int r = 0; r < M; ++r)
      for (int j = 0; j < K / 4; ++j) {
        const unsigned meta = ((const MmaPayload*)pl[sparse_meta_lane(K, sel, r, j)])->meta;
        const unsigned nib = meta >> sparse_meta_shift(r, j) & 0xF;
        A[r * K + 4 * j + (nib & 3)] = Ac[r * KA + 2 * j];
        A[r * K + 4 * j + (nib >> 2)] = Ac[r * KA + 2 * j + 1];
        if (keyed) {
          HA[r * K + 4 * j + (nib & 3)] = HAc[r * KA + 2 * j];
          HA[r * K + 4 * j + (nib >> 2)] = HAc[r * KA + 2 * j + 1];
        }
      }
  } else {
    for (int i = 0; i < M * K; ++i) A[i] = Ac[i], HA[i] = keyed ? HAc[i] : 0;
  }
  if (keyed) {  // executed by the runner's parent, which holds the key (emu_abi.h)
    __emu_tc_instr ins{M, N, K, f64, A, B, HA, HB, C};
    __emu_tc_mma(&ins);
  } else {
    __emu_tc_sum<acc_t>(M, N, K, A, B, C, (const acc_t*)nullptr);
  }
  for (int lane = 0; lane < 32; ++lane) {
    MmaPayload* p = (MmaPayload*)pl[lane];
    for (int i = 0; i < 4; ++i) p->d[i] = 0;
    for (int i = 0; i < NC; ++i) {
      int r, c; c_rc(M, lane, i, r, c);
      const acc_t v = C[r * N + c];
      if constexpr (DT == F64) p->d[i] = __builtin_bit_cast(unsigned long long, (double)v);
      else if constexpr (DT == F32) p->d[i] = __builtin_bit_cast(unsigned, (float)v);
      else p->d[i / 2] |= (unsigned long long)__builtin_bit_cast(unsigned short, (_Float16)(float)v) << (16 * (i & 1));
    }
  }
}

// A lane that gives mma.sp metadata: each 4-bit field must name two different columns of its
// chunk (0b0000, 0b0101, 0b1010, 0b1111 are undefined behaviour, PTX ISA 9.7.14.6.1), in
// increasing order for mma.sp::ordered_metadata.
__attribute__((noinline)) inline void sparse_meta_rules(int K, unsigned meta, int sel, bool ordered, int line) {
  const int T = K / 16, lane = __emu_cur->lane;
  char msg[400];
  if (sel < 0 || sel >= 4 / T) {
    snprintf(msg, sizeof msg, "mma.sp m16n8k%d: sparsity selector %d is out of range (0..%d)", K, sel, 4 / T - 1);
    __emu_fault("crash", msg, 0, -1, -1, line);
  }
  if ((lane & 3) / T != sel) return;  // this lane's metadata is not read
  const int h = (lane & 3) % T, g = lane >> 2;
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j) {
      const unsigned nib = meta >> (16 * half + 4 * j) & 0xF, i0 = nib & 3, i1 = nib >> 2;
      if (i0 != i1 && (!ordered || i0 < i1)) continue;
      const int row = g + 8 * half, col = 16 * h + 4 * j;
      snprintf(msg, sizeof msg, "mma.sp: lane %d's metadata 0x%08x gives row %d, columns %d-%d the indices %u and %u "
               "(bits %d-%d): %s", lane, meta, row, col, col + 3, i0, i1, 16 * half + 4 * j, 16 * half + 4 * j + 3,
               i0 == i1 ? "the two non-zeros of a 2:4 chunk sit at two different columns (the PTX ISA leaves "
                          "0b0000, 0b0101, 0b1010, 0b1111 undefined)"
                        : "mma.sp::ordered_metadata needs the lower index first");
      __emu_fault("crash", msg, 0, -1, -1, line);
    }
}

// mma{.sp}.sync.aligned.mMnNkK.row.col.DT.AT.BT.CT: registers per operand as PTX lists them;
// `e` and `sel`: mma.sp's metadata register and sparsity selector (else null)
template <int M, int N, int K, int DT, int AT, int BT, int CT, bool SP = false, bool ORDERED = false>
EMU_AI void mma(int line, Slot* const* d, Slot* const* a, Slot* const* b, Slot* const* c,
                const Slot* e = nullptr, const Slot* sel = nullptr) {
  constexpr int KA = SP ? K / 2 : K;
  constexpr int RA = regs_of(M * KA, AT), RB = regs_of(K * N, BT), RC = regs_of(M * N, CT), RD = regs_of(M * N, DT);
  whole_warp(SP ? "mma.sp" : "mma.sync", line);
  MmaPayload p;
  for (int i = 0; i < RA; ++i) p.a[i] = a[i]->v;
  for (int i = 0; i < RB; ++i) p.b[i] = b[i]->v;
  for (int i = 0; i < RC; ++i) p.c[i] = c[i]->v;
  p.meta = 0; p.sel = 0;
  if constexpr (SP) {
    p.meta = (unsigned)e->v;
    p.sel = (int)sel->v;
    sparse_meta_rules(K, p.meta, p.sel, ORDERED, line);
  }
  if (__emu_check_uninit && AT != F64) {  // an all-ones element in A or B: poison from unwritten shared memory
    bool nan_in = false;
    constexpr int BA = bits_of_type(AT), BB = bits_of_type(BT);
    for (int i = 0; i < RA * 32 / BA; ++i) nan_in |= field<AT>(p.a, i) == (1ull << BA) - 1;
    for (int i = 0; i < RB * 32 / BB; ++i) nan_in |= field<BT>(p.b, i) == (1ull << BB) - 1;
    ::nvcuda::wmma::detail::used_unwritten(nan_in, SP ? "mma.sp" : "mma.sync", line);
  }
  __emu_warp_op(EMU_OP_PTX_MMA, 0xffffffffu, line, &p, &mma_combine<M, N, K, DT, AT, BT, CT, SP>);
  for (int i = 0; i < RD; ++i) set(d[i], p.d[i]);
}

// ---------------------------------------------------------------- fp8 conversions (sm_89+)
// cvt.rn.satfinite{.relu}.e4m3x2|e5m2x2.f32 d, a, b: a to the upper byte of d, b to the lower
// (PTX ISA, cvt; CUDA's __nv_cvt_float2_to_fp8x2 passes (y, x) so x lands low). .relu: a negative
// result is +0 (a NaN stays NaN). Saturation: out of range -> +-max; NaN -> 0x7F.
template <bool E5, bool RELU> EMU_AI unsigned char fp8_of(float f) {
  if (RELU && !(f != f) && f < 0) f = 0.0f;
  if (RELU && f == 0) f = 0.0f;  // -0 too
  return ::emu::fp8::encode_float(f, true, E5);
}
template <bool E5, bool RELU> EMU_AI void cvt_f32x2_to_fp8x2(Slot* d, const Slot* a, const Slot* b) {
  const float hi = __builtin_bit_cast(float, (unsigned)a->v), lo = __builtin_bit_cast(float, (unsigned)b->v);
  set(d, (unsigned long long)fp8_of<E5, RELU>(hi) << 8 | fp8_of<E5, RELU>(lo));
}
// cvt.rn.satfinite{.relu}.e4m3x2|e5m2x2.f16x2 d, a: the upper half of a to the upper byte of d
template <bool E5, bool RELU> EMU_AI void cvt_f16x2_to_fp8x2(Slot* d, const Slot* a) {
  const float lo = (float)__builtin_bit_cast(_Float16, (unsigned short)(a->v & 0xFFFF));
  const float hi = (float)__builtin_bit_cast(_Float16, (unsigned short)(a->v >> 16 & 0xFFFF));
  set(d, (unsigned long long)fp8_of<E5, RELU>(hi) << 8 | fp8_of<E5, RELU>(lo));
}
// cvt.rn.f16x2.e4m3x2|e5m2x2 d, a: each byte of a to a half of d, upper to upper (exact)
template <bool E5> EMU_AI void cvt_fp8x2_to_f16x2(Slot* d, const Slot* a) {
  set(d, (unsigned long long)::emu::fp8::to_half_bits((unsigned char)(a->v >> 8), E5) << 16
             | ::emu::fp8::to_half_bits((unsigned char)a->v, E5));
}

struct LdmPayload {
  const unsigned char* row;  // this lane's row address (lanes 0 .. 8*num-1), else 0
  unsigned out[4];
};
// (not observed by a traffic build: each lane's row is noted where the lane gives it, __emu_tr_note)
template <int NUM, bool TRANS> __attribute__((no_sanitize_address)) void ldmatrix_combine(void** pl, unsigned) {
  const int line = 0;
  unsigned short Mx[4][8][8];
  for (int j = 0; j < NUM; ++j)
    for (int r = 0; r < 8; ++r) {
      const unsigned char* q = ((const LdmPayload*)pl[8 * j + r])->row;
      memcpy(Mx[j][r], q, 16);
    }
  for (int lane = 0; lane < 32; ++lane) {
    LdmPayload* p = (LdmPayload*)pl[lane];
    const int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < NUM; ++j) {
      unsigned lo = TRANS ? Mx[j][2 * t][g] : Mx[j][g][2 * t];
      unsigned hi = TRANS ? Mx[j][2 * t + 1][g] : Mx[j][g][2 * t + 1];
      p->out[j] = lo | hi << 16;
    }
  }
  (void)line;
}

// A row ldmatrix reads (PTX ISA, ldmatrix: "If the generic address doesn't fall in .shared
// state space, then the behavior is undefined"): in shared memory, inside one array, and
// written by the block (the same rule as a plain read of a checked __shared__ array).
__attribute__((noinline)) inline void ldmatrix_row_rules(const unsigned char* row, int lane, int line) {
  __emu_region reg;
  __emu_region_of(row, &reg);
  char msg[400];
  if (reg.kind == 0) return;  // shared memory the runner cannot place (a __shared__ array of an unchecked build)
  if (reg.kind == 1 || reg.kind == 4) {
    if (reg.kind == 1) snprintf(msg, sizeof msg, "ldmatrix reads shared memory, but lane %d gives a row address in "
                                "argument '%s' (global memory)", lane, reg.name);
    else snprintf(msg, sizeof msg, "ldmatrix reads shared memory, but lane %d gives a row address in a local "
                  "variable of the thread", lane);
    __emu_fault("crash", msg, 0, -1, -1, line);
  }
  const long long byte = (long long)(row - (const unsigned char*)reg.base);
  if (byte < 0 || (unsigned long long)byte + 16 > reg.bytes) {
    snprintf(msg, sizeof msg, "ldmatrix: lane %d gives a row address at byte %lld of %s%s, whose 16 bytes reach past its "
             "end (%llu bytes)", lane, byte, reg.kind == 3 ? "the dynamic shared memory (extern __shared__)" : "__shared__ ",
             reg.kind == 3 ? "" : reg.name, reg.bytes);
    __emu_fault("shared-out-of-bounds", msg, reg.name, byte, (long long)reg.bytes, line);
  }
  if (!__emu_check_uninit) return;
  for (int h = 0; h < 8; ++h) {  // reported where mma.sync uses it (nvcuda::wmma::detail::used_unwritten)
    const unsigned char* q = row + 2 * h;
    const long long b = byte + 2 * h;
    if (reg.arr && reg.arr->shadow && reg.arr->itemsize && reg.arr->shadow[b / reg.arr->itemsize]) continue;
    if (q[0] != 0xFF || q[1] != 0xFF) continue;
    ::nvcuda::wmma::detail::shared_tile_unwritten("ldmatrix", &reg, b, 2, -1, -1, line);
    return;
  }
}

// ldmatrix.sync.aligned.m8n8.xNUM{.trans}{.shared}.b16 {d...}, [addr + off]
template <int NUM, bool TRANS, bool SHARED>
EMU_AI void ldmatrix(int line, Slot* const* d, const Slot* addr, long long off) {
  whole_warp("ldmatrix", line);
  LdmPayload p;
  p.row = 0;
  const int lane = __emu_cur->lane;
  if (lane < 8 * NUM) {  // sm_80+: only these lanes' addresses are read
    const unsigned long long a = addr->v + (unsigned long long)off;
    p.row = SHARED ? (const unsigned char*)from_shared(a & 0xFFFFFFFFull, "ldmatrix", line)
                   : (const unsigned char*)(uintptr_t)a;
    if ((uintptr_t)p.row & 15) {
      char msg[200];
      snprintf(msg, sizeof msg, "misaligned ldmatrix: lane %d gives a row address %llu bytes past a 16-byte "
               "boundary (each row of an 8x8 b16 matrix is 16 bytes, naturally aligned)", lane,
               (unsigned long long)((uintptr_t)p.row & 15));
      __emu_fault("misaligned-address", msg, 0, -1, -1, line);
    }
    if (__emu_cp_pending) ::emu::cp_touch(p.row, 16, 0, line);  // a cp.async not landed yet?
    ldmatrix_row_rules(p.row, lane, line);
    __emu_tr_note(p.row, 16, 0);  // the lane's 16-byte row, as one ldmatrix request (traffic view)
  }
  __emu_warp_op(EMU_OP_LDMATRIX, 0xffffffffu, line, &p, &ldmatrix_combine<NUM, TRANS>);
  for (int j = 0; j < NUM; ++j) set(d[j], p.out[j]);
}
}  // namespace ptx
}  // namespace emu

#endif  // EMU_PTX_H
