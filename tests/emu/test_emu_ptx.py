"""Inline PTX on the emulator (grader/emu/inline_ptx.py, include/emu_ptx.h), checked against
the PTX ISA's documented fragment layouts, written out here on their own from the ISA text
(PTX ISA 9.1: 9.7.14.5.2 m8n8k4 .f64, 9.7.14.5.6 m16n8k4, 9.7.14.5.7 m16n8k8, 9.7.14.5.8
m16n8k16, 9.7.14.5.15 ldmatrix Figure 104), not from the emulator's header.

A probe kernel hands every lane the registers the documented layout gives it (built here in
Python from random matrices), runs one instruction, and writes its raw result registers back;
the test decodes them with the documented layout and compares with float64. The same probes
run on a GPU (marked `gpu`), which is how the layouts here are checked against hardware."""
import re

import numpy as np
import pytest

from grader.emu import compile_module
from grader.runtime import backend as backends
from grader.runtime.errors import KernelFault, Unsupported

RNG = np.random.default_rng(16)
BACKENDS = ["emu", pytest.param("gpu", marks=pytest.mark.gpu)]


def _load(src, which):
    return backends.load(src, which)


def _gpu_arch():
    from grader.runtime.device import device_info

    info = device_info()
    return int(info.arch.replace("sm_", "")) if info else 0


