// nvcuda::wmma on the CPU emulator.
//
// Every fragment stores, per lane, exactly the elements that lane holds on sm_80/sm_90
// (FACTS.md "Fragment layout"), so a probe kernel that writes (lane, x[i]) sees what an
// H100 shows; built for Volta (-arch=compute_70: __CUDA_ARCH__ 700) the m16n16k16 fragments
// take Volta's layout instead (below). Turing (sm_75) has the sm_80 layout. Below sm_80 the
// bf16, tf32 and double fragments do not exist (NVRTC: "incomplete type"), here either.
// load/store/mma are warp collectives: all 32 lanes must reach them.
//
// Per-lane layouts, lane = 0..31, g = lane >> 2, t = lane & 3, (r, c) = (row, col) of the
// fragment's own matrix (A: MxK, B: KxN, accumulator: MxN):
//   m16n16k16 (half, bf16)  [verified on H200]
//     A: j = i % 8: r = g + 8*((j>>1)&1),  c = 2t + (j&1) + 8*(j>>2)
//     B: j = i % 8: r = 2t + (j&1) + 8*((j>>1)&1),  c = g + 8*(j>>2)
//     C: r = g + 8*((i>>1)&1),  c = 2t + (i&1) + 8*(i>>2)
//   m32n8k16 / m8n32k16: checked against the maps measured on an H200
//   (kernels/fragment_maps_sm90.json, tests/emu/test_emu_vs_sm90_maps.py):
//     m32n8k16 A (32x16): j = i%16: r = 16*(j>>3) + g + 8*((j>>1)&1), c = 2t + (j&1) + 8*((j>>2)&1)
//              B (16x8):  j = i%4:  r = 2t + (j&1) + 8*(j>>1), c = g
//              C (32x8):  r = 16*(i>>2) + g + 8*((i>>1)&1), c = 2t + (i&1)
//     m8n32k16 A (8x16):  j = i%4:  r = g, c = 2t + (j&1) + 8*(j>>1)
//              B (16x32): r = 2t + (i&1) + 8*((i>>2)&1), c = g + 8*((i>>1)&1) + 16*(i>>3)
//              C (8x32):  r = 2t + (i&1), c = g + 8*(i>>1)   (transposed, unlike every other shape)
//   m16n16k8 tf32: A (16x8): r = g + 8*(i&1), c = t + 4*(i>>1)   [FACTS: (g,t),(g+8,t),(g,t+4),(g+8,t+4)]
//                  B (8x16): r = t + 4*(i&1), c = g + 8*(i>>1);  C as m16n16k16
//   m8n8k4 double: A (8x4): (g, t);  B (4x8): (t, g);  C (8x8): (g, 2t + i)
//   Volta (sm_70), m16n16k16 half: the PTX ISA's mma.m8n8k4 .f16 layout (PTX ISA 8.7-9.2,
//   section 9.7.14.5.1 "Matrix Fragments for mma.m8n8k4 with .f16 floating point type")
//   applied per quad pair q = (lane>>2)&3 (lanes 4q..4q+3 "low", 4q+16..4q+19 "high",
//   hi = lane>>4) to the 8x8 output tile at rows r0 = 8*(q&1), cols c0 = 8*(q>>1), with K
//   in four k-steps s = i>>2 of 4 (j = i&3); t = lane&3. Every A/B slot is distinct (16):
//     A row_major: r = r0 + t + 4hi,  c = i          A col_major: r = r0 + j + 4hi, c = 4s + t
//     B row_major: r = 4s + t, c = c0 + j + 4hi      B col_major: r = i, c = c0 + t + 4hi
//     C half: r = r0 + t + 4hi, c = c0 + i           C float: r = r0 + (lane&1) + (i&2) + 4hi,
//                                                             c = c0 + (i&4) + (lane&2) + (i&1)
//   so on Volta row/col major changes which elements a lane holds. The same maps are used by
//   wmmae/wmma_extension (include/wmma_extension/detail/sm_70.hpp), measured on V100s;
//   m32n8k16 / m8n32k16 keep the sm_80 layout here (their Volta layout is not documented).
// num_elements: half A/B fragments have 16 elements for every shape (x[i] holds distinct
// element i % D, where D = rows*cols/32: so x[i+8] duplicates x[i] for m16n16k16); bf16
// A/B have D; tf32 A/B 4; double A/B 1; accumulators M*N/32 (8, or 2 for m8n8k4).
//
// mma_sync: D = A*B + C with exact products, accumulated in float (double for f64) in k
// order; a half accumulator is rounded to half at the end. tf32 inputs are truncated to
// 10 mantissa bits (what the hardware reads); use __float_to_tf32 to round them first.
#ifndef EMU_WMMA_H
#define EMU_WMMA_H

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
struct b1 {};
struct s4 {};
struct u4 {};
}  // namespace precision
namespace experimental { namespace precision { using tf32 = ::nvcuda::wmma::precision::tf32; } }

