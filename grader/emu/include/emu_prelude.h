// CUDA C++ built-ins for the CPU emulator. A kernel source is compiled by g++ with this
// header included first; <cuda_fp16.h>, <mma.h>, ... resolve to stubs that include it.
// Bump EMU_PRELUDE_VERSION when behaviour changes (it keys the compile cache).
#ifndef EMU_PRELUDE_H
#define EMU_PRELUDE_H
#define EMU_PRELUDE_VERSION 10

#include <assert.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <climits>
#include <cfloat>
#include <type_traits>
#include <utility>
#include "emu_abi.h"

#define EMU_AI inline __attribute__((always_inline))

// ---------------------------------------------------------------- keywords
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
#define __grid_constant__
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#define __CUDACC_RTC__ 1
#ifndef __CUDA_ARCH__  // the arch asked for (-arch=compute_70 -> -D__CUDA_ARCH__=700, compiler.py); else Hopper
#define __CUDA_ARCH__ 900
#endif
#define __CUDA_EMU__ 1
#define CUDART_VERSION 13000
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0

// ---------------------------------------------------------------- built-in variables
typedef __emu_uint3 uint3;
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
#define threadIdx (__emu_cur->tidx)
#define blockIdx (__emu_bidx)
#define blockDim (__emu_bdim)
#define gridDim (__emu_gdim)
#define warpSize 32

// ---------------------------------------------------------------- synchronisation
#define __syncthreads() __emu_syncthreads(__LINE__)
#define __syncthreads_count(p) __emu_syncthreads_red(__LINE__, 0, (p) ? 1 : 0)
#define __syncthreads_and(p) __emu_syncthreads_red(__LINE__, 1, (p) ? 1 : 0)
#define __syncthreads_or(p) __emu_syncthreads_red(__LINE__, 2, (p) ? 1 : 0)
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() {}
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __nanosleep(unsigned) {}
inline long long clock64() { return __emu_clock(); }
#define clock() ((long)__emu_clock())
[[noreturn]] inline void __trap() { __emu_fault("trap", "__trap() was called", 0, -1, -1, 0); }
[[noreturn]] inline void __emu_assert_fail(const char* cond, int line) {
  char msg[512];
  snprintf(msg, sizeof msg, "assertion failed: assert(%s)", cond);
  __emu_fault("assert", msg, 0, -1, -1, line);
}
#undef assert
#define assert(e) ((e) ? (void)0 : __emu_assert_fail(#e, __LINE__))

// printf from device code is captured and returned as EmuResult.stdout
#define printf __emu_printf
namespace std { using ::__emu_printf; }

// ---------------------------------------------------------------- vector types
#define EMU_VEC2(T, N, A) struct __attribute__((aligned(A))) N##2 { T x, y; }; \
  inline constexpr N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define EMU_VEC3(T, N) struct N##3 { T x, y, z; }; \
  inline constexpr N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define EMU_VEC4(T, N, A) struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
  inline constexpr N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define EMU_VEC1(T, N) struct N##1 { T x; }; inline constexpr N##1 make_##N##1(T x) { return N##1{x}; }
EMU_VEC1(float, float) EMU_VEC2(float, float, 8) EMU_VEC3(float, float) EMU_VEC4(float, float, 16)
EMU_VEC1(double, double) EMU_VEC2(double, double, 16) EMU_VEC3(double, double) EMU_VEC4(double, double, 16)
EMU_VEC1(int, int) EMU_VEC2(int, int, 8) EMU_VEC3(int, int) EMU_VEC4(int, int, 16)
EMU_VEC1(unsigned, uint) EMU_VEC2(unsigned, uint, 8) EMU_VEC4(unsigned, uint, 16)
inline constexpr uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
EMU_VEC2(short, short, 4) EMU_VEC4(short, short, 8)
EMU_VEC2(unsigned short, ushort, 4) EMU_VEC4(unsigned short, ushort, 8)
EMU_VEC2(signed char, char, 2) EMU_VEC4(signed char, char, 4)
EMU_VEC2(unsigned char, uchar, 2) EMU_VEC4(unsigned char, uchar, 4)
EMU_VEC2(long long, longlong, 16) EMU_VEC2(unsigned long long, ulonglong, 16)

// ---------------------------------------------------------------- half (bit-exact RNE)
struct __half_raw { unsigned short x; };
struct __half {
  _Float16 __x;
  __half() = default;
  constexpr __half(const __half_raw& r) : __x(__builtin_bit_cast(_Float16, r.x)) {}
  constexpr __half(float f) : __x((_Float16)f) {}
  constexpr __half(double d) : __x((_Float16)d) {}
  constexpr __half(int i) : __x((_Float16)i) {}
  constexpr __half(unsigned i) : __x((_Float16)i) {}
  constexpr __half(short i) : __x((_Float16)i) {}
  constexpr __half(unsigned short i) : __x((_Float16)i) {}
  constexpr __half(long long i) : __x((_Float16)i) {}
  constexpr __half(unsigned long long i) : __x((_Float16)i) {}
  constexpr __half(long i) : __x((_Float16)i) {}
  constexpr __half(unsigned long i) : __x((_Float16)i) {}
  constexpr operator float() const { return (float)__x; }
  constexpr operator __half_raw() const { return __half_raw{__builtin_bit_cast(unsigned short, __x)}; }
  __half& operator=(const __half_raw& r) { __x = __builtin_bit_cast(_Float16, r.x); return *this; }
};
typedef __half half;
static_assert(sizeof(__half) == 2, "half must be 2 bytes");
EMU_AI __half __emu_h(double d) { __half h; h.__x = (_Float16)d; return h; }
// arithmetic in double, rounded once to half: +,-,*,/ of two halves are exact or
// innocuously double-rounded in double, so the result is the RNE half result.
EMU_AI __half operator+(const __half& a, const __half& b) { return __emu_h((double)a.__x + (double)b.__x); }
EMU_AI __half operator-(const __half& a, const __half& b) { return __emu_h((double)a.__x - (double)b.__x); }
EMU_AI __half operator*(const __half& a, const __half& b) { return __emu_h((double)a.__x * (double)b.__x); }
EMU_AI __half operator/(const __half& a, const __half& b) { return __emu_h((double)a.__x / (double)b.__x); }
EMU_AI __half operator-(const __half& a) { __half h; h.__x = -a.__x; return h; }
EMU_AI __half operator+(const __half& a) { return a; }
EMU_AI __half& operator+=(__half& a, const __half& b) { a = a + b; return a; }
EMU_AI __half& operator-=(__half& a, const __half& b) { a = a - b; return a; }
EMU_AI __half& operator*=(__half& a, const __half& b) { a = a * b; return a; }
EMU_AI __half& operator/=(__half& a, const __half& b) { a = a / b; return a; }
EMU_AI __half& operator++(__half& a) { a = a + __half(1.0f); return a; }
EMU_AI __half& operator--(__half& a) { a = a - __half(1.0f); return a; }
EMU_AI __half operator++(__half& a, int) { __half r = a; ++a; return r; }
EMU_AI __half operator--(__half& a, int) { __half r = a; --a; return r; }
EMU_AI bool operator==(const __half& a, const __half& b) { return a.__x == b.__x; }
EMU_AI bool operator!=(const __half& a, const __half& b) { return a.__x != b.__x; }
EMU_AI bool operator<(const __half& a, const __half& b) { return a.__x < b.__x; }
EMU_AI bool operator>(const __half& a, const __half& b) { return a.__x > b.__x; }
EMU_AI bool operator<=(const __half& a, const __half& b) { return a.__x <= b.__x; }
EMU_AI bool operator>=(const __half& a, const __half& b) { return a.__x >= b.__x; }