# ---------------------------------------------------------------- documented layouts
# g = lane >> 2 (groupID), t = lane % 4 (threadID_in_group); element i of the lane's operand.
def a_rc(shape, f64, lane, i):
    g, t = lane >> 2, lane & 3
    if shape == (8, 8, 4):
        return g, t
    if f64:  # m16n8k4: row g (a0) / g+8 (a1), col t;  k8, k16: row g + 8(i%2), col t + 4(i//2)
        return (g + 8 * i, t) if shape[2] == 4 else (g + 8 * (i % 2), t + 4 * (i // 2))
    if shape[2] == 16:  # rows g for a0,a1,a4,a5, else g+8; cols 2t + (i&1) (+8 for i >= 4)
        return g + (8 if i in (2, 3, 6, 7) else 0), 2 * t + (i & 1) + (8 if i >= 4 else 0)
    return g + (8 if i >= 2 else 0), 2 * t + (i & 1)  # m16n8k8 f16


def b_rc(shape, f64, lane, i):
    g, t = lane >> 2, lane & 3
    if shape == (8, 8, 4) or f64:
        return t + 4 * i, g
    if shape[2] == 16:
        return 2 * t + (i & 1) + (8 if i >= 2 else 0), g
    return 2 * t + i, g


def c_rc(shape, lane, i):
    g, t = lane >> 2, lane & 3
    if shape == (8, 8, 4):
        return g, 2 * t + i
    return g + (8 if i >= 2 else 0), 2 * t + (i & 1)


# (shape, D type, A/B type, C type)
FORMS = [((16, 8, 16), "f32", "f16", "f32"), ((16, 8, 16), "f32", "bf16", "f32"), ((16, 8, 16), "f16", "f16", "f16"),
         ((16, 8, 8), "f32", "f16", "f32"), ((16, 8, 8), "f32", "bf16", "f32"),
         ((8, 8, 4), "f64", "f64", "f64"), ((16, 8, 4), "f64", "f64", "f64"), ((16, 8, 8), "f64", "f64", "f64"),
         ((16, 8, 16), "f64", "f64", "f64")]


def _bits16(x: np.ndarray, typ: str) -> np.ndarray:
    if typ == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    b = x.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF  # bf16, round to nearest even


def _value16(bits: np.ndarray, typ: str) -> np.ndarray:
    bits = bits.astype(np.uint32) & 0xFFFF
    if typ == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    return (bits << 16).view(np.float32).astype(np.float64)


def _registers(mat, coords, n_elems, typ):
    """[32, regs] words of every lane's fragment of `mat`: doubles, floats, or uint32 pairs of
    16-bit values (element 2j in the low half of register j)."""
    vals = np.array([[mat[coords(lane, i)] for i in range(n_elems)] for lane in range(32)])
    if typ == "f64":
        return vals.astype(np.float64)
    if typ == "f32":
        return vals.astype(np.float32)
    b = _bits16(vals, typ)
    return (b[:, 0::2] | (b[:, 1::2] << 16)).astype(np.uint32)


def _probe_source(shape, dt, at, ct):
    M, N, K = shape
    f64 = at == "f64"
    ra, rb = (M * K // 32, K * N // 32) if f64 else (M * K // 64, K * N // 64)
    rc = M * N // 32 // (2 if ct == "f16" else 1)
    rd = M * N // 32 // (2 if dt == "f16" else 1)
    ctype = {"f64": "double", "f32": "float", "f16": "unsigned", "bf16": "unsigned"}
    cons = {"f64": "d", "f32": "f", "f16": "r", "bf16": "r"}
    n = 0

    def ops(count, prefix):
        nonlocal n
        out = "{" + ", ".join(f"%{n + i}" for i in range(count)) + "}"
        n += count
        return out

    d, a, b, c = ops(rd, "d"), ops(ra, "a"), ops(rb, "b"), ops(rc, "c")
    outs = ", ".join(f'"={cons[dt]}"(d[{i}])' for i in range(rd))
    ins = ", ".join([f'"{cons[at]}"(a[{i}])' for i in range(ra)] + [f'"{cons[at]}"(b[{i}])' for i in range(rb)]
                    + [f'"{cons[ct]}"(c[{i}])' for i in range(rc)])
    return f"""
extern "C" __global__ void probe(const {ctype[at]}* RA, const {ctype[at]}* RB, const {ctype[ct]}* RC, {ctype[dt]}* RD)
{{
    const int l = threadIdx.x;
    {ctype[at]} a[{ra}], b[{rb}];
    {ctype[ct]} c[{rc}];
    {ctype[dt]} d[{rd}];
    for (int i = 0; i < {ra}; ++i) a[i] = RA[l * {ra} + i];
    for (int i = 0; i < {rb}; ++i) b[i] = RB[l * {rb} + i];
    for (int i = 0; i < {rc}; ++i) c[i] = RC[l * {rc} + i];
    asm volatile("mma.sync.aligned.m{M}n{N}k{K}.row.col.{dt}.{at}.{at}.{ct} "
                 "{d}, {a}, {b}, {c};\\n"
                 : {outs}
                 : {ins});
    for (int i = 0; i < {rd}; ++i) RD[l * {rd} + i] = d[i];
}}
""", (ra, rb, rc, rd)


# Forms the PTX grammar lists but ptxas refuses (H100, CUDA 13, 2026-11-26): both backends must refuse
# them at compile time, the emulator with ptxas's reason and the student's line.
REFUSED = [((16, 8, 16), "f32", "f16", "f16")]


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("form", REFUSED, ids=lambda f: f"m{f[0][0]}n{f[0][1]}k{f[0][2]}.{f[1]}.{f[2]}.{f[3]}")
def test_mma_forms_ptxas_refuses_do_not_compile(form, which):
    from grader.runtime.errors import CompileError

    src, _ = _probe_source(*form)
    with pytest.raises(CompileError) as e:
        _load(src, which)
    assert ".dtype must be '.f16' when .ctype is '.f16'" in str(e.value) + getattr(e.value, "log", "")
    if which == "emu":
        asm_line = next(i for i, l in enumerate(src.splitlines(), 1) if "mma.sync" in l)
        assert e.value.line == asm_line, (e.value.line, asm_line)


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"m{f[0][0]}n{f[0][1]}k{f[0][2]}.{f[1]}.{f[2]}.{f[3]}")
def test_mma_matches_the_documented_fragment_layouts(form, which):
    shape, dt, at, ct = form
    f64 = at == "f64"
    if which == "gpu" and f64 and shape != (8, 8, 4) and _gpu_arch() < 90:
        pytest.skip("f64 m16n8k4/k8/k16 need sm_90")
    M, N, K = shape
    src, (ra, rb, rc, rd) = _probe_source(shape, dt, at, ct)
    mod = _load(src, which)
    A, B, C = RNG.uniform(-1, 1, (M, K)), RNG.uniform(-1, 1, (K, N)), RNG.uniform(-1, 1, (M, N))
    RA = _registers(A, lambda lane, i: a_rc(shape, f64, lane, i), M * K // 32, at)
    RB = _registers(B, lambda lane, i: b_rc(shape, f64, lane, i), K * N // 32, at)
    RC = _registers(C, lambda lane, i: c_rc(shape, lane, i), M * N // 32, ct)
    assert RA.shape == (32, ra) and RB.shape == (32, rb) and RC.shape == (32, rc)
    RD = np.zeros((32, rd), {"f64": np.float64, "f32": np.float32, "f16": np.uint32}[dt])
    xp = mod.xp
    args = [xp.asarray(RA.ravel()), xp.asarray(RB.ravel()), xp.asarray(RC.ravel()), xp.asarray(RD.ravel())]
    mod.launch("probe", (1, 1, 1), (32, 1, 1), args)
    out = args[3].get() if hasattr(args[3], "get") else args[3]
    out = out.reshape(32, rd)
    # what each lane's result registers stand for, placed by the documented C/D layout
    D = np.full((M, N), np.nan)
    for lane in range(32):
        if dt == "f16":
            words = out[lane].astype(np.uint32)
            elems = np.ravel(np.stack([_value16(words, "f16"), _value16(words >> 16, "f16")], axis=1))
        else:
            elems = out[lane].astype(np.float64)
        for i, v in enumerate(elems):
            D[c_rc(shape, lane, i)] = v
    # float64 reference of the values the registers held (inputs rounded to their type)
    rounded = {"f64": lambda x: x, "f32": lambda x: x.astype(np.float32).astype(np.float64),
               "f16": lambda x: _value16(_bits16(x, "f16"), "f16"), "bf16": lambda x: _value16(_bits16(x, "bf16"), "bf16")}
    ref = rounded[at](A) @ rounded[at](B) + rounded[ct](C)
    tol = 1e-12 if f64 else (2e-3 if dt == "f16" else 1e-5)
    assert np.isfinite(D).all(), "some element of D was never written by any lane"
    assert np.abs(D - ref).max() < tol, np.abs(D - ref).max()


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"m{f[0][0]}n{f[0][1]}k{f[0][2]}.{f[1]}.{f[2]}.{f[3]}")
def test_a_keyed_run_of_every_mma_form_is_the_graders_signed_sum(form):
    """The tensor-core probe (grader.problems.signed_products): in a keyed run the runner's parent executes
    the instruction, each product's sign flipped by a hash of its operands' bits in their own type."""
    from grader.problems import signed_products

    shape, dt, at, ct = form
    f64 = at == "f64"
    M, N, K = shape
    src, (ra, rb, rc, rd) = _probe_source(shape, dt, at, ct)
    mod = compile_module(src)
    A, B = RNG.integers(-3, 4, (M, K)).astype(np.float64), RNG.integers(-3, 4, (K, N)).astype(np.float64)
    C = RNG.integers(-3, 4, (M, N)).astype(np.float64)
    RA = _registers(A, lambda lane, i: a_rc(shape, f64, lane, i), M * K // 32, at)
    RB = _registers(B, lambda lane, i: b_rc(shape, f64, lane, i), K * N // 32, at)
    RC = _registers(C, lambda lane, i: c_rc(shape, lane, i), M * N // 32, ct)
    RD = np.zeros((32, rd), {"f64": np.float64, "f32": np.float32, "f16": np.uint32}[dt])
    key = 0x2545F4914F6CDD1D
    res = mod.launch("probe", (1, 1, 1), (32, 1, 1), [RA.ravel(), RB.ravel(), RC.ravel(), RD.ravel()], tc_key=key)
    assert res.tensor_ops == {shape: 1}  # counted by the parent that executed it
    D = np.full((M, N), np.nan)
    for lane in range(32):
        words = RD[lane]
        elems = (np.ravel(np.stack([_value16(words, "f16"), _value16(words >> 16, "f16")], axis=1)) if dt == "f16"
                 else words.astype(np.float64))
        for i, v in enumerate(elems):
            D[c_rc(shape, lane, i)] = v
    raw = {"f64": np.float64, "f16": np.float16}.get(at)  # the operands' own type, whose bits are hashed
    a_raw, b_raw = ((A.astype(raw), B.astype(raw)) if raw else
                    (_bits16(A, at).astype(np.uint16), _bits16(B, at).astype(np.uint16)))
    want = signed_products.signed_sum(key, a_raw, A, b_raw, B) + C  # small integers: exact in every type
    assert np.array_equal(D, want), np.argwhere(D != want)[:5]
    assert not np.array_equal(want, A @ B + C)  # and some products were flipped


# ---------------------------------------------------------------- ldmatrix
PERM = (3, 0, 7, 1, 6, 2, 5, 4)  # lane 8j + r gives stored row PERM[r] of matrix j


def _ldmatrix_source(num, trans, shared):
    regs = "{" + ", ".join(f"%{i}" for i in range(num)) + "}"
    outs = ", ".join(f'"=r"(r[{i}])' for i in range(num))
    space = ".shared" if shared else ""
    addr = ('"r"(static_cast<unsigned>(__cvta_generic_to_shared(row)))' if shared else '"l"(row)')
    return f"""
#include <cuda_fp16.h>
__constant__ int perm[8] = {{{', '.join(map(str, PERM))}}};
extern "C" __global__ void ldm(const half* M, unsigned* out)
{{
    __shared__ __align__(16) half s[4 * 8 * 24];  // 4 matrices of 8 rows, rows of 24 halves (48 bytes)
    for (int i = threadIdx.x; i < 4 * 8 * 24; i += 32) s[i] = M[i];
    __syncthreads();
    const int l = threadIdx.x;
    const half* row = &s[((l / 8) % {num} * 8 + perm[l % 8]) * 24];
    unsigned r[{num}];
    asm volatile("ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}{space}.b16 {regs}, [%{num}];\\n"
                 : {outs} : {addr});
    for (int j = 0; j < {num}; ++j) out[l * 4 + j] = r[j];
}}
"""


@pytest.mark.parametrize("which", BACKENDS)
@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["", "trans"])
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "generic"])
def test_ldmatrix_matches_the_documented_layout(num, trans, shared, which):
    mod = _load(_ldmatrix_source(num, trans, shared), which)
    stored = np.arange(4 * 8 * 24).reshape(4, 8, 24) % 2048  # exact in fp16
    xp = mod.xp
    M = xp.asarray(stored.astype(np.float16).ravel())
    out = xp.zeros(128, dtype=np.uint32)
    mod.launch("ldm", (1, 1, 1), (32, 1, 1), [M, out])
    out = (out.get() if hasattr(out, "get") else out).reshape(32, 4)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for j in range(num):
            mat = stored[j][list(PERM)][:, :8]  # matrix j as the lanes' addresses give it
            lo, hi = (mat[2 * t, g], mat[2 * t + 1, g]) if trans else (mat[g, 2 * t], mat[g, 2 * t + 1])
            word = int(out[lane, j])
            got = (_value16(np.array([word]), "f16")[0], _value16(np.array([word >> 16]), "f16")[0])
            assert got == (lo, hi), (lane, j, got, (lo, hi))


# ---------------------------------------------------------------- cp.async, cvta, mov
CPASYNC = r"""
#include <cuda_fp16.h>
extern "C" __global__ void cp(const half* src, unsigned* out, int mode)
{
    extern __shared__ __align__(128) half s[];  // 8 rows of 8 halves
    const int l = threadIdx.x;
    unsigned base;
    asm volatile("{\n .reg .u64 a;\n cvta.to.shared.u64 a, %1;\n cvt.u32.u64 %0, a;\n}\n" : "=r"(base) : "l"(s));
    if (l < 8) {
        if (mode == 3 && l == 7)  // the last row: 8 bytes copied, the other 8 zero-filled
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, 8;\n" :: "r"(base + 16 * l), "l"(src + 8 * l));
        else
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                         :: "r"(base + 16 * l), "l"(src + 8 * l) : "memory");
    }
    if (mode == 1) {
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        asm volatile("cp.async.wait_group %0;\n" :: "n"(0) : "memory");
    } else if (mode >= 2) {
        asm volatile("cp.async.wait_all;\n" ::: "memory");
    }
    __syncwarp();
    unsigned r0, r1, r2, r3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r0) : "r"(base + 16 * (l % 8)));
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[l] = r0;
    out[32 + l] = lane;
    out[64 + l] = base == static_cast<unsigned>(__cvta_generic_to_shared(s)) ? 1u : 0u;
    (void)r1; (void)r2; (void)r3;
}
"""


def test_cp_async_in_ptx_lands_at_its_wait():
    mod = compile_module(CPASYNC, name="ptx_cp")
    x = np.arange(64).astype(np.float16)
    for mode in (1, 2, 3):
        out = np.zeros(96, np.uint32)
        mod.launch("cp", 1, 32, [x, out, mode], shared_mem=128)
        assert (out[32:64] == np.arange(32)).all()  # %laneid
        assert (out[64:] == 1).all()  # the .reg/cvta/cvt form gives __cvta_generic_to_shared's address
        lo = _value16(out[:32], "f16").reshape(8, 4)
        expect = x.reshape(8, 8)[:, 0::2].astype(np.float64)
        if mode == 3:
            expect[7, 2:] = 0.0  # row 7: halves 4-7 zero-filled (src-size 8 of 16)
        assert (lo == expect).all(), (mode, lo)


def test_ldmatrix_of_a_copy_not_waited_for_is_reported():
    mod = compile_module(CPASYNC, name="ptx_cp")
    out = np.zeros(96, np.uint32)
    with pytest.raises(KernelFault) as e:
        mod.launch("cp", 1, 32, [np.zeros(64, np.float16), out, 0], shared_mem=128)
    assert e.value.kind == "async-copy"
    line = CPASYNC.split("\n").index(next(ln for ln in CPASYNC.split("\n") if "x1.shared.b16" in ln)) + 1
    assert e.value.where.line == line


# ---------------------------------------------------------------- diagnostics
def _one(body, threads=32, name="diag"):
    src = ('#include <cuda_fp16.h>\nextern "C" __global__ void k(float* x)\n{\n'
           '    __shared__ __align__(16) half s[8 * 8 * 4];\n    unsigned r0 = 0, r1 = 0, r2 = 0, r3 = 0;\n'
           + body + "\n    x[threadIdx.x] = (float)(r0 + r1 + r2 + r3);\n}\n")
    mod = compile_module(src, name=name)
    with pytest.raises(KernelFault) as e:
        mod.launch("k", 1, threads, [np.zeros(threads, np.float32)])
    return src, e.value


LDSM = ('    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n"\n'
        '                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(ADDR));')


def test_misaligned_ldmatrix_row_is_reported():
    body = LDSM.replace("ADDR", "static_cast<unsigned>(__cvta_generic_to_shared(&s[threadIdx.x * 8 + 4]))")
    src, fault = _one(body, name="ldsm_misaligned")
    assert fault.kind == "misaligned-address" and "16-byte" in str(fault)
    assert fault.where.line == 6


def test_address_not_from_cvta_is_reported():
    src, fault = _one(LDSM.replace("ADDR", "threadIdx.x * 16u"), name="ldsm_not_shared")
    assert "is not a shared-memory address" in str(fault)


def test_mma_in_a_partial_warp_is_reported():
    body = ('    float d[4] = {0, 0, 0, 0};\n'
            '    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "\n'
            '                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"\n'
            '                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])\n'
            '                 : "r"(r0), "r"(r1), "r"(r2), "r"(r3), "r"(r0), "r"(r1));\n'
            '    r0 = (unsigned)d[0];')
    src, fault = _one(body, threads=16, name="mma_partial")
    assert fault.kind == "partial-warp-collective" and "mma.sync" in str(fault)


def test_line_numbers_survive_multiline_asm_and_macros():
    src = r"""#include <cuda_fp16.h>
#define LDSM_X1(R, ADDR) \
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" \
                 : "=r"(R) \
                 : "r"(ADDR))
extern "C" __global__ void k(const half* M, float* x)
{
    __shared__ __align__(16) half s[64];
    for (int i = threadIdx.x; i < 64; i += 32) s[i] = M[i];
    __syncthreads();
    unsigned r;
    LDSM_X1(r, static_cast<unsigned>(__cvta_generic_to_shared(&s[(threadIdx.x % 8) * 8])));
    unsigned r2;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r2)
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&s[(threadIdx.x % 8) * 8]))));
    x[threadIdx.x] = (float)(r == r2);
    x[threadIdx.x + 64] = 1.0f;
}
"""
    mod = compile_module(src, name="ptx_lines")
    M = np.arange(64).astype(np.float16)
    x = np.zeros(32 + 64, np.float32)
    with pytest.raises(KernelFault) as e:  # threads 0..31 write x[64..95]: 32 + 64 = 96 elements, ok;
        mod.launch("k", 1, 64, [M, x])     # threads 32..63 write past the end
    assert e.value.kind == "out-of-bounds"
    assert e.value.where.line == src.split("\n").index("    x[threadIdx.x + 64] = 1.0f;") + 1


def test_unsupported_ptx_is_refused_by_name():
    from grader.runtime import kernels

    with pytest.raises(Unsupported) as e:
        compile_module(kernels.source("hgemm_wgmma"), name="wgmma")
    assert "Hopper's asynchronous machinery" in str(e.value) and "needs an sm_90 GPU" in str(e.value)
    src = ('extern "C" __global__ void k(float* x)\n{\n    unsigned v;\n'
           '    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(0u));\n    x[0] = v;\n}\n')
    with pytest.raises(Unsupported) as e:
        compile_module(src, name="ldshared")
    assert re.search(r"'ld\.shared\.u32' \(line 4\) is not supported by the CPU emulator", str(e.value))