namespace detail {
template <class T> struct storage { typedef T type; };
template <> struct storage<precision::tf32> { typedef float type; };
template <class U> struct use_id;
template <> struct use_id<matrix_a> { static constexpr int value = 0; };
template <> struct use_id<matrix_b> { static constexpr int value = 1; };
template <> struct use_id<accumulator> { static constexpr int value = 2; };
// element kinds: 0 half, 1 bf16, 2 tf32, 3 double, 4 float
template <class T> struct tkind { static constexpr int value = -1; };
template <> struct tkind<__half> { static constexpr int value = 0; };
template <> struct tkind<__nv_bfloat16> { static constexpr int value = 1; };
template <> struct tkind<precision::tf32> { static constexpr int value = 2; };
template <> struct tkind<double> { static constexpr int value = 3; };
template <> struct tkind<float> { static constexpr int value = 4; };

constexpr int rows(int use, int m, int n, int k) { return use == 1 ? k : m; }
constexpr int cols(int use, int m, int n, int k) { return use == 0 ? k : n; }
// Volta's m16n16k16 fragments (see the table above); __CUDA_ARCH__ is the arch built for
constexpr bool volta_shape(int m, int n, int k) { return __CUDA_ARCH__ < 750 && m == 16 && n == 16 && k == 16; }
constexpr int distinct(int use, int m, int n, int k) {
  return (use < 2 && volta_shape(m, n, k)) ? 16 : rows(use, m, n, k) * cols(use, m, n, k) / 32;
}
// below sm_80 only the half shapes (k = 16) with half/float accumulators exist
constexpr bool exists_on_arch(int k, int tk) { return __CUDA_ARCH__ >= 800 || (k == 16 && (tk == 0 || tk == 4)); }
constexpr bool supported(int use, int m, int n, int k, int tk) {
  return (use < 2 && (tk == 0 || tk == 1) && k == 16 && ((m == 16 && n == 16) || (m == 32 && n == 8) || (m == 8 && n == 32))) ||
         (use < 2 && tk == 2 && m == 16 && n == 16 && k == 8) ||
         (use < 2 && tk == 3 && m == 8 && n == 8 && k == 4) ||
         (use == 2 && (tk == 4 || tk == 0) && k == 16 && ((m == 16 && n == 16) || (m == 32 && n == 8) || (m == 8 && n == 32))) ||
         (use == 2 && tk == 4 && m == 16 && n == 16 && k == 8) ||
         (use == 2 && tk == 3 && m == 8 && n == 8 && k == 4);
}
constexpr int num(int use, int m, int n, int k, int tk) {
  return (use < 2 && tk == 0) ? 16 : distinct(use, m, n, k);
}
// (r, c) of element i of `lane` in the fragment's own matrix; see the table above.
EMU_AI void coord(int use, int m, int n, int k, int lane, int i, int& r, int& c) {
  const int g = lane >> 2, t = lane & 3;
  if (m == 8 && n == 8 && k == 4) {
    if (use == 0) { r = g; c = t; } else if (use == 1) { r = t; c = g; } else { r = g; c = 2 * t + (i & 1); }
    return;
  }
  if (k == 8) {
    if (use == 0) { r = g + 8 * (i & 1); c = t + 4 * (i >> 1); return; }
    if (use == 1) { r = t + 4 * (i & 1); c = g + 8 * (i >> 1); return; }
    r = g + 8 * ((i >> 1) & 1); c = 2 * t + (i & 1) + 8 * (i >> 2); return;
  }
  const int j = i % distinct(use, m, n, k);
  if (m == 16) {
    if (use == 0) { r = g + 8 * ((j >> 1) & 1); c = 2 * t + (j & 1) + 8 * (j >> 2); }
    else if (use == 1) { r = 2 * t + (j & 1) + 8 * ((j >> 1) & 1); c = g + 8 * (j >> 2); }
    else { r = g + 8 * ((i >> 1) & 1); c = 2 * t + (i & 1) + 8 * (i >> 2); }
  } else if (m == 32) {
    if (use == 0) { r = 16 * (j >> 3) + g + 8 * ((j >> 1) & 1); c = 2 * t + (j & 1) + 8 * ((j >> 2) & 1); }
    else if (use == 1) { r = 2 * t + (j & 1) + 8 * (j >> 1); c = g; }
    else { r = 16 * (i >> 2) + g + 8 * ((i >> 1) & 1); c = 2 * t + (i & 1); }
  } else {  // m == 8, n == 32: B and C as measured on an H200 (kernels/fragment_maps_sm90.json)
    if (use == 0) { r = g; c = 2 * t + (j & 1) + 8 * (j >> 1); }
    else if (use == 1) { r = 2 * t + (j & 1) + 8 * ((j >> 2) & 1); c = g + 8 * ((j >> 1) & 1) + 16 * (j >> 3); }
    else { r = 2 * t + (i & 1); c = g + 8 * (i >> 1); }  // the transposed accumulator
  }
}
EMU_AI void coord_volta(int use, int tk, bool col, int lane, int i, int& r, int& c) {
  const int q = (lane >> 2) & 3, hi4 = 4 * (lane >> 4), t = lane & 3, r0 = 8 * (q & 1), c0 = 8 * (q >> 1);
  if (use == 0) {
    if (!col) { r = r0 + t + hi4; c = i; } else { r = r0 + (i & 3) + hi4; c = 4 * (i >> 2) + t; }
  } else if (use == 1) {
    if (!col) { r = 4 * (i >> 2) + t; c = c0 + (i & 3) + hi4; } else { r = i; c = c0 + t + hi4; }
  } else if (tk == 0) {  // half accumulator
    r = r0 + t + hi4; c = c0 + i;
  } else {  // float accumulator
    r = r0 + (lane & 1) + (i & 2) + hi4; c = c0 + (i & 4) + (lane & 2) + (i & 1);
  }
}
// (r, c) of element i of `lane` for a fragment of element kind tk; `col`: a col_major A/B
// (only Volta's layout depends on it)
EMU_AI void coord(int use, int m, int n, int k, int tk, bool col, int lane, int i, int& r, int& c) {
  if (volta_shape(m, n, k)) coord_volta(use, tk, col, lane, i, r, c);
  else coord(use, m, n, k, lane, i, r, c);
}
__attribute__((noinline)) inline void whole_warp(const char* what, int line) {
  unsigned n = __emu_bdim.x * __emu_bdim.y * __emu_bdim.z;
  unsigned have = n - (unsigned)__emu_cur->warp * 32u;
  if (have < 32) {
    char msg[256];
    snprintf(msg, sizeof msg, "wmma::%s needs all 32 lanes of a warp, but warp %d of this block has only %u threads "
             "(block of %u threads)", what, __emu_cur->warp, have, n);
    __emu_fault("partial-warp-collective", msg, 0, -1, -1, line);
  }
}
EMU_AI float tf32_trunc(float f) {
  unsigned u = __builtin_bit_cast(unsigned, f);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;
  return __builtin_bit_cast(float, u & 0xffffe000u);
}
template <class T> EMU_AI float in_f(T v) { return (float)v; }
EMU_AI double in_d(double v) { return v; }
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
 public:
  static_assert(detail::supported(detail::use_id<Use>::value, M, N, K, detail::tkind<T>::value),
                "this WMMA fragment shape/type is not supported (by CUDA on sm_80+, or by the CPU emulator)");
  static_assert(detail::exists_on_arch(K, detail::tkind<T>::value),
                "bf16, tf32 and double WMMA fragments need sm_80 or newer (this build targets an older arch)");
  typedef typename detail::storage<T>::type element_type;
  typedef element_type storage_element_type;
  enum { num_elements = detail::num(detail::use_id<Use>::value, M, N, K, detail::tkind<T>::value) };
  element_type x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L>
EMU_AI void fill_fragment(fragment<Use, M, N, K, T, L>& f, const typename detail::storage<T>::type& v) {
  for (int i = 0; i < fragment<Use, M, N, K, T, L>::num_elements; ++i) f.x[i] = v;
}

namespace detail {
// The rules a GPU enforces on load_matrix_sync / store_matrix_sync (CUDA C++ Programming
// Guide, "Warp Matrix Functions"): "mptr must be a 256-bit aligned pointer" and "ldm ... must
// be a multiple of 8 for __half element type or multiple of 4 for float element type (i.e.,
// multiple of 16 bytes in both cases)". A GPU does not check them: it computes wrong values
// (or faults), so the emulator says so. Alignment is judged from the start of the allocation
// the pointer points into (a GPU allocation starts 256-byte aligned).
__attribute__((noinline)) inline void mem_rules(const char* op, const void* p, unsigned ldm, unsigned esz,
                                                const char* ename, __emu_region* reg, int line) {
  __emu_region_of(p, reg);
  const unsigned long long off = reg->kind == 1 || reg->kind == 3
      ? (unsigned long long)((const char*)p - reg->base) : (unsigned long long)(uintptr_t)p;
  char msg[600], at[200] = "";
  if (reg->kind == 1) snprintf(at, sizeof at, ": it points at element %llu of '%s' (byte %llu)", off / esz, reg->name, off);
  else if (reg->kind == 2 && reg->arr) {
    char el[160]; ::emu::elem_text(el, sizeof el, reg->arr, (long long)(((const char*)p - reg->base) / (reg->arr->itemsize ? reg->arr->itemsize : 1)));
    snprintf(at, sizeof at, ": it points at __shared__ %s", el);
  } else if (reg->kind == 3) snprintf(at, sizeof at, ": it points at byte %llu of the dynamic shared memory", off);
  if (off & 31) {
    snprintf(msg, sizeof msg, "misaligned wmma::%s: the pointer must be 256-bit (32-byte) aligned, but it is %llu bytes past "
             "a 32-byte boundary%s. A GPU does not check this: it loads or stores wrong elements, or faults",
             op, off & 31, at);
    __emu_fault("misaligned-address", msg, reg->kind == 1 ? reg->name : 0, (long long)(off / esz), -1, line);
  }
  if ((ldm * esz) % 16) {
    snprintf(msg, sizeof msg, "wmma::%s with ldm = %u: ldm must be a multiple of %u for %s elements (rows %u bytes apart "
             "must be a multiple of 16 bytes, so every row of the tile starts 16-byte aligned). A GPU does not check "
             "this: it loads or stores wrong elements", op, ldm, 16 / esz, ename, ldm * esz);
    __emu_fault("wmma-ldm", msg, 0, ldm, -1, line);
  }
}
template <class E> constexpr const char* ename() {
  return std::is_same<E, __half>::value ? "half" : std::is_same<E, float>::value ? "float"
       : std::is_same<E, double>::value ? "double" : "bf16";
}
// One element of shared memory a WMMA load reads or a store writes: inside its array, and (a
// read) written by some thread of the block, judged as a plain read is: an element whose
// bytes still hold the block's poison (0xFF) and that no checked access wrote.
__attribute__((noinline, noreturn)) inline void shared_tile_oob(const char* op, const __emu_region* reg, long long byte,
                                                               unsigned esz, int r, int c, int line) {
  char msg[500], dims[96] = "";
  if (reg->arr) ::emu::dims_text(dims, sizeof dims, reg->arr);
  snprintf(msg, sizeof msg, "wmma::%s reaches outside %s%s%s: its tile element (%d, %d) is at byte %lld of it, which has "
           "%llu bytes (check the tile's first element and ldm against the array's declared size)",
           op, reg->kind == 3 ? "the dynamic shared memory (extern __shared__)" : "__shared__ ", reg->kind == 3 ? "" : reg->name,
           dims, r, c, byte, reg->bytes);
  __emu_fault("shared-out-of-bounds", msg, reg->name, byte / esz, (long long)(reg->bytes / esz), line);
}
// A read of unwritten shared memory is reported when its value is USED (by mma_sync): a
// pipelined kernel may load fragments from a buffer it never uses again (a prefetch past the
// last tile), which is harmless on a GPU. The thread's first such read in the block is kept.
struct Unwritten { unsigned bx, by, bz; int line; long long index, size; const char* arr; char msg[360]; };
inline Unwritten g_unwritten[1024];
__attribute__((noinline)) inline void shared_tile_unwritten(const char* op, const __emu_region* reg,
                                                            long long byte, unsigned esz, int r, int c, int line) {
  Unwritten& u = g_unwritten[__emu_cur->tid & 1023];
  if (u.line && u.bx == __emu_bidx.x && u.by == __emu_bidx.y && u.bz == __emu_bidx.z) return;
  char el[160];
  if (reg->arr) ::emu::elem_text(el, sizeof el, reg->arr, byte / (reg->arr->itemsize ? reg->arr->itemsize : esz));
  else snprintf(el, sizeof el, "dynamic shared memory (extern __shared__) byte %lld", byte);
  char te[48] = "";
  if (r >= 0) snprintf(te, sizeof te, " (tile element (%d, %d))", r, c);
  snprintf(u.msg, sizeof u.msg, "%s reads __shared__ %s%s, which no thread of this block has written: every element "
           "of the %s it loads must be written first (zeros where the matrix ends)",
           op, el, te, r >= 0 ? "tile" : "8x8 matrices");
  u.bx = __emu_bidx.x; u.by = __emu_bidx.y; u.bz = __emu_bidx.z; u.line = line;
  u.arr = reg->name; u.index = byte / esz; u.size = (long long)(reg->bytes / esz);
}
// At a tensor-core operation whose inputs hold NaN (poison: inputs are finite): the unwritten
// read that put it there, if this thread made one in this block.
inline void used_unwritten(bool nan_in, const char* by, int line) {
  if (!nan_in) return;
  Unwritten& u = g_unwritten[__emu_cur->tid & 1023];
  if (!u.line || u.bx != __emu_bidx.x || u.by != __emu_bidx.y || u.bz != __emu_bidx.z) return;
  char msg[520];
  snprintf(msg, sizeof msg, "%s; %s at line %d uses it", u.msg, by, line);
  __emu_fault("uninitialized-shared", msg, u.arr, u.index, u.size, u.line);
}
template <class E> EMU_AI void shared_elem(const char* op, const __emu_region* reg, const E* q, int r, int c, bool write,
                                           int line) {
  const long long byte = (long long)((const char*)q - reg->base);
  if (byte < 0 || (unsigned long long)byte + sizeof(E) > reg->bytes) shared_tile_oob(op, reg, byte, sizeof(E), r, c, line);
  if (write) {
    if (reg->arr && reg->arr->shadow) reg->arr->shadow[byte / sizeof(E)] = 1;
    return;
  }
  if (!__emu_check_uninit) return;
  if (reg->arr && reg->arr->shadow && reg->arr->shadow[byte / sizeof(E)]) return;
  const unsigned char* b = (const unsigned char*)q;
  for (unsigned k = 0; k < sizeof(E); ++k) if (b[k] != 0xFF) return;
  shared_tile_unwritten(op, reg, byte, sizeof(E), r, c, line);
}
// Each lane reads (writes) exactly its own elements; with a cp.async in flight in the block
// each of them is checked against the copies not yet landed (emu::cp_touch).
template <int USE, int M, int N, int K, class E, bool ROWMAJOR>
EMU_AI void load(E* x, int num, const E* p, unsigned ldm, int line) {
  const int lane = __emu_cur->lane;
  const bool inflight = __emu_cp_pending != 0;
  __emu_region reg;
  mem_rules("load_matrix_sync", p, ldm, sizeof(E), ename<E>(), &reg, line);
  const bool shared = reg.kind == 2 || reg.kind == 3;
  for (int i = 0; i < num; ++i) {
    int r, c; coord(USE, M, N, K, tkind<E>::value, USE < 2 && !ROWMAJOR, lane, i, r, c);
    if (num >= 2 && i >= num / 2) {  // x[i + num/2] may repeat x[i] (half A/B fragments): a copy, not a second load,
      int r0, c0;        // so the traffic view counts each element once, as the GPU's loads do
      coord(USE, M, N, K, tkind<E>::value, USE < 2 && !ROWMAJOR, lane, i - num / 2, r0, c0);
      if (r0 == r && c0 == c) { x[i] = x[i - num / 2]; continue; }
    }
    const E* q = ROWMAJOR ? p + (size_t)r * ldm + c : p + (size_t)c * ldm + r;
    if (inflight) ::emu::cp_touch(q, sizeof(E), 0, line);
    if (shared) shared_elem("wmma::load_matrix_sync", &reg, q, r, c, false, line);
    x[i] = *q;
  }
}
}  // namespace detail

template <int M, int N, int K, class T, class L>
EMU_AI void load_matrix_sync(fragment<matrix_a, M, N, K, T, L>& f, const typename detail::storage<T>::type* p,
                             unsigned ldm, int line = __builtin_LINE()) {
  detail::whole_warp("load_matrix_sync", line);
  detail::load<0, M, N, K, typename detail::storage<T>::type, std::is_same<L, row_major>::value>(f.x, f.num_elements, p, ldm, line);
  __emu_warp_op(EMU_OP_WMMA_LOAD, 0xffffffffu, line, 0, 0);
}
template <int M, int N, int K, class T, class L>
EMU_AI void load_matrix_sync(fragment<matrix_b, M, N, K, T, L>& f, const typename detail::storage<T>::type* p,
                             unsigned ldm, int line = __builtin_LINE()) {
  detail::whole_warp("load_matrix_sync", line);
  detail::load<1, M, N, K, typename detail::storage<T>::type, std::is_same<L, row_major>::value>(f.x, f.num_elements, p, ldm, line);
  __emu_warp_op(EMU_OP_WMMA_LOAD, 0xffffffffu, line, 0, 0);
}
template <int M, int N, int K, class T>
EMU_AI void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, const T* p, unsigned ldm, layout_t layout,
                             int line = __builtin_LINE()) {
  detail::whole_warp("load_matrix_sync", line);
  if (layout == mem_row_major) detail::load<2, M, N, K, T, true>(f.x, f.num_elements, p, ldm, line);
  else detail::load<2, M, N, K, T, false>(f.x, f.num_elements, p, ldm, line);
  __emu_warp_op(EMU_OP_WMMA_LOAD, 0xffffffffu, line, 0, 0);
}
template <int M, int N, int K, class T>
EMU_AI void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T, void>& f, unsigned ldm, layout_t layout,
                              int line = __builtin_LINE()) {
  detail::whole_warp("store_matrix_sync", line);
  const int lane = __emu_cur->lane;
  const bool inflight = __emu_cp_pending != 0;
  __emu_region reg;
  detail::mem_rules("store_matrix_sync", p, ldm, sizeof(T), detail::ename<T>(), &reg, line);
  const bool shared = reg.kind == 2 || reg.kind == 3;
  for (int i = 0; i < f.num_elements; ++i) {
    int r, c; detail::coord(2, M, N, K, detail::tkind<T>::value, false, lane, i, r, c);
    T* q = layout == mem_row_major ? p + (size_t)r * ldm + c : p + (size_t)c * ldm + r;
    if (inflight) ::emu::cp_touch(q, sizeof(T), 1, line);
    if (shared) detail::shared_elem("store_matrix_sync", &reg, q, r, c, true, line);
    *q = f.x[i];
  }
  __emu_warp_op(EMU_OP_WMMA_STORE, 0xffffffffu, line, 0, 0);
}