EMU_AI float __half2float(__half h) { return (float)h.__x; }
EMU_AI __half __float2half(float f) { return __half(f); }
EMU_AI __half __float2half_rn(float f) { return __half(f); }
EMU_AI __half __double2half(double d) { return __half(d); }
EMU_AI __half __float2half_rz(float f) {
  __half h(f);
  float back = (float)h.__x;
  if (std::isfinite(f) && fabsf(back) > fabsf(f)) {  // step one ulp toward zero
    unsigned short b = __builtin_bit_cast(unsigned short, h.__x); b -= 1; h.__x = __builtin_bit_cast(_Float16, b);
  } else if (std::isinf(back) && std::isfinite(f)) {
    unsigned short b = __builtin_bit_cast(unsigned short, h.__x); b -= 1; h.__x = __builtin_bit_cast(_Float16, b);
  }
  return h;
}
EMU_AI __half __int2half_rn(int i) { return __half(i); }
EMU_AI __half __uint2half_rn(unsigned i) { return __half(i); }
EMU_AI int __half2int_rn(__half h) { return (int)nearbyintf((float)h.__x); }
EMU_AI int __half2int_rz(__half h) { return (int)(float)h.__x; }
EMU_AI unsigned short __half_as_ushort(__half h) { return __builtin_bit_cast(unsigned short, h.__x); }
EMU_AI short __half_as_short(__half h) { return __builtin_bit_cast(short, h.__x); }
EMU_AI __half __ushort_as_half(unsigned short u) { __half h; h.__x = __builtin_bit_cast(_Float16, u); return h; }
EMU_AI __half __short_as_half(short u) { __half h; h.__x = __builtin_bit_cast(_Float16, u); return h; }
EMU_AI __half __hadd(__half a, __half b) { return a + b; }
EMU_AI __half __hsub(__half a, __half b) { return a - b; }
EMU_AI __half __hmul(__half a, __half b) { return a * b; }
EMU_AI __half __hdiv(__half a, __half b) { return a / b; }
EMU_AI __half __hneg(__half a) { return -a; }
EMU_AI __half __habs(__half a) { __half h; h.__x = a.__x < 0 ? -a.__x : a.__x; return h; }
EMU_AI __half __hfma(__half a, __half b, __half c) { return __emu_h((double)a.__x * (double)b.__x + (double)c.__x); }
EMU_AI __half __hmax(__half a, __half b) { return a.__x > b.__x ? a : b; }
EMU_AI __half __hmin(__half a, __half b) { return a.__x < b.__x ? a : b; }
EMU_AI bool __heq(__half a, __half b) { return a == b; }
EMU_AI bool __hne(__half a, __half b) { return a != b; }
EMU_AI bool __hlt(__half a, __half b) { return a < b; }
EMU_AI bool __hle(__half a, __half b) { return a <= b; }
EMU_AI bool __hgt(__half a, __half b) { return a > b; }
EMU_AI bool __hge(__half a, __half b) { return a >= b; }
EMU_AI bool __hisnan(__half a) { return a.__x != a.__x; }
EMU_AI int __hisinf(__half a) { return std::isinf((float)a.__x) ? (a.__x < 0 ? -1 : 1) : 0; }
EMU_AI __half hsqrt(__half a) { return __half(sqrtf((float)a.__x)); }
EMU_AI __half hrsqrt(__half a) { return __half(1.0f / sqrtf((float)a.__x)); }
EMU_AI __half hexp(__half a) { return __half(expf((float)a.__x)); }
EMU_AI __half hlog(__half a) { return __half(logf((float)a.__x)); }
EMU_AI __half hfloor(__half a) { return __half(floorf((float)a.__x)); }
EMU_AI __half hceil(__half a) { return __half(ceilf((float)a.__x)); }
EMU_AI __half __low2half(__half a) { return a; }

