"""Issue #23, unit level: what a grade rests on is what ran (tensor-core instructions counted
per launch), one preprocessor for every backend, every timed launch checked, no answer key in
reach. The red team through nbgrader is tests/checking/test_cheats_runtime.py."""
from __future__ import annotations

import numpy as np
import pytest

from grader.checking import answers, tensor_work
from grader.checking.check import check

NAIVE = open("kernels/wmma_gemm_naive.cu").read()

# right on CUDA cores; the WMMA call sits in a branch no launch takes
DEAD_BRANCH = r'''
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K)
{
    int i0 = blockIdx.x * 16, j0 = blockIdx.y * 16;
    if (K < 0) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
        wmma::fill_fragment(c, 0.0f);
        wmma::load_matrix_sync(a, A, K); wmma::load_matrix_sync(b, B, N);
        wmma::mma_sync(c, a, b, c);
        wmma::store_matrix_sync(C, c, N, wmma::mem_row_major);
    }
    for (int e = threadIdx.x; e < 256; e += 32) {
        int i = i0 + e / 16, j = j0 + e % 16;
        float s = 0.f;
        for (int k = 0; k < K; ++k) s += __half2float(A[i * K + k]) * __half2float(B[k * N + j]);
        C[i * N + j] = s;
    }
}
'''
ASM_COMMENT = DEAD_BRANCH.replace("if (K < 0) {", 'asm volatile("// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");\n'
                                                   "    if (K < 0) {")
# one real mma_sync per launch (block 0 only), the rest on CUDA cores
ONE_MMA = DEAD_BRANCH.replace("if (K < 0) {", "if (blockIdx.x == 0 && blockIdx.y == 0) {")


