"""kernels/fp8_gemm_wgmma.cu and its host side, grader.bench.fp8_wgmma (issue #36 item 2).

CPU: the kernel compiles with NVRTC for sm_90a to e4m3 wgmma only, without spills, in its default
and its fast-accumulation build (and refuses the build that would spill); its header states the
defaults, shared memory and tensor maps the host side uses; the tensor-map parameters, the launch
geometry and the shape rules against direct computation; the k-step and descriptor strides the
kernel's source gives its wgmma read exactly the tile the TMA wrote (a model of the 128-byte
swizzle both use, PTX ISA 9.7.9.25 / 9.7.15.5.1); the bench's FP8 record names the new rows.
GPU (marked `gpu`, skipped here): right at several sizes, non-square ones included, with the
scales applied; the fast-accumulation build too.
"""
import re

import numpy as np
import pytest

from grader.bench import fp8 as bf
from grader.bench import fp8_wgmma as fw
from grader.bench import mma as bm
from grader.problems import fp8
from grader.runtime import kernels

SRC = kernels.source(fw.FILE)
HEAD = SRC.split("*/", 1)[0]
FAST = fw.FAST  # everything in the wgmma chain, cuBLASLt's "fast accumulation"


# ---------------------------------------------------------------- the kernel, compiled here
@pytest.mark.parametrize("config", [fw.DEFAULT, FAST, fw.Config(dict(PROMOTE=1, STAGES=4))],
                         ids=lambda c: ",".join(c.options) or "defaults")
def test_compiles_for_sm90a_to_e4m3_wgmma_without_spills(config):
    out = bm.nvrtc_sm90a(SRC, config.options)
    ops = out.instructions
    assert ops and all(op.op == "wgmma.mma_async" and tuple(op.types) == ("f32", "e4m3", "e4m3") for op in ops), ops
    shape = f"m64n{config.value('BLOCK_N')}k32"
    assert shape in out.ptx and "cp.async.bulk.tensor.2d" in out.ptx and "setmaxnreg" in out.ptx
    for name, res in out.resources.items():
        assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_bytes == 0, (name, res)
    assert bm.nvrtc_sm90a(SRC, config.options, output="cubin")[:4] == b"\x7fELF"  # what CubinModule loads


def test_builds_that_would_spill_or_not_fit_are_refused_at_compile_time():
    from grader.runtime.compile import CompileError

    with pytest.raises(CompileError, match="PROMOTE needs BLOCK_N 128"):
        bm.nvrtc_sm90a(SRC, ("-DBLOCK_N=256", "-DPROMOTE=4", "-DSTAGES=4"))
    with pytest.raises(CompileError, match="more shared memory than sm_90 gives a block"):
        bm.nvrtc_sm90a(SRC, ("-DBLOCK_N=256", "-DPROMOTE=0"))  # 6 stages of 48 KB


def test_defaults_match_the_source():
    found = {k: int(v) for k, v in re.findall(r"#ifndef (\w+)\n#define \1 (\d+)\n", SRC)}
    found.update({k: int(v) for k, v in re.findall(r"^#define (BLOCK_K) (\d+)$", SRC, re.M)})
    assert found == {**fw.DEFAULTS}, (found, fw.DEFAULTS)
    head_defaults = dict(re.findall(r"(BLOCK_M|BLOCK_N|STAGES|GROUP_M|PROMOTE) \[(\d+)\]", HEAD))
    assert {k: int(v) for k, v in head_defaults.items()} == {k: v for k, v in fw.DEFAULTS.items() if k != "BLOCK_K"}


