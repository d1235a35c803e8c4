// FP8 on the CPU emulator: the types and conversions of CUDA's <cuda_fp8.h>, bit-exact.
//
// Formats (OCP 8-bit floating point specification, "OFP8", v1.0; CUDA's __NV_E4M3 / __NV_E5M2):
//   e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits. No infinities; S.1111.111 (0x7F, 0xFF) is
//         NaN; largest 0x7E = 448; smallest normal 2^-6, smallest subnormal 2^-9.
//   e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like: S.11111.00 is +-inf,
//         S.11111.{01,10,11} NaN; largest 0x7B = 57344; smallest normal 2^-14, subnormal 2^-16.
// Conversion to fp8 rounds to nearest, ties to even, with subnormal results, as CUDA's header
// describes __nv_cvt_double_to_fp8: a magnitude above max + 1/2 ulp (e4m3 464, e5m2 61440, and
// infinities) becomes +-max with __NV_SATFINITE, and with __NV_NOSAT NaN (e4m3) or +-inf (e5m2);
// a NaN becomes 0x7F, sign and payload dropped, from a float or a double (on an H100, 2026-11-27:
// cuda_fp8.hpp's software path would keep a double NaN's sign for e4m3 and its top mantissa bits
// for e5m2; the GPU's code did not). PTX `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`
// (what CUDA itself uses on sm_89+ for __NV_SATFINITE) is the float path with saturation.
// Conversion from fp8 to half is exact; a NaN becomes 0x7FFF (sign dropped), e5m2 +-inf +-inf.
// tests/emu/test_emu_fp8.py checks all of this against its own reference over every code.
#ifndef EMU_FP8_H
#define EMU_FP8_H

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short int __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

namespace emu {
namespace fp8 {
// the code of x (any double), rounded to nearest even; `e5` for e5m2
inline unsigned char encode(double x, bool saturate, bool e5) {
  const int mbits = e5 ? 2 : 3, emin = e5 ? -14 : -6, bias = e5 ? 15 : 7;
  const double maxnorm = e5 ? 57344.0 : 448.0;
  const unsigned long long xb = __builtin_bit_cast(unsigned long long, x);
  const unsigned char sign = (unsigned char)((xb >> 63) << 7);
  if (std::isnan(x)) return 0x7F;  // both formats, as the H100 gave it (see the top)
  const double a = fabs(x);
  double r = 0.0;
  if (!std::isinf(a) && a != 0.0) {
    const int e = ilogb(a) < emin ? emin : ilogb(a);
    const double q = ldexp(1.0, e - mbits);  // the spacing of fp8 values around a
    r = nearbyint(a / q) * q;                // a / q is exact; nearbyint rounds half to even
  }
  if (std::isinf(a) || r > maxnorm) {
    if (saturate) return (unsigned char)((e5 ? 0x7B : 0x7E) | sign);
    return (unsigned char)((e5 ? 0x7C : 0x7F) | sign);
  }
  if (r == 0.0) return sign;  // zero, or below half the smallest subnormal: a signed zero
  const int e = ilogb(r);
  if (e < emin) return (unsigned char)(sign | (int)ldexp(r, -(emin - mbits)));  // subnormal
  const int mant = (int)ldexp(r, mbits - e) - (1 << mbits);
  return (unsigned char)(sign | ((e + bias) << mbits) | mant);
}
// float inputs: a NaN is made canonical first (CUDA's __nv_cvt_float_to_fp8)
inline unsigned char encode_float(float x, bool saturate, bool e5) {
  return encode(std::isnan(x) ? (double)__builtin_bit_cast(float, 0x7FFFFFFFu) : (double)x, saturate, e5);
}
// the value of a code
inline double decode(unsigned char c, bool e5) {
  const double s = (c & 0x80) ? -1.0 : 1.0;
  if (e5) {
    const int ex = (c >> 2) & 31, m = c & 3;
    if (ex == 31) return m ? NAN : s * INFINITY;
    return s * (ex ? ldexp(4 + m, ex - 17) : ldexp(m, -16));
  }
  const int ex = (c >> 3) & 15, m = c & 7;
  if (ex == 15 && m == 7) return NAN;
  return s * (ex ? ldexp(8 + m, ex - 10) : ldexp(m, -9));
}
inline unsigned short to_half_bits(unsigned char c, bool e5) {
  const double v = decode(c, e5);
  if (std::isnan(v)) return 0x7FFF;
  return __builtin_bit_cast(unsigned short, (_Float16)v);  // exact: both formats fit in half
}
// operator float(): through half, as cuda_fp8.hpp does, except a NaN: on an H100 (2026-11-27) every NaN
// code of both formats gave 0x7FFFFFFF, where the half path's float is 0x7FFFE000 (the first run saw
// e4m3's, the second e5m2's: the GPU test now names every differing output at once, in hex).
inline bool is_nan(unsigned char c, bool e5) { return e5 ? (c & 0x7F) > 0x7C : (c & 0x7F) == 0x7F; }
// a code to float, the one way for the scalar, x2 and x4 types (the x4 type's float4 gave 0x7FFFFFFF
// for NaN codes on the H100 too, 2026-11-27; the x2 type's float2 is the same header code)
inline float to_float(unsigned char c, bool e5) {
  return is_nan(c, e5) ? __builtin_bit_cast(float, 0x7FFFFFFFu) : (float)__half(__half_raw{to_half_bits(c, e5)});
}
}  // namespace fp8
}  // namespace emu