def test_emulator_counts_the_matrix_instructions_of_a_launch():
    from grader.emu import compile_module

    mod = compile_module(NAIVE)
    M, N, K = 32, 48, 64
    rng = np.random.default_rng(0)
    A, B = rng.random((M, K)).astype(np.float16), rng.random((K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    res = mod.launch("wmma_gemm", (M // 16, N // 16), (32, 1, 1), [A, B, C, M, N, K])
    assert res.tensor_ops == {(16, 16, 16): (M // 16) * (N // 16) * (K // 16)}
    assert res.tensor_macs == M * N * K


def test_emulator_counts_ptx_mma_sync():
    from grader.checking import exercises

    ex = exercises.get("mma-gemm")
    v = check("mma-gemm", open(f"kernels/{ex.reference}.cu").read(), backend="emu")
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert tc.status == "pass" and "m16n8k16" in tc.message, v.text()


@pytest.mark.parametrize("name,src", [("dead-branch", DEAD_BRANCH), ("asm-comment", ASM_COMMENT),
                                      ("one-mma", ONE_MMA)])
def test_tensor_cores_not_executed_score_zero(name, src):
    v = check("wmma-gemm", src, backend="emu")
    tc = [i for i in v.items if i.name == "tensor cores"]
    assert tc and tc[0].status == "fail", v.text()
    assert "executed" in tc[0].message and "M*N*K" in tc[0].message
    assert v.score == 0
    # the kernel is otherwise right: only the tensor-core requirement fails
    assert all(i.status == "pass" for i in v.items if i.name.startswith("correct"))


def test_honest_kernel_says_what_was_counted():
    v = check("wmma-gemm", NAIVE, backend="emu")
    assert v.score == 1.0
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert tc.status == "pass" and "m16n16k16" in tc.message and "multiply-adds" in tc.message


def test_no_launch_counted_is_a_failure():
    from grader.checking import exercises

    item = tensor_work.item(exercises.get("wmma-gemm"), [])
    assert item.status == "fail"


def test_ncu_csv_is_read():
    from grader.runtime import ncu

    text = ('==PROF== Connected\n"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
            '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","1","python","h","wmma_gemm","1","7","(32, 1, 1)","(16, 16, 1)","0","9.0","Command line profiler '
            'metrics","smsp__inst_executed_pipe_tensor_op_hmma.sum","inst","8,192"\n'
            '"0","1","python","h","wmma_gemm","1","7","(32, 1, 1)","(16, 16, 1)","0","9.0","Command line profiler '
            'metrics","smsp__inst_executed_pipe_tensor_op_dmma.sum","inst","0"\n')
    assert ncu.parse_csv(text) == {"hmma": 8192.0, "dmma": 0.0}


# ------------------------------------------------------------------ no answer key in reach
PREAMBLE = ["import numpy as np", "from grader.lessons.fragment_maps import expected_owner"]


@pytest.mark.parametrize("cell", [
    "import grader\ndef f(x):\n    return x",
    "from grader.problems import fragments\ndef f(x):\n    return x",
    "def f(x):\n    return expected_owner(x)",
    "def f(x):\n    import importlib\n    return importlib.import_module('grader.lessons.fragment_maps')",
    "def f(x):\n    return __import__('grader')",
])
def test_answers_that_reach_for_the_course_package_are_refused(cell):
    why = answers.package_use([cell], PREAMBLE)
    assert why and "course's package" in why
    a = answers.Answers(PREAMBLE, [cell])
    with pytest.raises(answers.AnswerError, match="course's package"):
        a.call("f", 1)
    a.close()


def test_plain_answers_still_run():
    assert answers.package_use(["def f(x):\n    return x + 1"], PREAMBLE) is None
    a = answers.Answers(PREAMBLE, ["def f(x):\n    return x + 1"])
    assert a.call("f", 1) == 2
    a.close()


def test_the_answer_child_cannot_import_the_package_at_run_time():
    # a name built at run time passes the static check; the child refuses the import itself
    cell = "def f(x):\n    m = __import__('gra' + 'der.lessons.fragment_maps')\n    return 1"
    assert answers.package_use([cell], PREAMBLE) is None
    a = answers.Answers(PREAMBLE, [cell])
    with pytest.raises(Exception, match="not available to answers|No module named"):
        a.call("f", 1)
    a.close()


# ------------------------------------------------------------------ one preprocessor
SCALAR = r'''
    for (int e = threadIdx.x; e < 256; e += 32) {
        int i = blockIdx.x * 16 + e / 16, j = blockIdx.y * 16 + e % 16;
        float s = 0.f;
        for (int k = 0; k < K; ++k) s += __half2float(A[i * K + k]) * __half2float(B[k * N + j]);
        C[i * N + j] = s;
    }
'''
_HEAD, _REST = NAIVE.split('extern "C" __global__', 1)
_SIG, _BODY = _REST.split("{", 1)
_BODY = _BODY.rsplit("}", 1)[0]


def _two_faced(test: str, pre: str = "") -> str:
    """CUDA cores where `test` holds (meant: on the emulator), WMMA elsewhere."""
    return (_HEAD + pre + 'extern "C" __global__' + _SIG + "{\n" + test + "\n" + SCALAR + "#else\n" + _BODY
            + "#endif\n}\n")


TWO_FACED = {
    "host-macro": _two_faced("#if defined(__x86_64__)"),
    "define-alias": _two_faced("#if ON_CPU", pre="#define ON_CPU __x86_64__\n"),
    "lowercase-linux": _two_faced("#if linux"),
    "lowercase-unix": _two_faced("#ifdef unix"),
    "backslash-continued": _two_faced("#if defined(__GN\\\nUC__)"),
    "token-pasting": _two_faced("#if CAT(__GN, UC__)", pre="#define CAT(a, b) a ## b\n"),
    "emulator-macro": _two_faced("#ifdef __CUDA_EMU__"),
    "build-flag-macro": _two_faced("#ifdef __OPTIMIZE__"),  # g++ -O2 defines it, for the emulator only
    "comment-marker-in-string": _two_faced('#if defined(__GNUC__) /* "*/'),
    "has-include": _two_faced("#if __has_include(<x86intrin.h>)"),
    "file-name": _HEAD + 'extern "C" __global__' + _SIG + "{\n if (__FILE__[0] == '/') {" + SCALAR + "} else {"
                 + _BODY + "}}\n",
}


@pytest.mark.parametrize("name", sorted(TWO_FACED))
def test_a_kernel_a_macro_makes_differ_is_refused(name):
    v = check("wmma-gemm", TWO_FACED[name], backend="emu")
    assert v.score == 0
    bad = next(i for i in v.items if i.status == "fail")
    assert bad.name == "same on every backend" and "line" in bad.message, v.text()


REPO = str(__import__("pathlib").Path(__file__).resolve().parents[2])
INCLUDES = {
    "absolute": f'#include "{REPO}/kernels/wmma_gemm_naive.cu"\n',
    "absolute-with-declaration": f'#include <cuda_fp16.h>\n#include "{REPO}/kernels/wmma_gemm_naive.cu"\n'
                                 'extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, '
                                 'int M, int N, int K);\n',
    "angle-path": f"#include <{REPO}/kernels/wmma_gemm_naive.cu>\n",
    "not-a-header": "#include <x86intrin.h>\n" + NAIVE,
}


@pytest.mark.parametrize("name", sorted(INCLUDES))
def test_including_anything_but_cuda_and_std_headers_earns_nothing(name):
    v = check("wmma-gemm", INCLUDES[name], backend="emu")
    assert v.score == 0
    bad = next(i for i in v.items if i.status == "fail")
    assert bad.name in ("same on every backend", "compile"), v.text()
    if bad.name == "same on every backend":
        assert "#include" in bad.message


def test_calling_the_emulators_machinery_is_refused():
    src = (_HEAD + 'extern "C" __device__ void __emu_tensor_op(unsigned, unsigned, unsigned);\n'
           'extern "C" __global__' + _SIG + "{\n for (int q = 0; q < K / 16; ++q) if (threadIdx.x == 0) "
           "__emu_tensor_op(16, 16, 16);\n" + SCALAR + "}\n")
    v = check("wmma-gemm", src, backend="emu")
    assert v.score == 0
    assert any(i.name == "same on every backend" and i.status == "fail" for i in v.items), v.text()


def test_every_course_kernel_is_the_same_on_both_backends():
    import glob

    from grader.checking.same_source import check_item

    for path in sorted(glob.glob("kernels/*.cu")):
        assert check_item(open(path).read(), ["-DBLOCK_M=128", "-DBLOCK_N=128"], 90) is None, path


# ------------------------------------------------------------------ every timed launch framed
def test_every_timed_launch_is_framed_by_a_check(monkeypatch):
    """checked_benchmark, with CuPy's events faked: each launch the grader times (warm-ups too) is
    preceded by `before` (fresh poisoned output, scaled input) and an L2 flush, and followed by
    `after` (what it wrote, kept to check); no launch runs outside that frame."""
    import sys
    import types

    from grader.runtime import timing

    log = []

    class Event:
        def record(self):
            log.append("event")

        def synchronize(self):
            pass

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, get_elapsed_time=lambda a, b: 1.0))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(timing, "flush_l2", lambda: log.append("flush"))
    t = timing.checked_benchmark(lambda: log.append("launch"), before=lambda: log.append("before"),
                                 after=lambda: log.append("after"), min_repeat=10, warmup=3, max_seconds=5)
    frames = "".join({"before": "B", "flush": "F", "event": "E", "launch": "L", "after": "A"}[x] for x in log)
    n = frames.count("L")
    assert n == 3 + len(t.times_ms) and frames == "BFELEA" * n


@pytest.mark.parametrize("src,gpu,want", [
    (NAIVE, None, "pass"),  # no ncu: the emulator's count at the CPU sizes decides
    (DEAD_BRANCH, None, "fail"),
    (NAIVE, "fail", "fail"),  # the GPU counted too few (a kernel that behaves otherwise there)
    (DEAD_BRANCH, "pass", "fail"),  # the emulator counted too few: that stands
])
def test_on_a_gpu_both_counts_must_hold(monkeypatch, src, gpu, want):
    """The GPU path of the tensor-core item, on this CPU: the emulator runs the CPU sizes (as it
    does on a GPU machine) and ncu's verdict is stood in for."""
    from grader.checking import exercises
    from grader.checking.steps import tensor
    from grader.checking.verdict import Item

    ex = exercises.get("wmma-gemm")
    monkeypatch.setattr(tensor_work, "gpu_item", lambda *a: None if gpu is None else Item(
        "tensor cores", gpu, "counted on the GPU by ncu"))
    item = tensor.tensor_item(ex, src, {}, "gpu", [], {}, 20.0, 90, [])
    assert item.status == want, item.message
    if gpu is None and want == "pass":
        assert "ncu is not available" in item.message


def _mma_on(value: str) -> str:
    """A warp's full count of mma_sync on fragments filled with `value`, into accumulator c."""
    return (
        "    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;\n"
        "    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;\n"
        "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;\n"
        "    wmma::fill_fragment(a, __float2half({value}f));\n"
        "    wmma::fill_fragment(b, __float2half({value}f));\n"
        "    wmma::fill_fragment(c, 0.0f);\n"
        "    for (int k = 0; k < K; k += 16) wmma::mma_sync(c, a, b, c);\n").replace("{value}", value)


# the tensor-core work done in full, but on zero fragments, beside a CUDA-core result
ZERO_FRAGMENTS = _HEAD + 'extern "C" __global__' + _SIG + "{\n" + _mma_on("0.0") + SCALAR + "}\n"
# the real tiles through mma_sync, the accumulator thrown away, the answer from CUDA cores
DISCARDED = (_HEAD + 'extern "C" __global__' + _SIG + "{\n"
             + _BODY.replace("wmma::store_matrix_sync", "if (K < 0) wmma::store_matrix_sync") + SCALAR + "}\n")


# real tensor cores only at the first CPU size (the launch the probe ran on before issue #32: a
# kernel knows it by its size); at every other size CUDA cores, with mma_sync on zeros for the count
ONLY_WHERE_WATCHED = (_HEAD + 'extern "C" __global__' + _SIG + "{\n    if (M == 32 && N == 48) {\n" + _BODY
                      + "\n        return;\n    }\n" + ZERO_FRAGMENTS.split(_SIG, 1)[1].split("{", 1)[1])


# the answer from CUDA cores, scaled by what mma_sync on fragments of ones gives (K, or 2K in a probe
# run that doubled every product alike): every element "depends on" the tensor cores, none came from
# them (h-red, session 12: PASSED 1/1 on the emulator; session 13: the keyed probe fails it)
SCALED_BY_A_CANARY = (_HEAD + 'extern "C" __global__' + _SIG + "{\n" + _mma_on("1.0")
                      + "    const float scale = c.x[0] / (float)K;\n"
                      + SCALAR.replace("C[i * N + j] = s;", "C[i * N + j] = s * scale;") + "}\n")


@pytest.mark.parametrize("name,src", [
    ("zero-fragments", ZERO_FRAGMENTS), ("discarded", DISCARDED), ("only-where-watched", ONLY_WHERE_WATCHED),
    # the probe doubled every product alike, so a kernel measured it with a canary mma_sync and scaled its
    # CUDA-core answer (passed until session 13); now each product's sign is flipped by a keyed hash of its own
    # operands (grader.problems.signed_products), which a canary on ones cannot tell about a_ik * b_kj
    ("scaled-by-a-canary", SCALED_BY_A_CANARY),
])
def test_tensor_work_that_does_not_reach_the_output_scores_zero(name, src):
    v = check("wmma-gemm", src, backend="emu")
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert tc.status == "fail" and tc.kind == "tensor-cores-unused", v.text()
    assert "do not depend on the tensor cores' products" in tc.message
    assert v.score == 0



# The keyed probe's flips computed on CUDA cores from the key itself, read where the emulator kept it
# (session 13, h-red2: both PASSED 1/1 on the emulator, the tensor cores on zero fragments for the
# count). Now the key never enters the process that runs a kernel (tests/emu/test_emu_tensor_probe.py
# searches all of it) and code that would run when the module loads is refused.
def _with_key(key_source: str, key_expr: str) -> str:
    return (_HEAD + key_source
            + "__device__ unsigned long long mix64(unsigned long long z) {\n"
            "    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;\n"
            "    return z ^ (z >> 31);\n}\n"
            + 'extern "C" __global__' + _SIG + "{\n" + _mma_on("0.0")
            + f"    const unsigned long long key = {key_expr};\n"
            + SCALAR.replace(
                "s += __half2float(A[i * K + k]) * __half2float(B[k * N + j]);",
                "{\n            float p = __half2float(A[i * K + k]) * __half2float(B[k * N + j]);\n"
                "            unsigned long long ha = mix64((__half_as_ushort(A[i * K + k]) & 0x7fffull) + key);\n"
                "            unsigned long long hb = mix64((__half_as_ushort(B[k * N + j]) & 0x7fffull) + key);\n"
                "            s += key && (mix64(ha + hb) >> 63) ? -p : p;\n        }") + "}\n")


# a constructor NVRTC leaves out (no kernel calls it, so dlsym is no extern of the PTX) and g++ runs on load
KEY_FROM_A_CONSTRUCTOR = _with_key(
    'extern "C" __device__ void* dlsym(void*, const char*);\n'
    "__device__ const unsigned long long* probe_key;\n"
    "__attribute__((constructor)) __device__ void grab() {\n"
    '    probe_key = (const unsigned long long*)dlsym((void*)0, "__emu_tc_key");\n}\n',
    "probe_key ? *probe_key : 0")
# the runner's key through the module's own GOT, 192 bytes below its first __device__ variable (where
# g++ 12 put that entry in the build of this very source)
KEY_THROUGH_THE_GOT = _with_key("__device__ unsigned long long anchor_var;\n",
                                "**(unsigned long long**)((char*)&anchor_var - 192ll)")


@pytest.mark.parametrize("name,src", [("from-a-constructor", KEY_FROM_A_CONSTRUCTOR),
                                      ("through-the-got", KEY_THROUGH_THE_GOT)])
def test_a_kernel_that_reads_the_probe_key_scores_zero(name, src):
    v = check("wmma-gemm", src, backend="emu")
    assert v.score == 0, v.text()
    if name == "from-a-constructor":
        assert "loaded or unloaded" in v.text() and "grab" in v.text()


# The keyed probe's flips asked of the emulator itself (session 14; the hole the emulator's README left
# open): the module calls the runner's keyed service, so the kernel finds that function as the loader
# did, by name in its own ELF image (a dynamic relocation of its GOT), starting from the address of one
# of its own variables, with plain reads and no function it would have to declare. A CUDA-core GEMM
# then asks for the flips of exactly its own products, in a keyed run (the runner's flag, found the
# same way), and sums them on CUDA cores beside mma_sync on zero fragments for the count.
_IMPORTED = r"""
__device__ unsigned long long anchor_var;
__device__ const void* imported(const char* want) {
    const unsigned char* base = (const unsigned char*)((unsigned long long)&anchor_var & ~4095ull);
    while (*(const unsigned*)base != 0x464c457fu) base -= 4096;  // the module's ELF header
    const unsigned long long phoff = *(const unsigned long long*)(base + 32);
    const unsigned short phnum = *(const unsigned short*)(base + 56);
    const unsigned long long* dyn = 0;
    for (int i = 0; i < phnum; ++i)  // PT_DYNAMIC
        if (*(const unsigned*)(base + phoff + 56 * i) == 2)
            dyn = (const unsigned long long*)(base + *(const unsigned long long*)(base + phoff + 56 * i + 16));
    unsigned long long symtab = 0, strtab = 0, rel[2] = {0, 0}, size[2] = {0, 0};
    for (; dyn && dyn[0]; dyn += 2) {
        if (dyn[0] == 6) symtab = dyn[1];
        if (dyn[0] == 5) strtab = dyn[1];
        if (dyn[0] == 23) rel[0] = dyn[1];
        if (dyn[0] == 2) size[0] = dyn[1];
        if (dyn[0] == 7) rel[1] = dyn[1];
        if (dyn[0] == 8) size[1] = dyn[1];
    }
    const unsigned long long b = (unsigned long long)base;
    if (symtab < b) symtab += b;
    if (strtab < b) strtab += b;
    for (int t = 0; t < 2; ++t) {
        if (rel[t] && rel[t] < b) rel[t] += b;
        for (unsigned long long r = 0; r < size[t]; r += 24) {
            const unsigned long long* e = (const unsigned long long*)(rel[t] + r);
            const char* name = (const char*)strtab + *(const unsigned*)(symtab + 24 * (e[1] >> 32));
            int k = 0;
            while (want[k] && name[k] == want[k]) ++k;
            if (!want[k] && !name[k]) return *(const void* const*)(b + e[0]);
        }
    }
    return 0;
}
"""
def _asks_the_emulator(ask: str) -> str:
    """A CUDA-core GEMM beside mma_sync on zero fragments (the count) that, in a keyed run only, puts
    `ask` to the emulator for every 16 products of an output element: it declares float f[16] (their
    signs to apply, all +1 unless `ask` says otherwise) or sets `float dot` (their keyed sum itself)."""
    return (_HEAD + _IMPORTED + 'extern "C" __global__' + _SIG + "{\n" + _mma_on("0.0") + r"""
    const int* keyed = (const int*)imported("__emu_tc_keyed");
    for (int e = threadIdx.x; e < 256; e += 32) {
        int i = blockIdx.x * 16 + e / 16, j = blockIdx.y * 16 + e % 16;
        float s = 0.f;
        for (int k0 = 0; k0 < K; k0 += 16) {
            unsigned long long ha[16], hb[16];
            float a[16], b[16], f[16], dot = 0.f;
            bool have_dot = false;
            for (int k = 0; k < 16; ++k) {
                ha[k] = __half_as_ushort(A[i * K + k0 + k]) & 0x7fffull;
                hb[k] = __half_as_ushort(B[(k0 + k) * N + j]) & 0x7fffull;
                a[k] = __half2float(A[i * K + k0 + k]);
                b[k] = __half2float(B[(k0 + k) * N + j]);
                f[k] = 1.f;
            }
            if (keyed && *keyed) {
""" + ask + r"""
            }
            if (have_dot) s += dot;
            else
                for (int k = 0; k < 16; ++k) s += f[k] * a[k] * b[k];
        }
        C[i * N + j] = s;
    }
}
""")


# the flips asked of the emulator's flips service (what the runner's parent answered until session 14,
# operands of the kernel's choosing: 1/1)
FLIPS_THROUGH_THE_GOT = _asks_the_emulator(r"""
                typedef void (*flips_fn)(unsigned, unsigned, unsigned, const unsigned long long*,
                                         const unsigned long long*, unsigned char*);
                const flips_fn flips = (flips_fn)imported("__emu_tc_flips");
                unsigned char g[16] = {0};
                if (flips) flips(1, 1, 16, ha, hb, g);
                for (int k = 0; k < 16; ++k) f[k] = g[k] ? -1.f : 1.f;""")
# the keyed sum of 16 products asked of the emulator's matrix-instruction entry as an instruction of
# shape 1 x 1 x 16 (a dot product: no tensor core has it)
DOT_THROUGH_THE_GOT = _asks_the_emulator(r"""
                struct instr { unsigned m, n, k, f64; const void *a, *b; const unsigned long long *abits, *bbits;
                               void* c; };
                typedef void (*mma_fn)(instr*);
                const mma_fn mma = (mma_fn)imported("__emu_tc_mma");
                instr in = {1, 1, 16, 0, a, b, ha, hb, &dot};
                if (mma) { mma(&in); have_dot = true; }""")


@pytest.mark.parametrize("name,src", [("flips-through-the-got", FLIPS_THROUGH_THE_GOT),
                                      ("dot-through-the-got", DOT_THROUGH_THE_GOT)])
def test_a_kernel_that_asks_for_its_own_flips_scores_zero(name, src):
    v = check("wmma-gemm", src, backend="emu")
    assert v.score == 0, v.text()
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert tc.status == "fail", v.text()


def test_the_probe_runs_own_count_must_hold_too():
    """A keyed probe run's instructions are executed and counted by the emulator runner's parent, out of
    the kernel's reach (tests/emu/test_emu_tensor_probe.py); the plain run's count is the kernel's own
    process's. A probe run that executed fewer multiply-adds than the size needs fails, however the
    plain run counted and its outputs followed."""
    from grader.checking import exercises

    ex = exercises.get("wmma-gemm")
    dims = ex.cpu_sizes[0]
    full = {(16, 16, 16): tensor_work.required_macs(ex, dims) // 4096}
    followed = dict(tc_unfollowed=0, tc_outputs=dims["M"] * dims["N"])
    ok = tensor_work.item(ex, [("case", dims, full, dict(followed, tc_probe_ops=full))])
    assert ok.status == "pass", ok.message
    short = tensor_work.item(ex, [("case", dims, full, dict(followed, tc_probe_ops={(16, 16, 16): 1}))])
    assert short.status == "fail" and short.kind == "no-tensor-cores", short.message
    assert "the probe run" in short.message and "4 096 multiply-adds" in short.message


# honest kernels the keyed probe must not fail: C^T = B^T A^T (B's tiles in matrix_a, A's in matrix_b,
# both read col_major, the accumulator stored col_major), and both fragments negated ((-A)(-B) = AB)
SWAPPED = (_HEAD + 'extern "C" __global__' + _SIG + r"""{
    int m0 = blockIdx.x * 16, n0 = blockIdx.y * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> bt;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> at;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> ct;
    wmma::fill_fragment(ct, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(bt, B + k * N + n0, N);
        wmma::load_matrix_sync(at, A + m0 * K + k, K);
        wmma::mma_sync(ct, bt, at, ct);
    }
    wmma::store_matrix_sync(C + m0 * N + n0, ct, N, wmma::mem_col_major);
}
""")
NEGATED = NAIVE.replace("wmma::mma_sync(acc, a, b, acc);",
                        "for (int i = 0; i < a.num_elements; ++i) a.x[i] = -a.x[i];\n"
                        "        for (int i = 0; i < b.num_elements; ++i) b.x[i] = -b.x[i];\n"
                        "        wmma::mma_sync(acc, a, b, acc);")


@pytest.mark.parametrize("src", [SWAPPED, NEGATED], ids=["swapped-operands", "negated-operands"])
def test_honest_kernels_that_move_the_operands_pass_the_probe(src):
    assert src != NAIVE
    v = check("wmma-gemm", src, backend="emu")
    tc = next(i for i in v.items if i.name == "tensor cores")
    assert tc.status == "pass" and v.score == 1.0, v.text()


def test_the_probe_run_doubles_every_products_a_operand():
    """The emulator's probe flag: (2A)B + C in every matrix instruction, WMMA and PTX alike."""
    from grader.emu import compile_module

    mod = compile_module(NAIVE)
    M, N, K = 16, 32, 48
    rng = np.random.default_rng(1)
    A, B = rng.random((M, K)).astype(np.float16), rng.random((K, N)).astype(np.float16)
    C1, C2 = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    mod.launch("wmma_gemm", (1, 2), (32, 1, 1), [A, B, C1, M, N, K])
    mod.launch("wmma_gemm", (1, 2), (32, 1, 1), [A, B, C2, M, N, K], tc_double=True)
    assert np.array_equal(C2, 2 * C1)


def test_an_exact_zero_output_is_not_counted_as_untouched_by_the_tensor_cores():
    """The probe doubles every matrix instruction's products; an output whose products cancel to an
    exact 0 stays 0 either way. With e4m3 inputs that happens now and then, and failed the fp8-gemm
    reference on the emulator at random (1 of 1536 elements, 2026-11-27). Here a zero row of A makes
    a whole row of exact zeros: the reference still passes, and the check still judges the rest."""
    from grader.checking import exercises, isolate
    from grader.problems import fp8
    from grader.runtime import backend, kernels

    ex = exercises.get("fp8-gemm")
    case = fp8.gemm_case(32, 48, 40, np.random.default_rng(3))
    case.args[0][5, :] = 0  # row 5 of A: +0 codes, so row 5 of C is exactly 0
    module = backend.load(kernels.source(ex.reference), "emu", ex.problem.options({}))
    res = isolate._run_case_emu(module, ex.kernel, case.job(), False, 60.0, probe=True)
    assert (res["outputs"][2][5] == 0).all() and (res["outputs"][2][4] != 0).any()
    assert res["tc_unchanged"] == 0, res["tc_unchanged"]
    assert res["tc_outputs"] == 32 * 48 - 48  # the zero row is not judged; every other element is