def test_header_states_the_contract_the_host_side_uses():
    assert re.search(r"^ \* Requires: sm_90a$", HEAD, re.M) and "Measured (kernels/RESULTS-fp8.md" in HEAD
    assert "What changed vs hgemm_wgmma.cu" in HEAD and "K-major" in HEAD
    sig = re.search(r"Signature: (fp8_gemm_wgmma\(.*?\)):", HEAD, re.S).group(1)
    code = re.search(r"__global__ void __launch_bounds__\(THREADS, 1\)\n(fp8_gemm_wgmma\(.*?\))\n\{", SRC,
                     re.S).group(1)
    assert " ".join(sig.replace("*", " ").split()) == " ".join(code.replace("*", " ").split())
    formula = HEAD[HEAD.index("Dynamic shared memory:"):]
    assert int(re.search(r"\[(\d+)", formula).group(1)) == fw.DEFAULT.shared_mem
    # the header's formula, evaluated, for other builds too
    expr = re.search(r"Dynamic shared memory: (.*?) bytes", HEAD, re.S).group(1)
    for c in (fw.DEFAULT, FAST, fw.Config(dict(BLOCK_M=64, STAGES=8))):
        env = {k: c.value(k) for k in ("STAGES", "BLOCK_M", "BLOCK_N")}
        assert eval(" ".join(expr.split()), {}, env) == c.shared_mem, c  # noqa: S307 - our own header
    assert re.search(r"THREADS = 128 \* \(BLOCK_M / 64 \+ 1\) \[(\d+)\]", HEAD).group(1) == str(fw.DEFAULT.threads)
    assert fw.DEFAULT.shared_mem <= 227 * 1024 and FAST.shared_mem <= 227 * 1024  # sm_90's opt-in limit


# ---------------------------------------------------------------- host side, against direct computation
def test_tensor_map_parameters_of_both_operands():
    for config, (M, N, K) in ((fw.DEFAULT, (4096, 4096, 4096)), (FAST, (384, 512, 1152)),
                              (fw.DEFAULT, (256, 640, 384))):
        ta, tb = config.tensor_maps(M, N, K)
        bm_, bn = config.value("BLOCK_M"), config.value("BLOCK_N")
        # uint8 (CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0), innermost dimension first, one byte a code
        assert (ta.data_type, ta.dims, ta.row_stride, ta.box) == (0, (K, M), K, (128, bm_))
        assert (tb.data_type, tb.dims, tb.row_stride, tb.box) == (0, (K, N), K, (128, bn))
        # one box a stage: its bytes are what the producer's expect_tx announces (STAGE_BYTES)
        assert ta.box[0] * ta.box[1] + tb.box[0] * tb.box[1] == (bm_ + bn) * 128


def test_the_fp16_rung_maps_are_unchanged():
    """hgemm_wgmma's maps, through the same function (fp16 = 6, two bytes a value)."""
    a = bm.tensor_map_layout((1024, 512), np.float16, 64, 128)
    b = bm.tensor_map_layout((512, 2048), np.float16, 64, 64)
    assert (a.data_type, a.dims, a.row_stride, a.box) == (6, (512, 1024), 1024, (64, 128))
    assert (b.data_type, b.dims, b.row_stride, b.box) == (6, (2048, 512), 4096, (64, 64))


@pytest.mark.parametrize("shape,dtype,box,why", [
    ((256, 256), np.float16, (128, 64), "at most 128"),    # 256 bytes wide: beyond the 128-byte swizzle
    ((512, 256), np.uint8, (128, 512), "1 to 256"),       # a box of 512 rows
    ((256, 100), np.uint8, (64, 64), "multiple of 16"),   # rows 100 bytes apart
    ((256, 256), np.float32, (32, 64), "no tensor map for float32"),
])
def test_tensor_map_rules_are_one_line_errors(shape, dtype, box, why):
    with pytest.raises(ValueError, match=why):
        bm.tensor_map_layout(shape, dtype, *box)


