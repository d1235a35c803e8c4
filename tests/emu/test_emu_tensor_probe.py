"""The keyed tensor-core probe (grader.problems.signed_products): the emulator flips the sign of
each matrix instruction's product where the grader's own hash says, so the grader's reference of a
probe run is what an honest kernel gives. On small integers every partial sum is exact in fp32,
so the two must agree bit for bit whatever order a kernel sums in: a hash that differed between
the emulator (emu_abi.h) and NumPy for any operand type would show here."""
from __future__ import annotations

import numpy as np
import pytest

from grader.checking import exercises
from grader.problems import fp8
from grader.runtime import backend, kernels

TENSOR = [e.id for e in exercises.EXERCISES.values() if e.tensor_cores]


def _integer_case(ex, rng):
    """A case of the exercise's first CPU size with small integers for inputs (e4m3 codes of them),
    unit scales and an epilogue whose roundings are exact."""
    case = ex.problem.make(ex.cpu_sizes[0], rng, ex.launch_defaults)
    for i in (0, 1):
        a = case.args[i]
        v = rng.integers(-3, 4, a.shape)
        case.args[i] = fp8.encode(v) if a.dtype == np.uint8 else v.astype(a.dtype)
    if isinstance(ex.problem, fp8.Fp8Gemm):
        case.args[6] = case.args[7] = 1.0
    if getattr(ex.problem, "epilogue", False):
        case.args[2] = rng.integers(-3, 4, case.args[2].shape).astype(case.args[2].dtype)
        case.args[7], case.args[8] = 2.0, -1.0
    return case


@pytest.mark.parametrize("exercise", TENSOR)
def test_the_keyed_run_is_the_graders_signed_sum_exactly(exercise):
    ex = exercises.get(exercise)
    rng = np.random.default_rng(7)
    case = _integer_case(ex, rng)
    module = backend.load(kernels.source(ex.reference), "emu", ex.problem.options(ex.launch_defaults))
    outs, ops = {}, {}
    for key in (0, 0x9E3779B97F4A7C15, 0x1234567890ABCDEF):
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
        res = module.launch(ex.kernel, case.grid, case.block, args, case.shared_mem, tc_key=key)
        out = args[case.outputs[0]]
        outs[key], ops[key] = out, res.tensor_ops
        if key:
            (pos, (ref, bound)), = ex.problem.probe_reference(case, key).items()
            assert pos == case.outputs[0]
            got = out.astype(np.float64).reshape(ref.shape)
            assert np.array_equal(got, ref), (exercise, key, np.argwhere(got != ref)[:5])
    plain, k1, k2 = outs.values()
    # the flips happen, and another key flips other products
    assert not np.array_equal(plain, k1) and not np.array_equal(k1, k2)
    # a keyed run's count is the runner's parent's (it executed them): the same as the workers' own
    assert ops[0] and all(o == ops[0] for o in ops.values()), (exercise, ops)


# A kernel runs natively in the emulator's worker: whatever that process holds, a kernel can read
# (session 13's red team read the key of the process's own global through its module's GOT, and from
# a constructor through dlsym, and so computed the flipped sums on CUDA cores: full marks). This one
# searches every readable byte of its process, and the runner's input file, for the key (as
# key ^ mask == target, so the search never holds the key itself).
SCAN = r'''
#include <stdio.h>
#include <string.h>
static long long hits_in(const unsigned char* p, const unsigned char* end, unsigned long long mask,
                         unsigned long long target) {
    long long n = 0;
    for (; p + 8 <= end; ++p) {
        unsigned long long v;
        memcpy(&v, p, 8);
        if ((v ^ mask) == target) ++n;
    }
    return n;
}
extern "C" __global__ void scan(unsigned long long mask, unsigned long long target, long long* found,
                                const unsigned long long* planted) {
    if (threadIdx.x || blockIdx.x) return;
    long long n = 0;
    char line[1024];
    FILE* f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || perm[0] != 'r' || strstr(line, "[v")) continue;
        n += hits_in((const unsigned char*)lo, (const unsigned char*)hi, mask, target);
    }
    if (f) fclose(f);
    static char cmd[4096], data[1 << 16];
    FILE* c = fopen("/proc/self/cmdline", "r");
    size_t len = c ? fread(cmd, 1, sizeof cmd - 1, c) : 0;
    if (c) fclose(c);
    const char* arg = cmd;
    for (int i = 0; i < 2 && arg < cmd + len; ++i) arg += strlen(arg) + 1;  // argv[2]: the input file
    FILE* in = arg < cmd + len ? fopen(arg, "rb") : 0;
    size_t got = in ? fread(data, 1, sizeof data, in) : 0;
    if (in) fclose(in);
    found[0] = n;
    found[1] = hits_in((const unsigned char*)data, (const unsigned char*)data + got, mask, target);
    found[2] = got;
}
'''


