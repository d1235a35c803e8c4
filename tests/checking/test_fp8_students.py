"""fp8-gemm as students write it (issue #36's held-out check): kernels RIGHT in unusual ways earn the
correctness point through the real check path; kernels WRONG in the ways students get FP8 wrong are
the exercise's adversarial mistakes (grader.checking.exercises, "fp8-gemm"; tests/checking/test_grader.py
runs them), and here the first failure a stuck student reads must name what to fix.

Each right kernel is an edit of the reference (kernels/fp8_gemm_mma.cu) or a whole file in fp8_right/."""
import re
import shutil
from pathlib import Path

import pytest
from adversarial.cases import CASES

from grader.checking.check import check
from grader.checking.verdict import FAIL
from grader.runtime import kernels

if shutil.which("g++") is None:  # pragma: no cover
    pytest.skip("the CPU emulator needs g++", allow_module_level=True)

REF = kernels.source("fp8_gemm_mma")
HERE = Path(__file__).parent / "fp8_right"


def edit(*pairs: str) -> str:
    src = REF
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert src.count(old) >= 1, old
        src = src.replace(old, new)
    return src


MMA = 'asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "'
ASM = '''            asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));'''
STORE = "if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];"
LOAD4 = """    unsigned r = 0;
    if (row < rows)
        for (int j = 0; j < 4; ++j)
            if (k + j < K) r |= (unsigned)p[(size_t)row * K + k + j] << (8 * j);
    return r;"""
A_FRAG = """        unsigned a[4];
        a[0] = load4(A, m0 + g, M, k0 + 4 * t, K);
        a[1] = load4(A, m0 + g + 8, M, k0 + 4 * t, K);
        a[2] = load4(A, m0 + g, M, k0 + 16 + 4 * t, K);
        a[3] = load4(A, m0 + g + 8, M, k0 + 16 + 4 * t, K);
        for (int h = 0; h < 2; ++h) {  // the two n8 halves of the warp's 16 columns
            unsigned b[2];
            b[0] = load4(B, n0 + 8 * h + g, N, k0 + 4 * t, K);
            b[1] = load4(B, n0 + 8 * h + g, N, k0 + 16 + 4 * t, K);"""
OPERANDS = '''"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"
                         : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));'''