struct __half2_raw { unsigned short x, y; };  // CUDA's: the bits of two halves (what fp8 conversions return)
struct __attribute__((aligned(4))) __half2 {
  __half x, y;
  __half2() = default;
  constexpr __half2(__half a, __half b) : x(a), y(b) {}
  constexpr __half2(const __half2_raw& r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
  constexpr operator __half2_raw() const { return __half2_raw{__half_raw(x).x, __half_raw(y).x}; }
};
typedef __half2 half2;
EMU_AI __half2 make_half2(__half a, __half b) { return __half2(a, b); }
EMU_AI __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
EMU_AI __half2 __half2half2(__half a) { return __half2(a, a); }
EMU_AI __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
EMU_AI __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
EMU_AI __half2 __float22half2_rn(float2 f) { return __half2(__half(f.x), __half(f.y)); }
EMU_AI float2 __half22float2(__half2 h) { return make_float2((float)h.x, (float)h.y); }
EMU_AI float __low2float(__half2 h) { return (float)h.x; }
EMU_AI float __high2float(__half2 h) { return (float)h.y; }
EMU_AI __half __low2half(__half2 h) { return h.x; }
EMU_AI __half __high2half(__half2 h) { return h.y; }
EMU_AI __half2 __hadd2(__half2 a, __half2 b) { return __half2(a.x + b.x, a.y + b.y); }
EMU_AI __half2 __hsub2(__half2 a, __half2 b) { return __half2(a.x - b.x, a.y - b.y); }
EMU_AI __half2 __hmul2(__half2 a, __half2 b) { return __half2(a.x * b.x, a.y * b.y); }
EMU_AI __half2 __h2div(__half2 a, __half2 b) { return __half2(a.x / b.x, a.y / b.y); }
EMU_AI __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
EMU_AI __half2 operator+(const __half2& a, const __half2& b) { return __hadd2(a, b); }
EMU_AI __half2 operator-(const __half2& a, const __half2& b) { return __hsub2(a, b); }
EMU_AI __half2 operator*(const __half2& a, const __half2& b) { return __hmul2(a, b); }
EMU_AI __half2& operator+=(__half2& a, const __half2& b) { a = a + b; return a; }
EMU_AI __half2& operator*=(__half2& a, const __half2& b) { a = a * b; return a; }

// ---------------------------------------------------------------- bfloat16 (RNE)
struct __nv_bfloat16_raw { unsigned short x; };
EMU_AI unsigned short __emu_f2bf_bits(float f) {
  unsigned u = __builtin_bit_cast(unsigned, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  constexpr __nv_bfloat16(const __nv_bfloat16_raw& r) : __x(r.x) {}
  __nv_bfloat16(float f) : __x(__emu_f2bf_bits(f)) {}
  __nv_bfloat16(double d) : __x(__emu_f2bf_bits((float)d)) {}
  __nv_bfloat16(int i) : __x(__emu_f2bf_bits((float)i)) {}
  __nv_bfloat16(unsigned i) : __x(__emu_f2bf_bits((float)i)) {}
  __nv_bfloat16(long long i) : __x(__emu_f2bf_bits((float)i)) {}
  operator float() const { return __builtin_bit_cast(float, (unsigned)__x << 16); }
};
typedef __nv_bfloat16 nv_bfloat16;
static_assert(sizeof(__nv_bfloat16) == 2, "bf16 must be 2 bytes");
EMU_AI float __bfloat162float(__nv_bfloat16 b) { return __builtin_bit_cast(float, (unsigned)b.__x << 16); }
EMU_AI __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
EMU_AI __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
EMU_AI __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16(d); }
EMU_AI unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
EMU_AI __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 b; b.__x = u; return b; }
EMU_AI __nv_bfloat16 __emu_bf(float f) { return __nv_bfloat16(f); }
EMU_AI __nv_bfloat16 operator+(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __emu_bf((float)a + (float)b); }
EMU_AI __nv_bfloat16 operator-(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __emu_bf((float)a - (float)b); }
EMU_AI __nv_bfloat16 operator*(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __emu_bf((float)a * (float)b); }
EMU_AI __nv_bfloat16 operator/(const __nv_bfloat16& a, const __nv_bfloat16& b) { return __emu_bf((float)((double)(float)a / (double)(float)b)); }
EMU_AI __nv_bfloat16 operator-(const __nv_bfloat16& a) { __nv_bfloat16 r; r.__x = a.__x ^ 0x8000; return r; }
EMU_AI __nv_bfloat16& operator+=(__nv_bfloat16& a, const __nv_bfloat16& b) { a = a + b; return a; }
EMU_AI __nv_bfloat16& operator*=(__nv_bfloat16& a, const __nv_bfloat16& b) { a = a * b; return a; }
EMU_AI bool operator==(const __nv_bfloat16& a, const __nv_bfloat16& b) { return (float)a == (float)b; }
EMU_AI bool operator!=(const __nv_bfloat16& a, const __nv_bfloat16& b) { return (float)a != (float)b; }
EMU_AI bool operator<(const __nv_bfloat16& a, const __nv_bfloat16& b) { return (float)a < (float)b; }
EMU_AI bool operator>(const __nv_bfloat16& a, const __nv_bfloat16& b) { return (float)a > (float)b; }
EMU_AI bool operator<=(const __nv_bfloat16& a, const __nv_bfloat16& b) { return (float)a <= (float)b; }
EMU_AI bool operator>=(const __nv_bfloat16& a, const __nv_bfloat16& b) { return (float)a >= (float)b; }
EMU_AI __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
EMU_AI __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }
EMU_AI __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) { return __emu_bf((float)((double)(float)a * (double)(float)b + (double)(float)c)); }
struct __attribute__((aligned(4))) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __nv_bfloat162 nv_bfloat162;
EMU_AI __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)}; }
EMU_AI float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2((float)h.x, (float)h.y); }