// ---------------------------------------------------------------- the C API of cuda_fp8.h
EMU_AI __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t s, __nv_fp8_interpretation_t t) {
  return ::emu::fp8::encode(x, s == __NV_SATFINITE, t == __NV_E5M2);
}
EMU_AI __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t s, __nv_fp8_interpretation_t t) {
  return ::emu::fp8::encode_float(x, s == __NV_SATFINITE, t == __NV_E5M2);
}
EMU_AI __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t s, __nv_fp8_interpretation_t t) {
  return (__nv_fp8x2_storage_t)(__nv_cvt_double_to_fp8(x.y, s, t) << 8 | __nv_cvt_double_to_fp8(x.x, s, t));
}
EMU_AI __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t s, __nv_fp8_interpretation_t t) {
  return (__nv_fp8x2_storage_t)(__nv_cvt_float_to_fp8(x.y, s, t) << 8 | __nv_cvt_float_to_fp8(x.x, s, t));
}
EMU_AI __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t t) {
  return __nv_cvt_float_to_fp8((float)__half(x), s, t);
}
EMU_AI __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw r, __nv_saturation_t s, __nv_fp8_interpretation_t t) {
  const __half2 x(r);
  return (__nv_fp8x2_storage_t)(__nv_cvt_float_to_fp8((float)x.y, s, t) << 8 | __nv_cvt_float_to_fp8((float)x.x, s, t));
}
EMU_AI __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t s,
                                                      __nv_fp8_interpretation_t t) {
  return __nv_cvt_float_to_fp8((float)__nv_bfloat16(x), s, t);
}
EMU_AI __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162 x, __nv_saturation_t s,
                                                           __nv_fp8_interpretation_t t) {
  return (__nv_fp8x2_storage_t)(__nv_cvt_float_to_fp8((float)x.y, s, t) << 8 | __nv_cvt_float_to_fp8((float)x.x, s, t));
}
EMU_AI __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t t) {
  return __half_raw{::emu::fp8::to_half_bits(x, t == __NV_E5M2)};
}
EMU_AI __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t t) {
  return __half2(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x & 0xFF), t)),
                 __half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x >> 8), t)));
}

// ---------------------------------------------------------------- the types
// Constructors round with __NV_SATFINITE, as CUDA's do; conversions out go through half (exact).
#define EMU_FP8_SCALAR(NAME, INTERP)                                                                           \
  struct __attribute__((aligned(1))) NAME {                                                                    \
    __nv_fp8_storage_t __x;                                                                                    \
    NAME() = default;                                                                                          \
    explicit NAME(const __half f) : __x(__nv_cvt_halfraw_to_fp8(__half_raw(f), __NV_SATFINITE, INTERP)) {}    \
    explicit NAME(const __nv_bfloat16 f)                                                                       \
        : __x(__nv_cvt_float_to_fp8((float)f, __NV_SATFINITE, INTERP)) {}                                      \
    explicit NAME(const float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, INTERP)) {}                   \
    explicit NAME(const double f) : __x(__nv_cvt_double_to_fp8(f, __NV_SATFINITE, INTERP)) {}                 \
    template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>                     \
    explicit NAME(const I v) : NAME((float)v) {}                                                               \
    explicit operator __half() const { return __half(__nv_cvt_fp8_to_halfraw(__x, INTERP)); }                 \
    explicit operator float() const { return ::emu::fp8::to_float(__x, INTERP == __NV_E5M2); }                \
    explicit operator double() const { return (double)(float)*this; }                                         \
    explicit operator __nv_bfloat16() const { return __nv_bfloat16((float)*this); }                           \
    explicit operator bool() const { return (__x & 0x7F) != 0; }                                              \
    template <class I, typename std::enable_if<std::is_integral<I>::value && !std::is_same<I, bool>::value,   \
                                               int>::type = 0>                                                 \
    explicit operator I() const {                                                                              \
      const float f = (float)*this;                                                                            \
      return f != f ? (I)0 : (I)f;                                                                             \
    }                                                                                                          \
  };