# (id, source): each must earn the correctness point on the emulator (and on an sm_89+ GPU)
RIGHT = [
    # the scales one at a time, per element
    ("scales-nested", edit(STORE, "if (r < M && c < N) C[(size_t)r * N + c] = scale_a * (scale_b * acc[h][i]);")),
    # each k-step's mma into fresh accumulators, scaled and added to the running sum: more roundings
    ("scaled-per-k-step", edit(
        "unsigned b[2];\n", "unsigned b[2]; float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n",
        ': "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])', ': "+f"(p[0]), "+f"(p[1]), "+f"(p[2]), "+f"(p[3])',
        '"r"(b[0]), "r"(b[1]));\n        }', '"r"(b[0]), "r"(b[1]));\n'
        '            for (int i = 0; i < 4; ++i) acc[h][i] += scale_a * scale_b * p[i];\n        }',
        STORE, "if (r < M && c < N) C[(size_t)r * N + c] = acc[h][i];")),
    # K walked 64 at a time, two unrolled k-steps (load4 zero-fills the one past K)
    ("k-unrolled-by-2", edit("for (int k0 = 0; k0 < K; k0 += 32) {",
                             "for (int kk = 0; kk < K; kk += 64)\n#pragma unroll\n    for (int k0 = kk; k0 < kk + 64; k0 += 32) {")),
    # grid-stride loops over the block tiles
    ("grid-stride", edit(
        "const int m0 = (blockIdx.y * 2 + warp) * 16, n0 = blockIdx.x * 16;\n",
        "for (int by = blockIdx.y; by * 32 < M; by += gridDim.y)\n  for (int bx = blockIdx.x; bx * 16 < N; bx += gridDim.x) {\n"
        "    const int m0 = (by * 2 + warp) * 16, n0 = bx * 16;\n",
        "    // END SOLUTION\n}", "    // END SOLUTION\n  }\n}")),
    # D and C as separate operands (outputs "=f", the old sums as inputs)
    ("separate-d-and-c", edit(
        "unsigned b[2];\n", "unsigned b[2]; float d[4];\n",
        OPERANDS, '''"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\\n"
                         : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                           "f"(acc[h][0]), "f"(acc[h][1]), "f"(acc[h][2]), "f"(acc[h][3]));
            for (int i = 0; i < 4; ++i) acc[h][i] = d[i];''')),
    # a tab, or a line break, between the opcode and its operands (valid PTX: any white space)
    ("tab-after-opcode", edit(MMA, MMA[:-2] + '\\t"')),
    ("line-break-after-opcode", edit(MMA, MMA[:-2] + '\\n\\t"')),
    # the same permutation of k in A and B leaves every sum as it is: the two 16-halves of each k-step,
    # the four 4-code groups, the four codes of a register
    ("k-halves-swapped-in-a-and-b", edit(
        "k0 + 4 * t, K)", "k0 + 16 + 4 * T, K)", "k0 + 16 + 4 * t, K)", "k0 + 4 * t, K)", "4 * T", "4 * t")),
    ("t-reversed-in-a-and-b", edit("g = lane >> 2, t = lane & 3;", "g = lane >> 2, t = 3 - (lane & 3);",
                                   "c = n0 + 8 * h + 2 * t + (i & 1);", "c = n0 + 8 * h + 2 * (3 - t) + (i & 1);")),
    ("codes-reversed-in-a-and-b", edit("<< (8 * j);", "<< (8 * (3 - j));")),
    # each warp a 32 x 8 tile (two m16 tiles sharing one B fragment), the warps side by side along N
    ("warps-along-n", edit(
        "const int m0 = (blockIdx.y * 2 + warp) * 16, n0 = blockIdx.x * 16;",
        "const int mb = blockIdx.y * 32, n0 = blockIdx.x * 16 + 8 * warp;",
        A_FRAG, """        unsigned b[2];
        b[0] = load4(B, n0 + g, N, k0 + 4 * t, K);
        b[1] = load4(B, n0 + g, N, k0 + 16 + 4 * t, K);
        for (int h = 0; h < 2; ++h) {  // the two m16 halves of the warp's 32 rows
            const int m0 = mb + 16 * h;
            unsigned a[4];
            a[0] = load4(A, m0 + g, M, k0 + 4 * t, K);
            a[1] = load4(A, m0 + g + 8, M, k0 + 4 * t, K);
            a[2] = load4(A, m0 + g, M, k0 + 16 + 4 * t, K);
            a[3] = load4(A, m0 + g + 8, M, k0 + 16 + 4 * t, K);""",
        "const int r = m0 + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);",
        "const int r = mb + 16 * h + g + 8 * (i >> 1), c = n0 + 2 * t + (i & 1);")),
    # c[0], c[1] stored as one float2 where the pair is whole and 8-byte aligned
    ("float2-store", edit("""    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 4; ++i) {
            const int r = m0 + g + 8 * (i >> 1), c = n0 + 8 * h + 2 * t + (i & 1);
            if (r < M && c < N) C[(size_t)r * N + c] = s * acc[h][i];
        }""", """    for (int h = 0; h < 2; ++h)
        for (int p = 0; p < 2; ++p) {
            const int r = m0 + g + 8 * p, c = n0 + 8 * h + 2 * t;
            if (r >= M) continue;
            if (c + 1 < N && N % 2 == 0)
                *reinterpret_cast<float2*>(&C[(size_t)r * N + c]) = make_float2(s * acc[h][2 * p], s * acc[h][2 * p + 1]);
            else {
                if (c < N) C[(size_t)r * N + c] = s * acc[h][2 * p];
                if (c + 1 < N) C[(size_t)r * N + c + 1] = s * acc[h][2 * p + 1];
            }
        }""")),
    # four codes in one 32-bit load where they are whole and 4-byte aligned, byte by byte elsewhere
    ("word-loads-where-aligned", edit(LOAD4, """    if (row >= rows) return 0u;
    const size_t at = (size_t)row * K + k;
    if (k + 3 < K && at % 4 == 0) return *reinterpret_cast<const unsigned*>(p + at);
    unsigned r = 0;
    for (int j = 0; j < 4; ++j)
        if (k + j < K) r |= (unsigned)p[at + j] << (8 * j);
    return r;""")),
    # the asm written otherwise: comments, tabs, spaces inside the braces, a "memory" clobber
    ("asm-spaced-and-commented", edit(ASM, r"""            asm volatile(
                "// one k-step of the 16x8 tile\n\t"
                "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32\t"
                "{ %0,%1 , %2,%3 },   /* D */\n\t"
                "{ %4, %5,%6, %7 },   /* A */\n\t"
                "{ %8,%9 },           /* B */\n\t"
                "{ %0,%1 , %2,%3 } ;  /* C = D */\n"
                : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1])
                : "memory");""")),
    # the mma in a __device__ helper, a plain (not volatile) asm with D "=f" and C "f" operands
    ("asm-in-a-helper", edit("extern \"C\" __global__", """__device__ __forceinline__ void mma_e4m3(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]));
}

extern "C" __global__""", ASM, "            mma_e4m3(acc[h], a, b);")),
    # each k-step's mma from a zero C (a .reg set by mov inside the asm), the sums kept in double
    ("per-step-from-zero-summed-in-double", edit(
        "float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};", "double acc[2][4] = {};",
        ASM, r"""            float p[4];
            asm volatile("{\n\t.reg .b32 z;\n\tmov.b32 z, 0;\n\t"
                         "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {z, z, z, z};\n\t}\n"
                         : "=f"(p[0]), "=f"(p[1]), "=f"(p[2]), "=f"(p[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            for (int i = 0; i < 4; ++i) acc[h][i] += p[i];""",
        STORE, "if (r < M && c < N) C[(size_t)r * N + c] = (float)((double)scale_a * scale_b * acc[h][i]);")),
    # four codes through cuda_fp8.h's vector type where K % 4 == 0, or a uchar4 where the address is aligned
    ("fp8x4-vector-loads", edit(LOAD4, """    if (row < rows && K % 4 == 0 && k + 3 < K)
        return reinterpret_cast<const __nv_fp8x4_e4m3*>(p + (size_t)row * K)[k / 4].__x;
""" + LOAD4)),
    ("uchar4-loads", edit(LOAD4, """    if (row < rows && ((size_t)row * K + k) % 4 == 0 && k + 3 < K) {
        const uchar4 v = *reinterpret_cast<const uchar4*>(p + (size_t)row * K + k);
        return (unsigned)v.x | (unsigned)v.y << 8 | (unsigned)v.z << 16 | (unsigned)v.w << 24;
    }
""" + LOAD4)),
    # codes 8t..8t+7 of a row, one 8-byte load where aligned, as the mma's k 4t..4t+3 and 16+4t..16+4t+3:
    # the same permutation of k in A and B
    ("k-permuted-eight-codes-a-lane", edit("extern \"C\" __global__", """__device__ __forceinline__ uint2 load8(const __nv_fp8_storage_t* p, int row, int rows, int k, int K)
{
    if (row < rows && k + 7 < K && ((size_t)row * K + k) % 8 == 0)
        return *reinterpret_cast<const uint2*>(p + (size_t)row * K + k);
    return make_uint2(load4(p, row, rows, k, K), load4(p, row, rows, k + 4, K));
}

extern "C" __global__""", A_FRAG, """        const uint2 lo = load8(A, m0 + g, M, k0 + 8 * t, K), hi = load8(A, m0 + g + 8, M, k0 + 8 * t, K);
        const unsigned a[4] = {lo.x, hi.x, lo.y, hi.y};
        for (int h = 0; h < 2; ++h) {
            const uint2 bb = load8(B, n0 + 8 * h + g, N, k0 + 8 * t, K);
            const unsigned b[2] = {bb.x, bb.y};""")),
    # warp 1 leaves at once and warp 0 computes both 16-row tiles (the launch is the grader's, the split the student's)
    ("one-warp-does-both-tiles", edit(
        "const int m0 = (blockIdx.y * 2 + warp) * 16, n0 = blockIdx.x * 16;",
        "if (warp != 0) return;\n    const int n0 = blockIdx.x * 16;\n    for (int w = 0; w < 2; ++w) {\n"
        "    const int m0 = (blockIdx.y * 2 + w) * 16;",
        "    // END SOLUTION\n}", "    // END SOLUTION\n    }\n}")),
    ("launch-bounds-and-unroll", edit("extern \"C\" __global__ void", "extern \"C\" __global__ void __launch_bounds__(64, 4)",
                                      "        for (int h = 0; h < 2; ++h) {", "#pragma unroll\n        for (int h = 0; h < 2; ++h) {")),
    # the codes' pointers spelled as the same bytes otherwise: unsigned char (what __nv_fp8_storage_t is), or
    # cuda_fp8.h's __nv_fp8_e4m3 (one byte, the code in .__x)
    ("codes-as-unsigned-char", edit(
        "fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,",
        "fp8_gemm(const unsigned char* __restrict__ A, const unsigned char* __restrict__ B, float* __restrict__ C,")),
    ("codes-as-nv-fp8-e4m3", edit(
        "fp8_gemm(const __nv_fp8_storage_t* A, const __nv_fp8_storage_t* B, float* C,",
        "fp8_gemm(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, float* C,",
        "unsigned load4(const __nv_fp8_storage_t* p,", "unsigned load4(const __nv_fp8_e4m3* p,",
        "r |= (unsigned)p[(size_t)row * K + k + j] << (8 * j);", "r |= (unsigned)p[(size_t)row * K + k + j].__x << (8 * j);")),
    # the four codes packed by __byte_perm: [c0, c1, ., .] and [c2, c3, ., .] into [c0, c1, c2, c3]
    ("codes-packed-by-byte-perm", edit(LOAD4, """    unsigned c[4] = {0u, 0u, 0u, 0u};
    if (row < rows)
        for (int j = 0; j < 4; ++j)
            if (k + j < K) c[j] = p[(size_t)row * K + k + j];
    return __byte_perm(__byte_perm(c[0], c[1], 0x0040), __byte_perm(c[2], c[3], 0x0040), 0x5410);""")),
    # the same packing in inline PTX: prmt.b32, what __byte_perm compiles to
    ("codes-packed-by-prmt", edit(LOAD4, """    unsigned c[4] = {0u, 0u, 0u, 0u};
    if (row < rows)
        for (int j = 0; j < 4; ++j)
            if (k + j < K) c[j] = p[(size_t)row * K + k + j];
    unsigned lo, hi, r;
    asm("prmt.b32 %0, %1, %2, 0x0040;" : "=r"(lo) : "r"(c[0]), "r"(c[1]));
    asm("prmt.b32 %0, %1, %2, 0x0040;" : "=r"(hi) : "r"(c[2]), "r"(c[3]));
    asm("prmt.b32 %0, %1, %2, 0x5410;" : "=r"(r) : "r"(lo), "r"(hi));
    return r;""")),
    # load4 a template, a lambda over it in the kernel, the k-step a constexpr
    ("template-lambda-constexpr", edit(
        "__device__ __forceinline__ unsigned load4(const __nv_fp8_storage_t* p,",
        "template <typename T>\n__device__ __forceinline__ unsigned load4(const T* p,",
        "    float acc[2][4]", "    auto ld = [&](const __nv_fp8_storage_t* p, int row, int rows, int k) "
        "{ return load4(p, row, rows, k, K); };\n    constexpr int KSTEP = 32;\n    float acc[2][4]",
        "a[0] = load4(A, m0 + g, M, k0 + 4 * t, K);", "a[0] = ld(A, m0 + g, M, k0 + 4 * t);",
        "k0 += 32)", "k0 += KSTEP)")),
    # whole files: every fp8_right/*.cu
    *[(f.stem.replace("_", "-"), f.read_text()) for f in sorted(HERE.glob("*.cu"))],
]