// ---------------------------------------------------------------- math and bit built-ins
EMU_AI float rsqrtf(float x) { return 1.0f / sqrtf(x); }
EMU_AI double rsqrt(double x) { return 1.0 / sqrt(x); }
EMU_AI float __expf(float x) { return expf(x); }
EMU_AI float __exp10f(float x) { return powf(10.0f, x); }
EMU_AI float __logf(float x) { return logf(x); }
EMU_AI float __log2f(float x) { return log2f(x); }
EMU_AI float __log10f(float x) { return log10f(x); }
EMU_AI float __sinf(float x) { return sinf(x); }
EMU_AI float __cosf(float x) { return cosf(x); }
EMU_AI float __tanf(float x) { return tanf(x); }
EMU_AI float __powf(float x, float y) { return powf(x, y); }
EMU_AI void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
EMU_AI float __fdividef(float a, float b) { return a / b; }
EMU_AI float fdividef(float a, float b) { return a / b; }
EMU_AI float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
EMU_AI float __fmaf_rz(float a, float b, float c) { return fmaf(a, b, c); }
EMU_AI double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
EMU_AI float __fmul_rn(float a, float b) { return a * b; }
EMU_AI float __fadd_rn(float a, float b) { return a + b; }
EMU_AI float __fsub_rn(float a, float b) { return a - b; }
EMU_AI float __fdiv_rn(float a, float b) { return a / b; }
EMU_AI float __frcp_rn(float a) { return 1.0f / a; }
EMU_AI float __fsqrt_rn(float a) { return sqrtf(a); }
EMU_AI double __dmul_rn(double a, double b) { return a * b; }
EMU_AI double __dadd_rn(double a, double b) { return a + b; }
EMU_AI float __saturatef(float x) { return x != x ? 0.0f : (x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x)); }
EMU_AI float exp10f(float x) { return powf(10.0f, x); }
EMU_AI int __float2int_rn(float x) { return (int)nearbyintf(x); }
EMU_AI int __float2int_rz(float x) { return (int)x; }
EMU_AI int __float2int_rd(float x) { return (int)floorf(x); }
EMU_AI int __float2int_ru(float x) { return (int)ceilf(x); }
EMU_AI unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
EMU_AI float __int2float_rn(int x) { return (float)x; }
EMU_AI float __uint2float_rn(unsigned x) { return (float)x; }
EMU_AI int __double2int_rn(double x) { return (int)nearbyint(x); }
EMU_AI float __double2float_rn(double x) { return (float)x; }
EMU_AI int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
EMU_AI unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
EMU_AI float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
EMU_AI float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
EMU_AI long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
EMU_AI double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
EMU_AI int __popc(unsigned x) { return __builtin_popcount(x); }
EMU_AI int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
EMU_AI int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
EMU_AI int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
EMU_AI int __ffs(int x) { return __builtin_ffs(x); }
EMU_AI int __ffsll(long long x) { return __builtin_ffsll(x); }
EMU_AI unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}
EMU_AI int __mul24(int a, int b) { return a * b; }
EMU_AI unsigned __umul24(unsigned a, unsigned b) { return a * b; }
EMU_AI int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
EMU_AI unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
EMU_AI unsigned __sad(int a, int b, unsigned c) { return (unsigned)(a > b ? a - b : b - a) + c; }
// byte n of the result is byte (s >> 4n) & 7 of the eight bytes y:x (x bytes 0-3, y bytes 4-7); the
// selector's upper 16 bits and each nibble's top bit are not used (CUDA Math API, __byte_perm)
EMU_AI unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long xy = (unsigned long long)y << 32 | x;
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) r |= (unsigned)(xy >> (8 * ((s >> (4 * n)) & 7)) & 0xFF) << (8 * n);
  return r;
}
// hi:lo shifted by shift & 31 (the ...c forms: by min(shift, 32)); _l keeps the upper 32 bits, _r the lower
EMU_AI unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)(((unsigned long long)hi << 32 | lo) << (shift & 31) >> 32);
}
EMU_AI unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned n = shift < 32 ? shift : 32;
  return (unsigned)(((unsigned long long)hi << 32 | lo) << n >> 32);
}
EMU_AI unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return (unsigned)(((unsigned long long)hi << 32 | lo) >> (shift & 31));
}
EMU_AI unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned n = shift < 32 ? shift : 32;
  return (unsigned)(((unsigned long long)hi << 32 | lo) >> n);
}

// CUDA's global min/max overloads
#define EMU_MINMAX(R, A, B) EMU_AI R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \
                            EMU_AI R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
EMU_MINMAX(int, int, int)
EMU_MINMAX(unsigned, unsigned, unsigned)
EMU_MINMAX(unsigned, int, unsigned)
EMU_MINMAX(unsigned, unsigned, int)
EMU_MINMAX(long, long, long)
EMU_MINMAX(unsigned long, unsigned long, unsigned long)
EMU_MINMAX(long long, long long, long long)
EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
EMU_MINMAX(double, double, double)
EMU_MINMAX(double, float, double)
EMU_MINMAX(double, double, float)
EMU_AI float min(float a, float b) { return fminf(a, b); }
EMU_AI float max(float a, float b) { return fmaxf(a, b); }
EMU_AI int abs(int a) { return a < 0 ? -a : a; }

template <class T> EMU_AI T __ldg(const T* p) { return *p; }
template <class T> EMU_AI T __ldca(const T* p) { return *p; }
template <class T> EMU_AI T __ldcg(const T* p) { return *p; }
template <class T> EMU_AI T __ldcs(const T* p) { return *p; }
template <class T> EMU_AI T __ldlu(const T* p) { return *p; }
template <class T> EMU_AI T __ldcv(const T* p) { return *p; }
template <class T> EMU_AI void __stcs(T* p, T v) { *p = v; }
template <class T> EMU_AI void __stcg(T* p, T v) { *p = v; }
template <class T> EMU_AI void __stwb(T* p, T v) { *p = v; }
template <class T> EMU_AI void __stwt(T* p, T v) { *p = v; }