// A static __shared__ array (emu::SharedArray, or one row of it, emu::View) passed where an
// accumulator load/store deduces T from the pointer: the same call on its storage (the array's
// element checks stay on: WMMA marks what it writes, see detail::shared_elem).
template <int M, int N, int K, class T, size_t... D>
EMU_AI void store_matrix_sync(::emu::SharedArray<T, D...>& p, const fragment<accumulator, M, N, K, T, void>& f,
                              unsigned ldm, layout_t layout, int line = __builtin_LINE()) {
  store_matrix_sync(p.store, f, ldm, layout, line);
}
template <int M, int N, int K, class T, size_t... D>
EMU_AI void store_matrix_sync(const ::emu::View<T, D...>& p, const fragment<accumulator, M, N, K, T, void>& f,
                              unsigned ldm, layout_t layout, int line = __builtin_LINE()) {
  store_matrix_sync(p.p, f, ldm, layout, line);
}
template <int M, int N, int K, class T, size_t... D>
EMU_AI void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, ::emu::SharedArray<T, D...>& p, unsigned ldm,
                             layout_t layout, int line = __builtin_LINE()) {
  load_matrix_sync(f, (const T*)p.store, ldm, layout, line);
}
template <int M, int N, int K, class T, size_t... D>
EMU_AI void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, const ::emu::View<T, D...>& p, unsigned ldm,
                             layout_t layout, int line = __builtin_LINE()) {
  load_matrix_sync(f, (const T*)p.p, ldm, layout, line);
}