@pytest.mark.parametrize("source", [r[1] for r in RIGHT], ids=[r[0] for r in RIGHT])
def test_right_kernel_earns_the_correctness_point(source):
    v = check("fp8-gemm", source, backend="emu")
    assert v.correct and v.score == 1.0, v.text()


@pytest.mark.gpu
@pytest.mark.parametrize("source", [r[1] for r in RIGHT], ids=[r[0] for r in RIGHT])
def test_right_kernel_earns_the_correctness_point_on_gpu(source):
    from grader.checking import exercises
    from grader.runtime import device

    if device.needs(exercises.get("fp8-gemm").min_arch):
        pytest.skip(f"fp8-gemm {device.needs(exercises.get('fp8-gemm').min_arch)}")
    v = check("fp8-gemm", source, backend="gpu", speed=False)
    assert v.correct, v.text()


# The record's fp8-gemm mistakes (tests/checking/test_grader.py checks each fails with its kind): what
# the first failure (message + hint) must name, so a student stuck on it knows what to change.
NAMES = {
    "fp8_scales_dropped": r"scales are not applied",
    "fp8_scale_b_dropped": r"only scale_a",
    "fp8_scales_twice": r"scales are applied twice",
    "fp8_scales_divided": r"divided by the scales",
    "fp8_mma_e5m2": r"\.e5m2.*\.e4m3",
    "fp8_sum_kept_in_half": r"65504.*fp32",
    "fp8_b_second_half": r"b\[1\] .*16 \+ 4t",
    "fp8_a_registers_swapped": r"a\[1\] row g \+ 8",
    "fp8_b_read_k_by_n": r"B is read as K x N",
    "fp8_codes_converted": r"codes of A and B were converted as numbers",
    "fp8_b_halves_swapped": r"b\[0\] and b\[1\] are swapped",
    "fp8_last_k_step_skipped": r"last, partial k-step",
    "fp8_c_operand_zero": r"last k-step .* only.*C operand",
    "fp8_scales_inside_k_loop": r"last k-step .* only.*not inside it",
    "fp8_partial_step_upper_half_dropped": r"k < \d+ only: the last \d+ codes",
    "fp8_block_rows_overlap": r"m0 = \(blockIdx\.y \* 2 \+ warp\) \* 16",
    "fp8_grid_axes_swapped": r"blockIdx\.x and blockIdx\.y swapped",
    "fp8_k_guard_whole_words": r"k < \d+ only.*k \+ j < K",
    "fp8_word_loads_no_k_guard": r"a code whose k is not below K, must read 0",
    "fp8_c_pairs_as_float2": r"misaligned store .* multiple of 8 bytes.*store element by element",
    "fp8_c_pair_guarded_by_first_column": r"column below N",
    "fp8_c_pairs_down_columns": r"right sums at the wrong elements",
    "fp8_epilogue_adds_to_c": r"`\+=`",
    "fp8_cp_async_not_waited": r"cp\.async\.wait_group.*Otherwise: NaN",
    "fp8_split_k_race": r"k-steps? .* only.*warps",
    "fp8_smem_overwritten_while_read": r"__syncthreads\(\).*before overwriting",
    "fp8_store_unguarded": r"below M",
    "fp8_word_loads_unaligned": r"misaligned.*element by element",
    "fp8_dequantised_to_fp16_mma": r"m16n8k16.*asks for m16n8k32.*e4m3",
    "fp8_cuda_cores": r"no tensor-core instruction.*must run on tensor cores",
}
FP8_CASES = [b for b in CASES if b.exercise == "fp8-gemm"]