EMU_FP8_SCALAR(__nv_fp8_e4m3, __NV_E4M3)
EMU_FP8_SCALAR(__nv_fp8_e5m2, __NV_E5M2)
#undef EMU_FP8_SCALAR

#define EMU_FP8_X2(NAME, INTERP)                                                                               \
  struct __attribute__((aligned(2))) NAME {                                                                    \
    __nv_fp8x2_storage_t __x;                                                                                  \
    NAME() = default;                                                                                          \
    explicit NAME(const __half2 f) : __x(__nv_cvt_halfraw2_to_fp8x2(f, __NV_SATFINITE, INTERP)) {}            \
    explicit NAME(const __nv_bfloat162 f) : __x(__nv_cvt_bfloat16raw2_to_fp8x2(f, __NV_SATFINITE, INTERP)) {} \
    explicit NAME(const float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, INTERP)) {}               \
    explicit NAME(const double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, INTERP)) {}             \
    explicit operator __half2() const { return __nv_cvt_fp8x2_to_halfraw2(__x, INTERP); }                     \
    explicit operator float2() const {                                                                         \
      return make_float2(::emu::fp8::to_float((unsigned char)(__x & 0xFF), INTERP == __NV_E5M2),               \
                         ::emu::fp8::to_float((unsigned char)(__x >> 8), INTERP == __NV_E5M2));                \
    }                                                                                                          \
  };
EMU_FP8_X2(__nv_fp8x2_e4m3, __NV_E4M3)
EMU_FP8_X2(__nv_fp8x2_e5m2, __NV_E5M2)
#undef EMU_FP8_X2

#define EMU_FP8_X4(NAME, INTERP)                                                                               \
  struct __attribute__((aligned(4))) NAME {                                                                    \
    __nv_fp8x4_storage_t __x;                                                                                  \
    NAME() = default;                                                                                          \
    explicit NAME(const __half2 lo, const __half2 hi)                                                          \
        : __x((unsigned)__nv_cvt_halfraw2_to_fp8x2(hi, __NV_SATFINITE, INTERP) << 16 |                        \
              __nv_cvt_halfraw2_to_fp8x2(lo, __NV_SATFINITE, INTERP)) {}                                       \
    explicit NAME(const __nv_bfloat162 lo, const __nv_bfloat162 hi)                                            \
        : __x((unsigned)__nv_cvt_bfloat16raw2_to_fp8x2(hi, __NV_SATFINITE, INTERP) << 16 |                    \
              __nv_cvt_bfloat16raw2_to_fp8x2(lo, __NV_SATFINITE, INTERP)) {}                                   \
    explicit NAME(const float4 f)                                                                              \
        : __x((unsigned)__nv_cvt_float2_to_fp8x2(make_float2(f.z, f.w), __NV_SATFINITE, INTERP) << 16 |       \
              __nv_cvt_float2_to_fp8x2(make_float2(f.x, f.y), __NV_SATFINITE, INTERP)) {}                      \
    explicit operator float4() const {                                                                         \
      const bool e5 = INTERP == __NV_E5M2;                                                                     \
      return make_float4(::emu::fp8::to_float((unsigned char)(__x & 0xFF), e5),                                \
                         ::emu::fp8::to_float((unsigned char)(__x >> 8 & 0xFF), e5),                           \
                         ::emu::fp8::to_float((unsigned char)(__x >> 16 & 0xFF), e5),                          \
                         ::emu::fp8::to_float((unsigned char)(__x >> 24), e5));                                \
    }                                                                                                          \
  };
EMU_FP8_X4(__nv_fp8x4_e4m3, __NV_E4M3)
EMU_FP8_X4(__nv_fp8x4_e5m2, __NV_E5M2)
#undef EMU_FP8_X4

#endif  // EMU_FP8_H