namespace detail {
template <class F> struct frag_col { static constexpr bool value = false; };
template <class U, int M, int N, int K, class T> struct frag_col<fragment<U, M, N, K, T, col_major>> {
  static constexpr bool value = true;
};
struct MmaPayload { void* d; const void* a; const void* b; const void* c; };
// an operand's bits for a keyed probe run: those of its storage type (half, bf16, float for
// tf32, double), as the grader reads the input it came from
template <class T> unsigned long long tc_bits_of(const T& x) {
  unsigned long long bits = 0;
  __builtin_memcpy(&bits, &x, sizeof(T));
  return __emu_tc_bits(bits, 8 * (int)sizeof(T));
}
template <class FD, class FA, class FB, class FC, int M, int N, int K, class TA, class TD>
void mma_combine(void** pl, unsigned) {
  __emu_tensor_op(M, N, K);  // counted where it runs: the grade's tensor-core evidence
  typedef typename std::conditional<std::is_same<TD, double>::value, double, float>::type acc_t;
  acc_t A[M * K], B[K * N], C[M * N];
  unsigned long long HA[M * K], HB[K * N];  // a keyed probe run's operand bits (emu_abi.h)
  const bool keyed = __emu_tc_keyed != 0;
  const int da = distinct(0, M, N, K), db = distinct(1, M, N, K);
  for (int lane = 0; lane < 32; ++lane) {
    const MmaPayload* p = (const MmaPayload*)pl[lane];
    const FA* a = (const FA*)p->a; const FB* b = (const FB*)p->b; const FC* c = (const FC*)p->c;
    for (int i = 0; i < da; ++i) {
      int r, cc; coord(0, M, N, K, tkind<typename FA::element_type>::value, frag_col<FA>::value, lane, i, r, cc);
      acc_t v = (acc_t)a->x[i] * (__emu_tc_double ? 2 : 1);  // doubling is exact
      if (std::is_same<TA, precision::tf32>::value) v = tf32_trunc((float)v);
      A[r * K + cc] = v;
      if (keyed) HA[r * K + cc] = tc_bits_of(a->x[i]);
    }
    for (int i = 0; i < db; ++i) {
      int r, cc; coord(1, M, N, K, tkind<typename FB::element_type>::value, frag_col<FB>::value, lane, i, r, cc);
      acc_t v = (acc_t)b->x[i];
      if (std::is_same<TA, precision::tf32>::value) v = tf32_trunc((float)v);
      B[r * N + cc] = v;
      if (keyed) HB[r * N + cc] = tc_bits_of(b->x[i]);
    }
    for (int i = 0; i < FC::num_elements; ++i) {
      int r, cc; coord(2, M, N, K, tkind<typename FC::element_type>::value, false, lane, i, r, cc);
      C[r * N + cc] = (acc_t)c->x[i];
    }
  }
  if (keyed) {  // executed by the runner's parent, which holds the key (emu_abi.h)
    __emu_tc_instr ins{M, N, K, std::is_same<acc_t, double>::value, A, B, HA, HB, C};
    __emu_tc_mma(&ins);
  } else {
    __emu_tc_sum<acc_t>(M, N, K, A, B, C, (const acc_t*)nullptr);
  }
  for (int lane = 0; lane < 32; ++lane) {
    FD* d = (FD*)((const MmaPayload*)pl[lane])->d;
    for (int i = 0; i < FD::num_elements; ++i) {
      int r, cc; coord(2, M, N, K, tkind<typename FD::element_type>::value, false, lane, i, r, cc);
      d->x[i] = (typename FD::element_type)C[r * N + cc];
    }
  }
}
}  // namespace detail