def test_every_fp8_mistake_has_its_words():
    assert set(NAMES) == {b.name for b in FP8_CASES}


@pytest.mark.parametrize("bad", FP8_CASES, ids=lambda b: b.name)
def test_first_failure_names_the_fp8_mistake(bad):
    v = check("fp8-gemm", bad.source(), backend="emu", case_timeout=6)
    first = next(i for i in v.items if i.status == FAIL)
    said = f"{first.message}\n{first.hint}"
    assert re.search(NAMES[bad.name], said, re.S), f"{bad.name}: the first failure does not name it:\n{v.text()}"
    # a kernel stopped by a fault is not also told to use tensor cores (it does: its runs did not finish)
    if first.kind in ("out-of-bounds", "misaligned-address", "race", "timeout"):
        assert not [i for i in v.items if i.name == "tensor cores" and "must run on tensor cores" in i.hint], v.text()
    # nor is a kernel told its wrong elements (misplaced, scaled wrongly) do not come from tensor cores: the
    # probe judges only what the plain run got right
    for tc in (i for i in v.items if i.kind == "tensor-cores-unused"):
        case = next(i for i in v.items if i.name == f"correct: {tc.where['case']}")
        M, N = map(int, re.match(r"(\d+)x(\d+)x", tc.where["case"]).groups())
        wrong = int(re.match(r"(\d+) ", case.message)[1]) if case.status == FAIL else 0
        assert tc.where["unfollowed"] <= M * N - wrong, v.text()
    # notebook 11's kernel has no WMMA: no hint may send the student to it
    for item in v.items:
        assert not re.search(r"matrix_sync|fill_fragment", item.hint or ""), f"{bad.name}: a WMMA hint:\n{item.hint}"