// ---------------------------------------------------------------- atomics
// Blocks may run in two worker processes on shared mappings: use real atomics.
#define EMU_ATOMIC_FETCH(NAME, OP, T) EMU_AI T NAME(T* p, T v) { return __atomic_fetch_##OP(p, v, __ATOMIC_SEQ_CST); }
EMU_ATOMIC_FETCH(atomicAdd, add, int) EMU_ATOMIC_FETCH(atomicAdd, add, unsigned)
EMU_ATOMIC_FETCH(atomicAdd, add, unsigned long long)
EMU_ATOMIC_FETCH(atomicSub, sub, int) EMU_ATOMIC_FETCH(atomicSub, sub, unsigned)
EMU_ATOMIC_FETCH(atomicAnd, and, int) EMU_ATOMIC_FETCH(atomicAnd, and, unsigned)
EMU_ATOMIC_FETCH(atomicAnd, and, unsigned long long)
EMU_ATOMIC_FETCH(atomicOr, or, int) EMU_ATOMIC_FETCH(atomicOr, or, unsigned)
EMU_ATOMIC_FETCH(atomicOr, or, unsigned long long)
EMU_ATOMIC_FETCH(atomicXor, xor, int) EMU_ATOMIC_FETCH(atomicXor, xor, unsigned)
EMU_ATOMIC_FETCH(atomicXor, xor, unsigned long long)
#define EMU_ATOMIC_EXCH(T) EMU_AI T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
EMU_ATOMIC_EXCH(int) EMU_ATOMIC_EXCH(unsigned) EMU_ATOMIC_EXCH(unsigned long long)
EMU_AI float atomicExch(float* p, float v) {
  unsigned r = __atomic_exchange_n((unsigned*)p, __builtin_bit_cast(unsigned, v), __ATOMIC_SEQ_CST);
  return __builtin_bit_cast(float, r);
}
#define EMU_ATOMIC_CAS(T) EMU_AI T atomicCAS(T* p, T cmp, T v) { \
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return cmp; }
EMU_ATOMIC_CAS(int) EMU_ATOMIC_CAS(unsigned) EMU_ATOMIC_CAS(unsigned long long) EMU_ATOMIC_CAS(unsigned short)
// read-modify-write through a compare-and-swap loop on the bit pattern
template <class T, class U, class F> EMU_AI T __emu_atomic_rmw(T* p, F f) {
  U* q = (U*)p;
  U old = __atomic_load_n(q, __ATOMIC_SEQ_CST);
  for (;;) {
    T nv = f(__builtin_bit_cast(T, old));
    U nb = __builtin_bit_cast(U, nv);
    if (__atomic_compare_exchange_n(q, &old, nb, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return __builtin_bit_cast(T, old);
  }
}
EMU_AI float atomicAdd(float* p, float v) { return __emu_atomic_rmw<float, unsigned>(p, [v](float a) { return a + v; }); }
EMU_AI double atomicAdd(double* p, double v) { return __emu_atomic_rmw<double, unsigned long long>(p, [v](double a) { return a + v; }); }
EMU_AI __half atomicAdd(__half* p, __half v) { return __emu_atomic_rmw<__half, unsigned short>(p, [v](__half a) { return a + v; }); }
EMU_AI __half2 atomicAdd(__half2* p, __half2 v) { return __emu_atomic_rmw<__half2, unsigned>(p, [v](__half2 a) { return a + v; }); }
EMU_AI __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) { return __emu_atomic_rmw<__nv_bfloat16, unsigned short>(p, [v](__nv_bfloat16 a) { return a + v; }); }
#define EMU_ATOMIC_MINMAX(T, U) \
  EMU_AI T atomicMax(T* p, T v) { return __emu_atomic_rmw<T, U>(p, [v](T a) { return a > v ? a : v; }); } \
  EMU_AI T atomicMin(T* p, T v) { return __emu_atomic_rmw<T, U>(p, [v](T a) { return a < v ? a : v; }); }
EMU_ATOMIC_MINMAX(int, int) EMU_ATOMIC_MINMAX(unsigned, unsigned)
EMU_ATOMIC_MINMAX(long long, long long) EMU_ATOMIC_MINMAX(unsigned long long, unsigned long long)
EMU_ATOMIC_MINMAX(float, unsigned) EMU_ATOMIC_MINMAX(double, unsigned long long)
EMU_AI unsigned atomicInc(unsigned* p, unsigned lim) { return __emu_atomic_rmw<unsigned, unsigned>(p, [lim](unsigned a) { return a >= lim ? 0u : a + 1; }); }
EMU_AI unsigned atomicDec(unsigned* p, unsigned lim) { return __emu_atomic_rmw<unsigned, unsigned>(p, [lim](unsigned a) { return (a == 0 || a > lim) ? lim : a - 1; }); }
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicMax_block atomicMax
#define atomicCAS_block atomicCAS

// ---------------------------------------------------------------- shared memory checks
namespace emu {
template <class T> struct tracked : std::integral_constant<bool, std::is_arithmetic<T>::value> {};
template <> struct tracked<__half> : std::true_type {};
template <> struct tracked<__nv_bfloat16> : std::true_type {};

// "tile[3][8]" for element `flat` of a checked __shared__ array (its declared dimensions)
inline void elem_text(char* b, size_t n, const __emu_shared_base* a, long long flat) {
  int k = snprintf(b, n, "%s", a->name);
  unsigned long long idx[4] = {0, 0, 0, 0}, rest = (unsigned long long)flat;
  for (int d = (int)a->ndims - 1; d >= 0; --d) { idx[d] = rest % a->dims[d]; rest /= a->dims[d]; }
  for (unsigned d = 0; d < a->ndims && k > 0 && (size_t)k < n; ++d) k += snprintf(b + k, n - k, "[%llu]", idx[d]);
}
// "[32][33]": the declared dimensions
inline void dims_text(char* b, size_t n, const __emu_shared_base* a) {
  int k = 0; b[0] = 0;
  for (unsigned d = 0; d < a->ndims && (size_t)k < n; ++d) k += snprintf(b + k, n - k, "[%llu]", a->dims[d]);
}
// index i of dimension `level` is outside [0, n); `before`: flat index of the sub-array indexed
__attribute__((noinline, noreturn)) inline void shared_oob(__emu_shared_base* a, long long before, unsigned level,
                                                            long long i, long long n) {
  char msg[400], dims[96], lead[160];
  dims_text(dims, sizeof dims, a);
  int k = snprintf(lead, sizeof lead, "%s", a->name);
  unsigned long long rest = (unsigned long long)before, idx[4] = {0, 0, 0, 0}, span = 1;
  for (unsigned d = level; d < a->ndims; ++d) span *= a->dims[d];
  rest /= span;
  for (int d = (int)level - 1; d >= 0; --d) { idx[d] = rest % a->dims[d]; rest /= a->dims[d]; }
  for (unsigned d = 0; d < level && k > 0 && (size_t)k < sizeof lead; ++d) k += snprintf(lead + k, sizeof lead - k, "[%llu]", idx[d]);
  snprintf(msg, sizeof msg, "__shared__ array '%s' (declared %s%s) indexed out of bounds: %s[%lld]%s, but %lld is not in "
           "[0, %lld)", a->name, a->name, dims, lead, i, level + 1 < a->ndims ? "[...]" : "", i, n);
  __emu_fault("shared-out-of-bounds", msg, a->name, i, n, 0);
}
__attribute__((noinline, noreturn)) inline void shared_uninit(__emu_shared_base* a, long long flat) {
  char msg[400], el[160];
  elem_text(el, sizeof el, a, flat);
  snprintf(msg, sizeof msg, "read of __shared__ %s that no thread of this block has written", el);
  __emu_fault("uninitialized-shared", msg, a->name, flat, (long long)a->count, 0);
}

// A reference to one element of a tracked shared array: reads check the written-shadow.
template <class T> struct ElemRef {
  T* p;
  unsigned char* sh;
  __emu_shared_base* a;
  EMU_AI T get() const {
    if (__builtin_expect(!*sh, 0) && __emu_check_uninit && !a->escaped) shared_uninit(a, p - (T*)a->data);
    if (__builtin_expect(a->cp_shadow != 0, 0)) cp_check(0);
    return *p;
  }
  EMU_AI void set(const T& v) const {
    if (__builtin_expect(a->cp_shadow != 0, 0)) cp_check(1);
    *p = v; *sh = 1;
  }
  // a cp.async into this array is (or was) in flight in this process: is this element landed?
  EMU_AI void cp_check(int write) const {
    size_t off = (size_t)((const char*)p - (const char*)a->data);
    unsigned hit = 0;
    for (size_t g = off >> 2; g <= (off + sizeof(T) - 1) >> 2; ++g) hit |= a->cp_shadow[g];
    if (__builtin_expect(hit != 0, 0)) __emu_cp_touch(p, sizeof(T), write, 0);
  }
  EMU_AI operator T() const { return get(); }
  EMU_AI const ElemRef& operator=(const T& v) const { set(v); return *this; }
  EMU_AI const ElemRef& operator=(const ElemRef& o) const { set(o.get()); return *this; }
  EMU_AI T* operator&() const { a->escaped = 1; return p; }
  template <class U> EMU_AI const ElemRef& operator+=(const U& v) const { T c = get(); c += v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator-=(const U& v) const { T c = get(); c -= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator*=(const U& v) const { T c = get(); c *= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator/=(const U& v) const { T c = get(); c /= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator%=(const U& v) const { T c = get(); c %= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator&=(const U& v) const { T c = get(); c &= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator|=(const U& v) const { T c = get(); c |= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator^=(const U& v) const { T c = get(); c ^= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator<<=(const U& v) const { T c = get(); c <<= v; set(c); return *this; }
  template <class U> EMU_AI const ElemRef& operator>>=(const U& v) const { T c = get(); c >>= v; set(c); return *this; }
  EMU_AI const ElemRef& operator++() const { T c = get(); ++c; set(c); return *this; }
  EMU_AI const ElemRef& operator--() const { T c = get(); --c; set(c); return *this; }
  EMU_AI T operator++(int) const { T c = get(); T r = c; ++c; set(c); return r; }
  EMU_AI T operator--(int) const { T c = get(); T r = c; --c; set(c); return r; }
};
template <class T> struct value_of { typedef T type; };
template <class T> struct value_of<ElemRef<T>> { typedef T type; };

template <class T, size_t... R> struct arr_of { typedef T type; };
template <class T, size_t D0, size_t... R> struct arr_of<T, D0, R...> { typedef typename arr_of<T, R...>::type type[D0]; };
template <size_t... R> struct prod { static constexpr size_t value = 1; };
template <size_t D0, size_t... R> struct prod<D0, R...> { static constexpr size_t value = D0 * prod<R...>::value; };

template <class T, size_t... D> struct View;
template <class T, size_t D0> struct View<T, D0> {
  T* p; unsigned char* sh; __emu_shared_base* a;
  typedef typename std::conditional<tracked<T>::value, ElemRef<T>, T&>::type ref;
  EMU_AI ref at(long long i, std::true_type) const { return ElemRef<T>{p + i, sh + i, a}; }
  EMU_AI ref at(long long i, std::false_type) const { return p[i]; }
  EMU_AI ref operator[](long long i) const {
    if (__builtin_expect((unsigned long long)i >= D0, 0)) shared_oob(a, p - (T*)a->data, a->ndims - 1, i, D0);
    return at(i, std::integral_constant<bool, tracked<T>::value>());
  }
  EMU_AI operator T*() const { a->escaped = 1; return p; }
  EMU_AI T* operator+(long long i) const { a->escaped = 1; return p + i; }
  EMU_AI ref operator*() const { return (*this)[0]; }
};
template <class T, size_t D0, size_t D1, size_t... R> struct View<T, D0, D1, R...> {
  T* p; unsigned char* sh; __emu_shared_base* a;
  static constexpr size_t stride = prod<D1, R...>::value;
  typedef typename arr_of<T, D1, R...>::type row_t;
  EMU_AI View<T, D1, R...> operator[](long long i) const {
    if (__builtin_expect((unsigned long long)i >= D0, 0)) shared_oob(a, p - (T*)a->data, a->ndims - 2 - sizeof...(R), i, D0);
    return View<T, D1, R...>{p + i * stride, sh ? sh + i * stride : sh, a};
  }
  EMU_AI operator row_t*() const { a->escaped = 1; return (row_t*)p; }
};

// A static __shared__ array: poisoned (0xFF bytes) at the start of every block,
// bounds-checked per dimension, and (for scalar element types) reads of elements nobody
// wrote in this block are reported.
template <class T, size_t... D> struct SharedArray : __emu_shared_base {
  static constexpr size_t N = prod<D...>::value;
  alignas(128) T store[N];
  unsigned char shadowbuf[tracked<T>::value ? N : 1];
  typedef typename arr_of<T, D...>::type array_t;
  SharedArray(const char* nm) {
    data = (void*)store; shadow = tracked<T>::value ? shadowbuf : 0; bytes = sizeof(store);
    count = N; name = nm; escaped = 0; next = 0; cp_shadow = 0;
    const size_t ds[] = {D...};
    ndims = sizeof...(D) < 4 ? (unsigned)sizeof...(D) : 4; itemsize = sizeof(T);
    for (unsigned d = 0; d < 4; ++d) dims[d] = d < ndims ? ds[d] : 1;
    if (sizeof...(D) > 4) { dims[3] = 1; for (size_t d = 3; d < sizeof...(D); ++d) dims[3] *= ds[d]; }
    memset((void*)store, 0xff, sizeof(store));
    memset(shadowbuf, 0, sizeof(shadowbuf));
    __emu_register_shared(this);
  }
  SharedArray(const SharedArray&) = delete;
  EMU_AI View<T, D...> view() { return View<T, D...>{store, shadow, this}; }
  EMU_AI auto operator[](long long i) -> decltype(this->view()[i]) { return view()[i]; }
  EMU_AI operator typename std::remove_extent<array_t>::type*() { escaped = 1; return (typename std::remove_extent<array_t>::type*)store; }
  EMU_AI typename std::remove_extent<array_t>::type* operator+(long long i) { escaped = 1; return (typename std::remove_extent<array_t>::type*)store + i; }
};
}  // namespace emu

// ---------------------------------------------------------------- warp collectives
namespace emu {
template <class T> struct ShflPayload { T val; int arg; int width; T out; };
template <class T, int KIND> void shfl_combine(void** pl, unsigned mask) {
  for (int l = 0; l < 32; ++l) {
    if (!(mask >> l & 1)) continue;
    ShflPayload<T>* me = (ShflPayload<T>*)pl[l];
    int w = me->width; if (w <= 0 || w > 32) w = 32;
    int base = l & ~(w - 1), src;
    if (KIND == EMU_OP_SHFL) src = base + (me->arg & (w - 1));
    else if (KIND == EMU_OP_SHFL_UP) { src = l - me->arg; if (src < base) src = l; }
    else if (KIND == EMU_OP_SHFL_DOWN) { src = l + me->arg; if (src >= base + w) src = l; }
    else { src = l ^ me->arg; if (src >= base + w || src < base) src = l; }
    if (src < 0 || src > 31 || !pl[src]) src = l;  // source lane not participating: own value
    me->out = ((ShflPayload<T>*)pl[src])->val;
  }
}
template <class T, int KIND> EMU_AI T shfl(unsigned mask, T v, int arg, int width, int line) {
  ShflPayload<T> p; p.val = v; p.arg = arg; p.width = width;
  __emu_warp_op(KIND, mask, line, &p, &shfl_combine<T, KIND>);
  return p.out;
}
struct VotePayload { int pred; unsigned out, parts; };
inline void vote_combine(void** pl, unsigned mask) {
  unsigned b = 0;
  for (int l = 0; l < 32; ++l) if ((mask >> l & 1) && ((VotePayload*)pl[l])->pred) b |= 1u << l;
  for (int l = 0; l < 32; ++l) if (mask >> l & 1) { ((VotePayload*)pl[l])->out = b; ((VotePayload*)pl[l])->parts = mask; }
}
// returns the ballot; *parts = the lanes that took part
inline unsigned vote(unsigned mask, int pred, int line, unsigned* parts = 0) {
  VotePayload p; p.pred = pred; __emu_warp_op(EMU_OP_VOTE, mask, line, &p, &vote_combine);
  if (parts) *parts = p.parts;
  return p.out & mask;
}
template <class T> struct RedPayload { T v; int op; T out; };
template <class T> void red_combine(void** pl, unsigned mask) {
  T acc{}; bool first = true; int op = 0;
  for (int l = 0; l < 32; ++l) if (mask >> l & 1) {
    RedPayload<T>* p = (RedPayload<T>*)pl[l]; op = p->op;
    if (first) { acc = p->v; first = false; }
    else if (op == 0) acc += p->v; else if (op == 1) acc = p->v < acc ? p->v : acc;
    else if (op == 2) acc = p->v > acc ? p->v : acc; else if (op == 3) acc &= p->v;
    else if (op == 4) acc |= p->v; else acc ^= p->v;
  }
  for (int l = 0; l < 32; ++l) if (mask >> l & 1) ((RedPayload<T>*)pl[l])->out = acc;
}
template <class T> EMU_AI T reduce(unsigned mask, T v, int op, int line) {
  RedPayload<T> p; p.v = v; p.op = op; __emu_warp_op(EMU_OP_REDUCE, mask, line, &p, &red_combine<T>);
  return p.out;
}
struct MatchPayload { unsigned long long v; unsigned out; };
inline void match_combine(void** pl, unsigned mask) {
  for (int l = 0; l < 32; ++l) if (mask >> l & 1) {
    unsigned m = 0;
    for (int k = 0; k < 32; ++k) if ((mask >> k & 1) && ((MatchPayload*)pl[k])->v == ((MatchPayload*)pl[l])->v) m |= 1u << k;
    ((MatchPayload*)pl[l])->out = m;
  }
}
}  // namespace emu

#define EMU_VT(T) typename emu::value_of<T>::type
template <class T> EMU_AI EMU_VT(T) __shfl_sync(unsigned m, T v, int src, int w = 32, int line = __builtin_LINE()) { return emu::shfl<EMU_VT(T), EMU_OP_SHFL>(m, v, src, w, line); }
template <class T> EMU_AI EMU_VT(T) __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32, int line = __builtin_LINE()) { return emu::shfl<EMU_VT(T), EMU_OP_SHFL_UP>(m, v, (int)d, w, line); }
template <class T> EMU_AI EMU_VT(T) __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32, int line = __builtin_LINE()) { return emu::shfl<EMU_VT(T), EMU_OP_SHFL_DOWN>(m, v, (int)d, w, line); }
template <class T> EMU_AI EMU_VT(T) __shfl_xor_sync(unsigned m, T v, int lm, int w = 32, int line = __builtin_LINE()) { return emu::shfl<EMU_VT(T), EMU_OP_SHFL_XOR>(m, v, lm, w, line); }
EMU_AI unsigned __ballot_sync(unsigned m, int pred, int line = __builtin_LINE()) { return emu::vote(m, pred, line); }
EMU_AI int __any_sync(unsigned m, int pred, int line = __builtin_LINE()) { return emu::vote(m, pred, line) != 0; }
EMU_AI int __all_sync(unsigned m, int pred, int line = __builtin_LINE()) {
  unsigned parts; unsigned b = emu::vote(m, pred, line, &parts); return b == parts;
}
EMU_AI unsigned __activemask() { return __emu_activemask(); }
EMU_AI void __syncwarp(unsigned m = 0xffffffffu, int line = __builtin_LINE()) { __emu_warp_op(EMU_OP_SYNCWARP, m, line, 0, 0); }
EMU_AI int __reduce_add_sync(unsigned m, int v, int line = __builtin_LINE()) { return emu::reduce<int>(m, v, 0, line); }
EMU_AI unsigned __reduce_add_sync(unsigned m, unsigned v, int line = __builtin_LINE()) { return emu::reduce<unsigned>(m, v, 0, line); }
EMU_AI int __reduce_min_sync(unsigned m, int v, int line = __builtin_LINE()) { return emu::reduce<int>(m, v, 1, line); }
EMU_AI unsigned __reduce_min_sync(unsigned m, unsigned v, int line = __builtin_LINE()) { return emu::reduce<unsigned>(m, v, 1, line); }
EMU_AI int __reduce_max_sync(unsigned m, int v, int line = __builtin_LINE()) { return emu::reduce<int>(m, v, 2, line); }
EMU_AI unsigned __reduce_max_sync(unsigned m, unsigned v, int line = __builtin_LINE()) { return emu::reduce<unsigned>(m, v, 2, line); }
EMU_AI unsigned __reduce_and_sync(unsigned m, unsigned v, int line = __builtin_LINE()) { return emu::reduce<unsigned>(m, v, 3, line); }
EMU_AI unsigned __reduce_or_sync(unsigned m, unsigned v, int line = __builtin_LINE()) { return emu::reduce<unsigned>(m, v, 4, line); }
EMU_AI unsigned __reduce_xor_sync(unsigned m, unsigned v, int line = __builtin_LINE()) { return emu::reduce<unsigned>(m, v, 5, line); }
template <class T> EMU_AI unsigned __match_any_sync(unsigned m, T v, int line = __builtin_LINE()) {
  emu::MatchPayload p; p.v = 0; EMU_VT(T) vv = v; memcpy(&p.v, &vv, sizeof(vv) < 8 ? sizeof(vv) : 8);
  __emu_warp_op(EMU_OP_MATCH, m, line, &p, &emu::match_combine); return p.out;
}
// legacy (pre-Volta) shuffles without a mask: treat as full-warp
#define __shfl(v, s, ...) __shfl_sync(0xffffffffu, v, s, ##__VA_ARGS__)
#define __shfl_down(v, s, ...) __shfl_down_sync(0xffffffffu, v, s, ##__VA_ARGS__)
#define __shfl_up(v, s, ...) __shfl_up_sync(0xffffffffu, v, s, ##__VA_ARGS__)
#define __shfl_xor(v, s, ...) __shfl_xor_sync(0xffffffffu, v, s, ##__VA_ARGS__)

// ---------------------------------------------------------------- cuda_pipeline.h
// cp.async with a GPU's ordering and no more (the runner, "cp.async"): a copy reads its
// source when issued, its destination reads as NaN bytes until __pipeline_wait_prior lands
// its commit group, and a read (or write) the emulator sees of bytes still in flight is
// reported with both lines: wmma::load_matrix_sync / store_matrix_sync and checked
// __shared__ arrays (plain pointer reads of dynamic shared memory just read NaN).
EMU_AI void __pipeline_memcpy_async(void* dst, const void* src, size_t size_and_align, size_t zfill = 0,
                                    int line = __builtin_LINE()) {
  __emu_cp_async(dst, src, size_and_align, zfill, line);
}
EMU_AI void __pipeline_commit() { __emu_cp_commit(); }
EMU_AI void __pipeline_wait_prior(size_t prior, int line = __builtin_LINE()) { __emu_cp_wait(prior, line); }
EMU_AI void __pipeline_arrive_on(void*, int line = __builtin_LINE()) { __emu_cp_arrive(line); }
namespace emu {
// Is [p, p+bytes) the destination of a copy that has not landed? (The common case, no copy
// in flight in the block, costs one load.)
EMU_AI void cp_touch(const void* p, unsigned bytes, int write, int line) {
  if (__builtin_expect(__emu_cp_pending == 0, 1)) return;
  unsigned long long off = (unsigned long long)((const char*)p - __emu_cp_dyn_base);
  if (off < __emu_cp_dyn_bytes) {
    unsigned hit = 0;
    for (unsigned long long g = off >> 2; g <= (off + bytes - 1) >> 2; ++g) hit |= __emu_cp_dyn_shadow[g];
    if (__builtin_expect(hit != 0, 0)) __emu_cp_touch(p, bytes, write, line);
  } else if (__emu_cp_pending_other) {
    __emu_cp_touch(p, bytes, write, line);
  }
}
}  // namespace emu

#include "emu_wmma.h"
#include "emu_fp8.h"  // <cuda_fp8.h>: e4m3/e5m2 types and conversions (inline PTX cvt and mma use them)
#include "emu_ptx.h"  // inline PTX (translate.py rewrites asm statements into its calls)

#endif  // EMU_PRELUDE_H