template <int M, int N, int K, class TA, class LA, class LB, class TC, class TD>
EMU_AI void mma_sync(fragment<accumulator, M, N, K, TD, void>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                     const fragment<matrix_b, M, N, K, TA, LB>& b, const fragment<accumulator, M, N, K, TC, void>& c,
                     bool satf = false, int line = __builtin_LINE()) {
  (void)satf;
  detail::whole_warp("mma_sync", line);
  if (__emu_check_uninit) {
    bool nan_in = false;
    for (int i = 0; i < a.num_elements; ++i) nan_in |= (double)a.x[i] != (double)a.x[i];
    for (int i = 0; i < b.num_elements; ++i) nan_in |= (double)b.x[i] != (double)b.x[i];
    for (int i = 0; i < c.num_elements; ++i) nan_in |= (double)c.x[i] != (double)c.x[i];
    detail::used_unwritten(nan_in, "wmma::mma_sync", line);
  }
  detail::MmaPayload p{&d, &a, &b, &c};
  __emu_warp_op(EMU_OP_WMMA_MMA, 0xffffffffu, line, &p,
                &detail::mma_combine<fragment<accumulator, M, N, K, TD, void>, fragment<matrix_a, M, N, K, TA, LA>,
                                     fragment<matrix_b, M, N, K, TA, LB>, fragment<accumulator, M, N, K, TC, void>,
                                     M, N, K, TA, TD>);
}

// round to tf32 (10 explicit mantissa bits), round-to-nearest-even
EMU_AI float __float_to_tf32(float f) {
  unsigned u = __builtin_bit_cast(unsigned, f);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;  // inf / nan unchanged
  u += 0x1000u;  // cvt.rna.tf32.f32 (crt/mma.h): nearest, ties away from zero
  return __builtin_bit_cast(float, u & 0xffffe000u);
}
}  // namespace wmma
}  // namespace nvcuda

#endif  // EMU_WMMA_H