FP16_MMA = next(b for b in FP8_CASES if b.name == "fp8_dequantised_to_fp16_mma").source()


@pytest.mark.parametrize("source", [
    FP16_MMA,
    # the same, with a PTX instruction the emulator does not run (valid on a GPU): the emulator cannot count it
    FP16_MMA.replace("    const float s = scale_a * scale_b;", '    asm volatile("membar.cta;");\n    const float s = scale_a * scale_b;'),
], ids=["fp16-mma", "fp16-mma-the-emulator-cannot-run"])
def test_on_a_gpu_the_fp8_instruction_is_proven_not_assumed(monkeypatch, source):
    """On a GPU, ncu's tensor-pipe counter cannot tell FP8's m16n8k32 from fp16's m16n8k16: the shape
    comes from the emulator's count at the CPU sizes, and where the emulator counted nothing the item
    fails (closed) instead of standing on ncu's count alone (ncu's verdict stood in for: a pass)."""
    from grader.checking import exercises, tensor_work
    from grader.checking.steps import tensor
    from grader.checking.verdict import Item

    assert "membar" not in FP16_MMA
    monkeypatch.setattr(tensor_work, "gpu_item", lambda *a: Item("tensor cores", "pass", "counted on the GPU by ncu"))
    item = tensor.tensor_item(exercises.get("fp8-gemm"), source, {}, "gpu", [], {}, 20.0, 90, [])
    assert item.status == FAIL and "m16n8k32" in item.message + item.hint, item.message