def test_launch_geometry_covers_c_once():
    for config, (M, N, K) in ((fw.DEFAULT, (384, 256, 1152)), (fw.DEFAULT, (256, 640, 384)), (FAST, (512, 768, 256))):
        gx, gy, gz = config.grid(M, N)
        bm_, bn = config.value("BLOCK_M"), config.value("BLOCK_N")
        cover = np.zeros((M, N), int)
        for by in range(gy):
            for bx in range(gx):
                cover[by * bm_:(by + 1) * bm_, bx * bn:(bx + 1) * bn] += 1
        assert gz == 1 and (cover == 1).all()
        assert config.block == (128 * (bm_ // 64 + 1), 1, 1) and config.why_not(M, N, K) == ""


def test_shapes_it_cannot_compute_are_refused_by_name():
    assert fw.DEFAULT.why_not(384, 200, 1000) == "N = 200 is no multiple of 128; K = 1000 is no multiple of 128"
    case = fp8.gemm_case(33, 20, 96, np.random.default_rng(0))
    with pytest.raises(ValueError, match="cannot compute 33x20x96: M = 33 is no multiple of 128"):
        fw.DEFAULT.case(case)


def test_a_case_keeps_its_arguments_and_reference_and_takes_the_kernel_launch():
    case = fp8.gemm_case(384, 256, 1152, np.random.default_rng(1))
    c = fw.DEFAULT.case(case)
    assert c.args is case.args and c.expected is case.expected and c.outputs == case.outputs
    assert (c.grid, c.block, c.shared_mem) == ((2, 3, 1), (384, 1, 1), fw.DEFAULT.shared_mem)
    assert case.args[6] != 1.0 and case.args[7] != 1.0  # the scales are real: a kernel that drops them fails


# ---------------------------------------------------------------- the shared-memory layout, modelled
def _tma_offset(row, k):
    """Where TMA's 128-byte swizzle puts byte k of row `row` of a box 128 bytes wide, from a
    1024-byte aligned base: 16-byte chunk c of row r lands at chunk c ^ (r % 8)."""
    return row * 128 + (((k // 16) ^ (row % 8)) * 16) + k % 16


def _wgmma_offset(start, sbo, row, k):
    """Where wgmma reads byte k (0..31) of row `row` of a K-major operand through a 128B-swizzle
    descriptor: rows 128 bytes apart within an 8-row group, groups SBO apart, then the same
    XOR of address bits [4:6] with [7:9] the TMA applied (PTX ISA 9.7.15.5.1)."""
    a = start + (row % 8) * 128 + (row // 8) * sbo + k
    return a ^ (((a >> 7) & 7) << 4)


def _descriptor_steps():
    """The (k-step byte advance, LBO, SBO) of A's and B's descriptors, read from the kernel."""
    calls = re.findall(r"make_desc\((a|b)_tile \+ (\d+) \* k, (\d+), (\d+)\)", SRC)
    return {op: tuple(map(int, rest)) for op, *rest in calls}


def test_each_k_step_reads_exactly_the_tile_the_tma_wrote():
    steps = _descriptor_steps()
    assert set(steps) == {"a", "b"}
    ksteps = fw.DEFAULTS["BLOCK_K"] // 32
    assert re.search(r"for \(int k = 0; k < BLOCK_K / 32; \+\+k\)", SRC)
    for op, rows in (("a", 64), ("b", fw.DEFAULTS["BLOCK_N"])):
        advance, _lbo, sbo = steps[op]
        for j in range(ksteps):
            got = np.array([[_wgmma_offset(advance * j, sbo, r, k) for k in range(32)] for r in range(rows)])
            want = np.array([[_tma_offset(r, 32 * j + k) for k in range(32)] for r in range(rows)])
            assert np.array_equal(got, want), (op, j)


def test_the_layout_model_catches_a_wrong_step():
    """The model is no tautology: fp16's 16-k step in elements (16 bytes here) or an SBO of one row
    read other bytes than the TMA wrote."""
    for advance, sbo in ((16, 1024), (32, 128)):
        got = [[_wgmma_offset(advance * 1, sbo, r, k) for k in range(32)] for r in range(16)]
        want = [[_tma_offset(r, 32 + k) for k in range(32)] for r in range(16)]
        assert got != want


# ---------------------------------------------------------------- the bench's rows
def test_the_bench_pairs_it_with_the_fp16_rung_fp8_mma_and_cublaslt():
    assert {b for k, b in bf.PAIRS if k == bf.FP8_WGMMA} == {bf.RUNG, bf.FP8, bf.LT}
    assert {b for k, b in bf.PAIRS if k == bf.FP8_WGMMA_FAST} == {bf.FP8_WGMMA, bf.LT}
    assert bf.FP8_WGMMA in bf.DESCRIBE and bf.FP8_WGMMA_FAST in bf.DESCRIBE
    for M, N, K in bf.WGMMA_SHAPES:
        assert fw.DEFAULT.why_not(M, N, K) == "" and M != N
    assert sum(not FAST.why_not(*s) for s in bf.WGMMA_SHAPES) >= 2  # the wide build has non-square checks too
    assert any((K // 128) > fw.DEFAULTS["STAGES"] and (K // 128) % fw.DEFAULTS["PROMOTE"] for _, _, K in bf.WGMMA_SHAPES)
    assert any((K // 128) < fw.DEFAULTS["PROMOTE"] for _, _, K in bf.WGMMA_SHAPES)


def test_without_sm90_its_rows_say_skipped_and_the_rest_runs(monkeypatch):
    monkeypatch.setattr(bm, "arch", lambda: 89)
    cands = [c for c in bf.contenders(check_sizes=(64,)) if c.name in (bf.FP8_WGMMA, bf.FP8_WGMMA_FAST)]
    checks, results = bf.measure(cands, (), out=lambda s: None)
    assert [c.cell for c in checks.values()] == ["SKIPPED: needs sm_90a (wgmma, TMA), this GPU is sm_89"] * 2


def test_a_probe_that_hangs_or_fails_is_reported_not_raised(monkeypatch):
    import subprocess

    def hang(*a, **kw):
        raise subprocess.TimeoutExpired(a[0], kw.get("timeout"))

    monkeypatch.setattr(subprocess, "run", hang)
    assert fw.probe(timeout=1).startswith("HANG: no result within 1 s")
    monkeypatch.setattr(subprocess, "run",
                        lambda *a, **kw: subprocess.CompletedProcess(a[0], 1, "WRONG: 256x256x256 e4m3: 3 bad\n", ""))
    assert fw.probe() == "WRONG: 256x256x256 e4m3: 3 bad"
    with pytest.raises(RuntimeError, match="fp8_gemm_wgmma: its first launches .* WRONG: 256x256x256"):
        fw.probed()


def test_the_probe_child_builds_what_it_was_asked_to():
    for config in (fw.DEFAULT, FAST, fw.Config(dict(PROMOTE=1, STAGES=4))):
        assert fw.config_of(config.options) == config
    with pytest.raises(ValueError, match="not a define of fp8_gemm_wgmma: '-DBLOCK_Q=3'"):
        fw.config_of(["-DBLOCK_Q=3"])


def test_the_probe_command_line_reaches_the_child(monkeypatch):
    """probe() runs `python -m grader.bench.fp8_wgmma --probe -DKEY=V ...`: main() hands those -D
    options to the child's check whole (argparse leaves them over), and without a GPU exits 2."""
    import grader.runtime.device as device

    got = []
    monkeypatch.setattr(fw, "_probe_main", lambda options: got.append(list(options)) or 0)
    monkeypatch.setattr(device, "device_info", lambda: object())
    assert fw.main(["--probe", *FAST.options]) == 0 and fw.config_of(got[0]) == FAST
    monkeypatch.setattr(device, "device_info", lambda: None)
    assert fw.main(["--probe"]) == 2


def test_after_one_build_hangs_the_other_is_not_probed(monkeypatch):
    """Both builds share the pipeline: one hang costs its probe's time once, not twice."""
    probed = []

    def hangs(config):
        probed.append(config.options)
        raise RuntimeError("fp8_gemm_wgmma: its first launches (...) in a child process: HANG: no result within 90 s")

    monkeypatch.setattr(bm, "arch", lambda: 90)
    monkeypatch.setattr(fw, "probed", hangs)
    cands = [c for c in bf.contenders(check_sizes=(64,)) if c.name in (bf.FP8_WGMMA, bf.FP8_WGMMA_FAST)]
    checks, _ = bf.measure(cands, (), out=lambda s: None)
    assert probed == [fw.DEFAULT.options]
    assert "HANG" in checks[bf.FP8_WGMMA].cell and checks[bf.FP8_WGMMA].cell.startswith("FAILED: RuntimeError")
    assert "not tried: the build of the defaults hung in its probe" in checks[bf.FP8_WGMMA_FAST].cell


def test_the_record_has_its_summary_lines():
    ms = {bf.FP8: 2.0, bf.FP8_WGMMA: 0.25, bf.FP8_WGMMA_FAST: 0.2, bf.RUNG: 1.0, bf.LT: 0.2}
    results = [bf.Result(k, b, 4096, ms[k], ms[b], ms[b] / ms[k]) for k, b in bf.PAIRS if k in ms and b in ms]
    text = "\n".join(bf.summary(results, (4096,)))
    m = re.search(r"- 4096\^3: FP8 wgmma: ([\d.]+) TFLOP/s, ([\d.]+)x the fp16 rung, ([\d.]+)x FP8 mma.sync, "
                  r"([\d.]+)% of cuBLASLt FP8", text)
    assert m, text
    assert float(m.group(1)) == pytest.approx(2 * 4096**3 / 0.25e-3 / 1e12, abs=0.05)
    assert (float(m.group(2)), float(m.group(3)), float(m.group(4))) == (4.0, 8.0, 80.0)
    assert "- 4096^3: FP8 wgmma, fast accumulation: 687.2 TFLOP/s, 1.25x the promoted one, 100.0% of cuBLASLt FP8" in text


def test_the_device_script_runs_its_gpu_tests_within_one_call():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / ".ci" / "gpu-fp8").read_text()
    assert "-m gpu tests/bench/test_fp8_wgmma.py" in text
    limits = [int(v) for v in re.findall(r"\$\{(?:FP8_LIMIT|TESTS_LIMIT):-(\d+)\}", text)]
    assert len(limits) == 2 and sum(limits) + 30 <= 540, limits  # 30 s: start-up, nvidia-smi, torch's line
    assert fw.PROBE_SECONDS < limits[0] / 2  # a hung probe leaves the bench most of its time


# ---------------------------------------------------------------- on a GPU
_PROBED: dict = {}


def _gpu_module(config):
    """One probed module a build for the whole run (each probe is a child process: seconds)."""
    if config.options not in _PROBED:
        _PROBED[config.options] = fw.probed(config)
    return _PROBED[config.options]


@pytest.mark.gpu
@pytest.mark.parametrize("config", [fw.DEFAULT, FAST], ids=("promoted", "fast-accumulation"))
def test_right_at_several_sizes_with_the_scales_applied(config):
    import cupy

    shapes = [(128, 128, 128), 256, (384, 256, 1152), (256, 640, 384), 1024]
    shapes = [s for s in shapes if not config.why_not(*(s if isinstance(s, tuple) else (s,) * 3))]
    if config is FAST:
        shapes = [(512, 768, 640), 1024]
    cases = bf.fp8_cases(shapes, np.random.default_rng(11))
    got = fw.check(_gpu_module(config), cases, cupy)
    assert got.ok, got.cell


@pytest.mark.gpu
def test_the_promoted_build_meets_the_plain_fp32_bound():
    """What PROMOTE is for: no FP8-accumulator slack needed at K = 4096 (the check would say so)."""
    import cupy

    got = fw.check(_gpu_module(fw.DEFAULT), bf.fp8_cases([(256, 256, 4096)], np.random.default_rng(13)), cupy)
    assert got.ok and not got.detail, got.cell


@pytest.mark.gpu
def test_a_launch_without_the_scales_fails_the_check():
    import cupy

    module = _gpu_module(fw.DEFAULT)

    class DropsScales:
        config = module.config

        def launch(self, kernel, grid, block, args, **kw):
            args[6] = args[7] = 1.0
            return module.launch(kernel, grid, block, args, **kw)

    got = fw.check(DropsScales(), bf.fp8_cases([(384, 256, 1152)], np.random.default_rng(12)), cupy)
    assert not got.ok and got.cell.startswith("WRONG: 384x256x1152")