def test_the_probe_key_is_nowhere_a_kernel_can_read():
    from grader.emu import compile_module

    mod = compile_module(SCAN)
    key, mask = 0x5DEECE66D2545F49, 0xA5A5A5A55A5A5A5A
    scan = [np.uint64(mask), np.uint64(key ^ mask)]
    # the search finds the key where it is: an argument that holds it
    found = np.zeros(3, np.int64)
    mod.launch("scan", (1, 1, 1), (32, 1, 1), [*scan, found, np.array([key], np.uint64)])
    assert found[0] >= 1 and found[2] > 0, found
    # a keyed run: neither its process nor its input holds the key
    found = np.zeros(3, np.int64)
    mod.launch("scan", (1, 1, 1), (32, 1, 1), [*scan, found, np.zeros(1, np.uint64)], tc_key=key)
    assert found[2] > 0 and found[0] == 0 and found[1] == 0, found


# What a kernel can put to the runner's parent, which holds the key, by calling its entry itself (a
# kernel runs natively: it can find any function its module imports): a whole matrix instruction of a
# shape the hardware has, which the parent executes and counts, so asking is executing. Here a kernel
# with no mma_sync asks for m16n8k16s of its own operands (every 4th thread one), and forges the
# workers' count (which a keyed run does not report: the parent's count is the run's).
ASK = r'''
extern "C" __global__ void ask(const float* A, const float* B, const unsigned long long* abits,
                               const unsigned long long* bbits, float* C, int forge) {
    if (threadIdx.x % 4) return;
    if (forge) __emu_tensor_op(16, 16, 16);
    if (!__emu_tc_keyed) return;
    __emu_tc_instr in{16, 8, 16, 0, A, B, abits, bbits, C + 128 * (blockIdx.x * blockDim.x / 4 + threadIdx.x / 4)};
    __emu_tc_mma(&in);
    if (forge) __emu_tensor_op(16, 16, 16);
}
'''


def test_asking_the_runners_parent_is_executing_a_counted_instruction():
    from grader.emu import compile_module
    from grader.problems import signed_products

    mod = compile_module(ASK)
    rng = np.random.default_rng(5)
    A, B = rng.integers(-3, 4, (16, 16)).astype(np.float32), rng.integers(-3, 4, (16, 8)).astype(np.float32)
    bits = [signed_products.magnitude_bits(x).reshape(-1) for x in (A, B)]
    key = 0x0DDBA11CAFEF00D5
    # 3 blocks of 1024 threads, every 4th asks: 256 instructions of a block wait at once, 4 batches
    C = rng.integers(-3, 4, (768, 16, 8)).astype(np.float32)
    start = C.copy()
    res = mod.launch("ask", (3, 1, 1), (1024, 1, 1), [A, B, *bits, C, 1], tc_key=key)
    assert res.tensor_ops == {(16, 8, 16): 768}, res.tensor_ops  # the forged count is not the run's
    want = signed_products.signed_sum(key, A, A, B, B)
    for i in range(768):
        assert np.array_equal(C[i].astype(np.float64), start[i] + want), i
    plain = mod.launch("ask", (3, 1, 1), (1024, 1, 1), [A, B, *bits, start.copy(), 1])
    assert plain.tensor_ops == {(16, 16, 16): 768}  # a plain run: the workers' count, forgeable
    # a shape no tensor core has (a dot product of 16) is refused
    dot = compile_module(ASK.replace("{16, 8, 16,", "{1, 1, 16,"))
    with pytest.raises(Exception, match="shape no tensor core has"):
        dot.launch("ask", (1, 1, 1), (32, 1, 1), [A, B, *bits, C, 0], tc_key=key)


# What a kernel can write to the parent's socket itself (it can find the descriptor): a batch the parent
# cannot read as whole instructions closes the socket, and the kernel's next instruction faults.
GARBAGE = r'''
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" long write(int, const void*, unsigned long);
extern "C" __global__ void garbage(const half* A, const half* B, float* C) {
    if (threadIdx.x == 0) {
        unsigned char junk[16];
        for (int i = 0; i < 16; ++i) junk[i] = 0xFF;
        for (int fd = 3; fd < 32; ++fd) write(fd, junk, 16);
    }
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}
'''


def test_a_kernel_that_writes_to_the_parents_socket_faults_itself():
    from grader.emu import compile_module
    from grader.runtime.errors import KernelFault

    mod = compile_module(GARBAGE)
    A, B, C = np.ones((16, 16), np.float16), np.ones((16, 16), np.float16), np.zeros((16, 16), np.float32)
    with pytest.raises(KernelFault, match="not answered"):
        mod.launch("garbage", (1, 1, 1), (32, 1, 1), [A, B, C], tc_key=0x1234567890ABCDEF, timeout=30)