def test_a_cuda_function_the_emulator_lacks_is_the_emulators_limit_not_a_compile_error():
    """NVRTC compiles it, so g++'s "was not declared" for a __ name is the emulator's gap (it read as a compile
    error on the student's line: __byte_perm, before the emulator had it); nor is the kernel told to use tensor
    cores. __vabsdiffu4 stands for any CUDA function the emulator lacks (replace it if the emulator gains it)."""
    src = edit("r |= (unsigned)p[(size_t)row * K + k + j] << (8 * j);",
               "r = __vabsdiffu4(r, 0u) | (unsigned)p[(size_t)row * K + k + j] << (8 * j);")
    v = check("fp8-gemm", src, backend="emu")
    first = next(i for i in v.items if i.status == FAIL)
    assert first.kind == "Unsupported" and "__vabsdiffu4 (line" in first.message and "GPU" in first.message, v.text()
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert "must run on tensor cores" not in tc.hint and "could not run" in tc.hint, v.text()


@pytest.mark.parametrize("source", [
    edit("unsigned a[4];", "uint32_t a[4];", "unsigned b[2];", "uint32_t b[2];"),
    edit("#include <cuda_fp8.h>", "#include <cuda_fp8.h>\n#include <cstdint>",
         "unsigned a[4];", "uint32_t a[4];", "unsigned b[2];", "uint32_t b[2];"),
], ids=["uint32_t", "uint32_t-from-cstdint"])
def test_a_standard_type_nvrtc_lacks_is_answered_with_the_built_in_one(source):
    """Four codes in a uint32_t: NVRTC has no uint32_t, and no <cstdint> to include (the hints sent the student
    to "check the spelling", then to install a "missing CUDA header" with grader doctor). The hint names the
    built-in type that does it."""
    v = check("fp8-gemm", source, backend="emu")
    if v.correct:  # pragma: no cover - an NVRTC that finds the C++ standard library
        pytest.skip("this NVRTC compiles uint32_t")
    first = next(i for i in v.items if i.status == FAIL)
    assert first.kind == "compile-error" and "unsigned int is 32 bits" in first.hint, v.text()
    assert "CUDA header is missing" not in first.hint, v.text()
