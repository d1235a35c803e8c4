"""The Hopper convolution (kernels/conv2d_wgmma_tma.cu) and its host side (grader.bench.conv_tma).

CPU: every variant compiles for sm_90a with the im2col TMA copy and wgmma, without spills, with
the register count its setmaxnreg split assumes; the header states the defaults and the shared
memory the bench passes; every field of both tensor maps, and the coordinates and offsets of every
copy, reproduce the implicit GEMM's A (grader.problems.conv.im2col_nhwc) through a model of the
im2col copy, at several shapes, and a wrong corner or offset order is caught; the bench's flow
(a wrong or hung variant is printed, never timed). GPU (marked gpu): the im2col copy alone equals
the model; the convolution is correct at the odd small shapes, the TVM layer and every ResNet-50
3x3 layer; the speed against cuDNN at the TVM layer (issue #35's aim, 0.8x).
"""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from grader.bench import conv_tma as ct
from grader.bench.mma import nvrtc_sm90a
from grader.problems import conv
from grader.runtime import kernels

SRC = kernels.source(ct.FILE)
SMEM_PER_SM, SMEM_PER_BLOCK = 233472, 232448  # sm_90: 228 KB per SM (1 KB reserved per block), 227 KB per block


# ---------------------------------------------------------------- the kernel (NVRTC, no GPU)
@pytest.mark.parametrize("variant", ct.VARIANTS, ids=lambda v: v.name)
def test_variant_compiles_for_sm90a_without_spills(variant):
    out = nvrtc_sm90a(SRC, variant.options)
    ops = out.instructions
    assert ops and all(op.op == "wgmma.mma_async" and "f32" in op.types for op in ops), ops
    assert re.search(r"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.im2col", out.ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", out.ptx)
    res = out.resources[ct.KERNEL]
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_bytes == 0, res
    if variant.threads * variant.min_blocks > 256:  # setmaxnreg: the pool is what the launch gave
        assert res.registers == variant.launch_regs, (res.registers, variant.launch_regs)
        assert "setmaxnreg.inc" in out.ptx and "setmaxnreg.dec" in out.ptx
    else:
        assert "setmaxnreg" not in out.ptx


@pytest.mark.parametrize("variant", ct.VARIANTS, ids=lambda v: v.name)
def test_variant_fits_the_shared_memory_of_an_sm(variant):
    assert variant.shared_mem <= SMEM_PER_BLOCK
    assert variant.min_blocks * (variant.shared_mem + 1024) <= SMEM_PER_SM


def test_two_blocks_of_three_warpgroups_do_not_compile_and_say_why():
    """The header's claim: 80 registers per thread cannot hold a 64 x 128 wgmma's accumulators."""
    with pytest.raises(Exception) as e:
        nvrtc_sm90a(SRC, ct.Variant(block_n=128, stages=3, min_blocks=2).options)
    assert "Insufficient registers" in str(e.value)


def test_header_states_the_defaults_and_shared_memory():
    head = SRC.split("*/", 1)[0]
    found = {k: int(v) for k, v in re.findall(r"#ifndef (\w+)\n#define \1 (\d+)\n", SRC)}
    d = ct.DEFAULT
    assert found == dict(BLOCK_M=d.block_m, BLOCK_N=d.block_n, STAGES=d.stages, GROUP_M=d.group_m,
                         MIN_BLOCKS=d.min_blocks)
    assert re.search(r"^#define BLOCK_K (\d+)$", SRC, re.M).group(1) == str(ct.BLOCK_K)
    formula = head[head.index("Dynamic shared memory:"):]
    assert int(re.search(r"\[(\d+)", formula).group(1)) == d.shared_mem
    # what was measured, with where the record lies (kernels/RESULTS-conv.md)
    assert "Measured (kernels/RESULTS-conv.md" in head and re.search(r"^ \* Requires: sm_90a", head, re.M)
    assert "python -m grader.bench.conv_tma" in head
    assert f"[{128 * (d.block_m // 64 + 1)}]" in head  # THREADS


def test_compiling_for_plain_sm90_says_sm90a():
    from grader.runtime.compile import nvrtc_compile
    from grader.runtime.errors import CompileError

    with pytest.raises(CompileError) as e:
        nvrtc_compile(SRC, arch=90)
    assert "sm_90a" in str(e.value)


# ---------------------------------------------------------------- the tensor maps (pure)
SHAPES = [ct.TVM_SHAPE, *ct.RESNET_LAYERS.values(), *ct.SMALL_SHAPES]


def _small(shape):
    """The layer with fewer images and channels (the model walks pixel by pixel in Python)."""
    N, C, H, W, K, R, S, pad = shape
    return (min(N, 2), min(C, 128), H, W, K, R, S, pad)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_map_fields_are_the_layout_of_x_and_w(shape):
    N, C, H, W, K, R, S, pad = shape
    for v in ct.VARIANTS:
        if not v.supports(C, K):
            continue
        p = ct.tensor_map_params(*shape, v)
        x = np.empty((N, H, W, C), np.float16)
        w = np.empty((K, R, S, C), np.float16)
        assert p.x_dims == x.shape[::-1] and p.x_strides == x.strides[::-1][1:]
        wm = w.reshape(K, -1)
        assert p.w_dims == wm.shape[::-1] and p.w_strides == wm.strides[:1]
        assert p.w_box == (64, v.block_n) and max(p.w_box) <= 256  # a tiled box: <= 256 per dimension
        assert p.channels_per_pixel * 2 <= 128  # the 128-byte swizzle span (cuda.h)
        assert p.pixels_per_column == v.block_m <= 1024
        # the box has one position per output pixel: Q in W, P in H
        assert (W - 1 + p.upper_corner[0]) - p.lower_corner[0] + 1 == conv.out_size(W, S, pad) == p.Q
        assert (H - 1 + p.upper_corner[1]) - p.lower_corner[1] + 1 == conv.out_size(H, R, pad) == p.P
        tiles_m = -(-p.M // v.block_m)
        assert p.M == N * p.P * p.Q and tiles_m * v.block_m >= p.M > (tiles_m - 1) * v.block_m
        assert p.grid == ((min(tiles_m * (K // v.block_n), 132 * v.min_blocks) if v.persistent
                           else tiles_m * (K // v.block_n)), 1, 1)


def _assert_copies_build_a(shape, variant, params=None, offsets_of=None):
    N, C, H, W, K, R, S, pad = shape
    x = conv.random_uniform((N, H, W, C), np.float16, 3)
    A = conv.im2col_nhwc(x, R, S, pad)  # the implicit GEMM's A, built directly
    p = params or ct.tensor_map_params(N, C, H, W, K, R, S, pad, variant)
    bm = variant.block_m
    tiles = list(range(0, p.M, bm))
    for m0 in dict.fromkeys([tiles[0], tiles[len(tiles) // 2], tiles[-1]]):  # first, middle, last (partial) tile
        start = ct.tile_start(m0, p, pad)
        for kt, (c0, offsets, wcol) in enumerate(ct.k_tiles(C, R, S)):
            assert wcol == kt * ct.BLOCK_K  # the kernel loads w's columns kt*64.. for K-tile kt
            got = ct.im2col_box(x, p, start, c0, offsets_of(offsets) if offsets_of else offsets)
            want = np.zeros((bm, ct.BLOCK_K), np.float16)
            rows = A[m0:m0 + bm, kt * ct.BLOCK_K:(kt + 1) * ct.BLOCK_K]
            want[:len(rows)] = rows  # past the last image: zeros
            np.testing.assert_array_equal(got, want, err_msg=f"tile {m0}, K-tile {kt}")


@pytest.mark.parametrize("shape", [_small(s) for s in SHAPES], ids=str)
def test_every_copy_gathers_the_implicit_gemm_tile(shape):
    """Through the model of the im2col copy: the coordinates of each tile, the offsets of each
    K-tile and both corners give exactly A's rows m0.. and columns kt*64.. (im2col_nhwc)."""
    C, K = shape[1], shape[4]
    variants = [v for v in ct.VARIANTS if v.supports(C, K)]
    for bm in sorted({v.block_m for v in variants}):
        _assert_copies_build_a(shape, next(v for v in variants if v.block_m == bm))


def test_the_model_check_catches_a_wrong_corner_or_offset_order():
    shape = (2, 64, 6, 8, 64, 5, 3, 2)  # R != S, pad 2
    v = ct.Variant(block_n=64, stages=4, min_blocks=2)
    p = ct.tensor_map_params(*shape, v)
    swapped = p.__class__(**{**p.__dict__, "upper_corner": p.upper_corner[::-1]})  # {H, W} instead of {W, H}
    with pytest.raises(AssertionError):
        _assert_copies_build_a(shape, v, params=swapped)
    with pytest.raises(AssertionError):  # offsets {r, s} instead of {s, r}
        _assert_copies_build_a(shape, v, offsets_of=lambda o: o[::-1])
    padded = p.__class__(**{**p.__dict__, "upper_corner": (2, 2)})  # the pad instead of pad - (filter - 1)
    with pytest.raises(AssertionError):
        _assert_copies_build_a(shape, v, params=padded)


def test_params_refuse_what_the_kernel_cannot_do():
    with pytest.raises(ValueError, match="C % 64"):
        ct.tensor_map_params(1, 32, 8, 8, 256, 3, 3, 1)
    with pytest.raises(ValueError, match="K % 256"):
        ct.tensor_map_params(1, 64, 8, 8, 128, 3, 3, 1)
    with pytest.raises(ValueError, match="corners"):
        ct.tensor_map_params(1, 64, 300, 300, 256, 3, 3, 130)


def test_every_layer_has_a_variant_and_names_are_unique():
    names = [v.name for v in ct.VARIANTS]
    assert len(set(names)) == len(names) and ct.variant_named(names[0]) == ct.VARIANTS[0]
    for shape in ct.LAYERS.values():
        assert any(v.supports(shape[1], shape[4]) for v in ct.VARIANTS), shape
    for v in ct.VARIANTS:
        assert ct.check_shapes(v), v.name


# ---------------------------------------------------------------- on the GPU
def _hopper():
    from grader.runtime.device import device_info

    info = device_info()
    if info is None or info.cc < 90:
        pytest.skip("needs sm_90a (an H100/H200)")


@pytest.mark.gpu
def test_the_im2col_copy_is_what_the_model_says():
    """Each probe copy (the convolution's own tensor map, un-swizzled) equals im2col_box exactly."""
    _hopper()
    rows, why = ct.probe_copies(timeout=120)
    assert not why, why
    assert len(rows) == 2 * len(ct.PROBE_SHAPES) and all(r["wrong"] == 0 for r in rows), [r for r in rows if r["wrong"]]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", [ct.DEFAULT, ct.Variant(block_n=64, stages=4, min_blocks=2)], ids=lambda v: v.name)
def test_correct_at_every_shape(variant):
    _hopper()
    ok, rows, why = ct.check_variant(variant, timeout=300)
    assert not why, why
    assert ok and len(rows) == len(ct.check_shapes(variant)), [r for r in rows if not r["ok"]] or rows


@pytest.mark.gpu
def test_tvm_layer_speed_against_cudnn():
    _hopper()
    if ct._torch() is None:
        pytest.skip("needs PyTorch with CUDA for cuDNN")
    variants = [ct.DEFAULT, ct.Variant(persistent=True)]  # one block per tile, and persistent
    for v in variants:
        ok, _, why = ct.check_variant(v, timeout=300)
        assert ok, (v.name, why or "wrong: not timed")
    row = ct.time_layer({v: ct.ConvTma(v) for v in variants}, ct.TVM_SHAPE, max_seconds=2.0)
    print(f"TVM layer: {row['ratio']:.2f}x cuDNN ({row['variant']}: {row['ms']:.4f} ms, cuDNN {row['cudnn_ms']:.4f} ms)")
    assert row["ratio"] >= ct.AIM, row


def test_without_a_gpu_the_bench_says_so_and_a_failed_child_says_why(monkeypatch, capsys):
    from grader.runtime import device

    monkeypatch.setattr(device, "device_info", lambda: None)
    assert ct.main([]) == 2
    assert "needs a GPU" in capsys.readouterr().err
    if device.has_gpu():
        pytest.skip("a GPU is here: the child would run")
    ok, rows, why = ct.check_variant(ct.DEFAULT, timeout=120)  # the child cannot launch here
    assert not ok and not rows and why


def test_device_script_checks_then_times_under_time_limits():
    import subprocess

    script = Path(__file__).resolve().parents[2] / ".ci" / "gpu-conv-tma"
    text = script.read_text()
    assert script.stat().st_mode & 0o111
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert re.search(r"^# +run\(.*command=.*\.ci/gpu-conv-tma", text, re.M), "the header gives the device command"
    assert "grader.runtime.proctree --timeout" in text and "python3 -m grader.bench.conv_tma --budget" in text
    assert "CONV-TMA.md" in text and "TVM layer" in text
    limits = [int(n) for n in re.findall(r"_LIMIT:-(\d+)", text)]
    assert sum(limits) <= 540, limits  # one device call: at most 540 s


def test_small_tensor_fix_clears_bit_21_of_word_1_only_where_cutlass_does():
    tmap = bytearray(range(128))
    tmap[8:16] = (0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
    fixed = ct.small_tensor_fix(bytearray(tmap), 4096, 13000)
    assert int.from_bytes(fixed[8:16], "little") == 0xFFFFFFFFFFFFFFFF & ~(1 << 21)
    assert fixed[:8] == tmap[:8] and fixed[16:] == tmap[16:]
    assert ct.small_tensor_fix(bytearray(tmap), 1 << 17, 13000) == tmap  # 128 KiB and more: kept
    assert ct.small_tensor_fix(bytearray(tmap), 4096, 13020) == tmap  # a fixed driver: kept


def _cuda_h():
    """The driver API header of an installed CUDA (the nvidia-* wheels or a toolkit), if any."""
    here = [*Path(sys.prefix).glob("lib/python3*/site-packages/nvidia/*/include/cuda.h"),
            Path("/usr/local/cuda/include/cuda.h"), *Path("/usr/local").glob("cuda-*/include/cuda.h")]
    return next((p for p in here if p.is_file()), None)


@pytest.mark.parametrize("name", sorted(ct._SIGNATURES))
def test_ctypes_signatures_are_cuda_h(name):
    import ctypes

    h = _cuda_h()
    if h is None:
        pytest.skip("no cuda.h here")
    proto = re.search(rf"CUresult CUDAAPI {name}\((.*?)\);", h.read_text(), re.S).group(1)
    params = [p.strip() for p in proto.split(",")]
    args = ct._SIGNATURES[name]
    assert len(params) == len(args), (params, args)
    for p, a in zip(params, args):
        if "*" in p:
            assert a is ctypes.c_void_p or hasattr(a, "_type_"), (p, a)
            want = {"cuuint64_t": ctypes.c_uint64, "cuuint32_t": ctypes.c_uint32, "int": ctypes.c_int}
            base = next((t for k, t in want.items() if re.search(rf"\b{k}\b", p)), None)
            if base is not None:
                assert a._type_ is base, (p, a)
        elif re.match(r"cuuint32_t", p):
            assert a is ctypes.c_uint32, (p, a)
        else:  # enums and int
            assert a is ctypes.c_int, (p, a)


class _Info:
    name, arch, sm_count, driver, runtime, cc = "fake H100", "sm_90", 132, "13.0", "13.2", 90


def test_report_prints_a_wrong_variant_and_never_times_it(monkeypatch):
    """The flow, with the GPU parts replaced: a wrong variant is printed WRONG and never built or
    timed; the right one is timed at every layer, and the summary line names the TVM ratio."""
    wrong, right = ct.DEFAULT, ct.variant_named("128x64x64 s4 b2")  # right: supports every layer
    rows = {wrong.name: (False, [dict(shape=ct.SMALL_SHAPES[0], ok=False, detail="WRONG: 12 of 320 outside", regs=168)], ""),
            right.name: (True, [dict(shape=s, ok=True, detail="correct", regs=80) for s in ct.check_shapes(right)], "")}
    monkeypatch.setattr(ct, "check_variant", lambda v, timeout=0: rows[v.name])
    probe_rows = [dict(shape=ct.PROBE_SHAPES[0], pixels=64, copies=54, wrong=0, first_wrong=None),
                  dict(shape=ct.PROBE_SHAPES[1], pixels=64, copies=90, wrong=2,
                       first_wrong=dict(m0=0, c0=0, offsets=[2, 4], n_bad=64, first=[0, 0]))]
    monkeypatch.setattr(ct, "probe_copies", lambda timeout=0: (probe_rows, ""))
    built, timed = [], []
    monkeypatch.setattr(ct, "ConvTma", lambda v: built.append(v) or object())
    monkeypatch.setattr(ct, "_torch", lambda: None)

    def fake_time(mods, shape, max_seconds, out=None):
        timed.append((tuple(mods), shape))
        return dict(shape=shape, flops=1e12, sweep={v.name: 1.0 for v in mods}, variant=right.name, ms=1.0,
                    cudnn_ms=0.85, ratio=0.85)

    monkeypatch.setattr(ct, "time_layer", fake_time)
    said = []
    lines, rc = ct.report(_Info(), [wrong, right], out=said.append)
    text = "\n".join(lines)
    assert rc == 0 and built == [right] and all(mods == (right,) for mods, _ in timed)
    assert [s for _, s in timed] == list(ct.LAYERS.values())
    assert f"| {wrong.name} | | | **WRONG or FAILED: not timed** |" in text
    assert "TVM layer: 0.85x cuDNN" in text and "ResNet-50 3x3 layers: 0.85-0.85x cuDNN" in text
    assert any(s.startswith("!! ") and wrong.name in s for s in said)
    assert f"| {ct.PROBE_SHAPES[0]} | 64 | 54 | 54 | - |" in text and "| 90 | 88 | {'m0': 0" in text
    assert text.index("The im2col copy alone") < text.index("Correctness of the convolution") < text.index("Timing")

    monkeypatch.setattr(ct, "check_variant", lambda v, timeout=0: (False, [], "HANG: no result within 120 s"))
    built.clear(), timed.clear()
    lines, rc = ct.report(_Info(), [wrong, right], out=said.append)
    assert rc == 1 and not built and not timed
    assert "TVM layer: WRONG (not timed)" in lines and any("FAILED: HANG" in s for s in lines)


def test_check_child_prints_a_line_per_shape_then_done(monkeypatch, capsys):
    """The child side of check_variant, with the kernel replaced: what the parent parses."""
    import json

    from grader.problems import numerics

    v = ct.variant_named("128x64x64 s4 b2")
    monkeypatch.setattr(ct, "ConvTma", lambda variant: type("M", (), {"registers": 80})())
    verdicts = iter([numerics.Comparison(True, 0, 0, None, 0.01, 1e-6)]
                    + [numerics.Comparison(False, 3, 1, (5, 2), 9.0, 0.5)] * 20)
    monkeypatch.setattr(ct, "check", lambda mod, shape, seed: next(verdicts))
    assert ct._check_main(v.name) == 1
    out = capsys.readouterr().out.splitlines()
    rows = [json.loads(line[6:]) for line in out if line.startswith("CHECK ")]
    assert out[-1] == "DONE" and len(rows) == len(ct.check_shapes(v))
    assert rows[0]["ok"] and rows[0]["detail"].startswith("correct") and rows[0]["regs"] == 80
    assert not rows[1]["ok"] and rows[1]["detail"].startswith("WRONG: 3 of ") and "(5, 2)" in rows[1]["detail"]


def test_probe_cases_cover_every_tap_and_the_probe_header_says_how_it_is_run():
    for shape in ct.PROBE_SHAPES:
        R, S = shape[5], shape[6]
        for bm in (64, 128):
            p, cases = ct.probe_cases(shape, bm)
            assert {o for _, _, o, _ in cases} == {(s, r) for r in range(R) for s in range(S)}
            assert max(m0 for *_, m0 in cases) == (p.M - 1) // bm * bm  # the last (partial) tile
    head = kernels.source(ct.PROBE_FILE).split("*/", 1)[0]
    assert re.search(r"^ \* Requires: sm_90$", head, re.M) and "Measured (kernels/RESULTS-conv.md" in head
    assert "pixels * 128 + 1024 + 8" in head  # the shared memory ProbeModule and _probe_main pass
    case = ct.probe_crosscheck_case(ct.PROBE_SHAPES[2], np.random.default_rng(0), 128)
    assert case.shared_mem == 128 * 128 + 1024 + 8 and case.expected[1].exact


def test_a_silent_child_is_stopped_and_said_to_hang(monkeypatch):
    """_child's idle limit, with a child that prints one line then waits for ever (as a launch
    waiting on an mbarrier would): stopped after the idle limit, its line kept, the reason said."""
    import time

    script = 'import time; print("CHECK {\\"ok\\": true}", flush=True); time.sleep(600)'
    monkeypatch.setattr(ct, "_child_command", lambda args: [sys.executable, "-c", script])
    t0 = time.monotonic()
    rows, why = ct._child(["--check", "x"], "CHECK", timeout=60, idle=2)
    assert time.monotonic() - t0 < 30 and rows == [{"ok": True}] and why.startswith("HANG: no line for 2 s")
    monkeypatch.setattr(ct, "_child_command", lambda args: [sys.executable, "-c", 'print("CHECK {}"); print("DONE")'])
    assert ct._child([], "CHECK", timeout=60, idle=20) == ([{}], "")


def test_report_writes_its_file_line_by_line(monkeypatch, tmp_path):
    monkeypatch.setattr(ct, "probe_copies", lambda timeout=0: ([], "HANG: no line for 60 s"))
    monkeypatch.setattr(ct, "check_variant", lambda v, timeout=0: (False, [], "HANG: no line for 60 s"))
    sink = tmp_path / "CONV-TMA.md"
    lines, rc = ct.report(_Info(), [ct.DEFAULT], out=lambda s: None, sink=str(sink))
    assert rc == 1 and sink.read_text() == "\n".join(lines) + "\n"
    assert lines[0].startswith("## conv2d_wgmma_tma") and "TVM layer: WRONG (not timed)" in sink.read_text()
