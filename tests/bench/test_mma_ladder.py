"""Notebook 10's kernels (kernels/mma_*.cu, hgemm_wgmma.cu, dmma_gemm_m16n8k16.cu,
mma_peak_niter*.cu, ldmatrix_layouts.cu), grader.bench.mma and grader.lessons.beyond_wmma.

CPU: the kernels compile for what they require with no spills, their headers state what the
bench and grader rely on, the bench's defaults and shared-memory formulas match the sources,
the exercise launches its reference as the bench does, the notebook's record parser reads what
the bench writes, and a wrong swizzle is caught. GPU (marked `gpu`): correctness at several
sizes, and the issue's aims (mma.sync rung >= 70% of cuBLAS fp16; wgmma >= 90% at 8192^3).
The contenders for the mma.sync rung (issue #35: mma_gemm_persistent and its variants) are checked
on the emulator with a grid smaller than their tile count, and their GPU sweep's logic on the CPU.
"""
import dataclasses
import re

import numpy as np
import pytest

from grader.bench import mma as bm
from grader.bench import wmma as bw
from grader.checking import exercises
from grader.problems import gemm
from grader.problems.mma import ldmatrix_passes
from grader.runtime import kernels
from grader.runtime.compile import nvrtc_compile

FILES = ["mma_gemm_ldmatrix", "mma_gemm_swizzled", "mma_gemm_tuned", "mma_gemm_persistent", "mma_gemm_tma",
         "mma_gemm_tma_persistent", "mma_peak_niter", "mma_peak_niter_f64",
         "dmma_gemm_m16n8k16", "hgemm_wgmma", "ldmatrix_layouts"]
RUNGS = bm.LADDER + bm.CONTENDERS + [bm.WGMMA, bm.DMMA]
PERSISTENT = [r for r in bm.CONTENDERS + bm.CONTENDER_SWEEP if r.persistent]


@pytest.mark.parametrize("rung", RUNGS + bm.SWEEP + bm.CONTENDER_SWEEP, ids=lambda r: r.name)
def test_rungs_compile_with_their_instruction_and_no_spills(rung):
    src = kernels.source(rung.file)
    if rung.kind == "wgmma":
        out = bm.nvrtc_sm90a(src, rung.options)
        want = "wgmma.mma_async"
    else:
        out = nvrtc_compile(src, arch=90 if rung.kind in ("dmma", "tma") else 80, options=rung.options)
        want = "mma"
    ops = out.instructions
    assert ops and all(op.op == want for op in ops), ops
    assert all(("f64" if rung.kind == "dmma" else "f32") in op.types for op in ops), ops
    for name, res in out.resources.items():
        assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_bytes == 0, (name, res)


@pytest.mark.parametrize("file", FILES)
def test_header_names_what_changed_launch_requires_and_check(file):
    head = kernels.source(file).split("*/", 1)[0]
    assert "Launch:" in head and re.search(r"^ \* Requires: sm_\d+a?", head, re.M)
    assert re.search(r"^ \* Check:  python -m grader\.bench\.mma --only \w+", head, re.M)
    if file.startswith(("mma_gemm", "hgemm", "dmma_gemm")):
        assert "What changed vs " in head


@pytest.mark.parametrize("file", sorted(bm._DEFAULTS))
def test_bench_defaults_match_the_sources(file):
    src = kernels.source(file)
    found = {k: int(v) for k, v in re.findall(r"#ifndef (\w+)\n#define \1 (\d+)\n", src)}
    found.update({k: int(v) for k, v in re.findall(r"^#define (BLOCK_K) (\d+)$", src, re.M)})
    for key, value in bm._DEFAULTS[file].items():
        assert found.get(key) == value, (key, found.get(key), value)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_header_shared_memory_is_what_the_bench_passes(rung):
    head = kernels.source(rung.file).split("*/", 1)[0]
    formula = head[head.index("Dynamic shared memory:"):]
    assert int(re.search(r"\[(\d+)", formula).group(1)) == rung.shared_mem


def test_exercise_launches_its_reference_as_the_bench_does():
    ex = exercises.get("mma-gemm")
    tuned = next(r for r in bm.LADDER if r.file == ex.reference == bm.TUNED)
    assert ex.launch_defaults == tuned.launch
    assert ex.kernel == tuned.spec().kernel and ex.min_arch == 80 and ex.tensor_cores
    bm_, bn, bk = tuned.spec().multiple
    for dims in (*ex.cpu_sizes, *ex.gpu_sizes, ex.perf_size):
        assert dims["M"] % bm_ == 0 and dims["N"] % bn == 0 and dims["K"] % bk == 0, dims
    assert any(d["K"] // bk >= tuned.value("STAGES") + 1 for d in ex.cpu_sizes), "every buffer refilled on the CPU"


def test_bank_model_of_the_three_layouts():
    assert ldmatrix_passes("plain") == 8 and ldmatrix_passes("plain", 256) == 8
    assert ldmatrix_passes("padded") == 1 and ldmatrix_passes("swizzled") == 1
    assert ldmatrix_passes("swizzled", 64) == 1 and ldmatrix_passes("swizzled", 512) == 1
    assert ldmatrix_passes("plain", 64) == 4  # two rows per 128-byte line: half the conflicts


def test_a_swizzle_applied_on_one_side_only_is_caught():
    """The checks can fail: write with the XOR, read without it (or the other way round)."""
    from grader.runtime import backend

    src = kernels.source("mma_gemm_swizzled")
    rung = next(r for r in bm.LADDER if r.file == "mma_gemm_swizzled")
    wrong = src.replace("ldsm_x4(a[i], as + swz<CPR_A>(warp_row + 16 * i + (lane & 15), kk / 8 + (lane >> 4)) * 16);",
                        "ldsm_x4(a[i], as + ((warp_row + 16 * i + (lane & 15)) * CPR_A + kk / 8 + (lane >> 4)) * 16);")
    assert wrong != src
    module = backend.load(wrong, "emu", rung.options)
    assert not gemm.run_once(module, rung.spec(), 128, 256, 320, 1).comparison.ok
    assert gemm.run_once(backend.load(src, "emu", rung.options), rung.spec(), 128, 256, 320, 1).comparison.ok


def test_the_notebook_reads_what_the_bench_writes(tmp_path, monkeypatch):
    """A run of grader.bench.mma, as it prints its rows, parsed by the notebook's fallback."""
    from grader.lessons import beyond_wmma as X

    lines = [bm.header.__doc__ or "", "## Beyond WMMA: mma.sync, wgmma and DMMA vs cuBLAS — NVIDIA H100 80GB HBM3 "
             "(sm_90, 132 SMs), driver 13.0, CUDA runtime 13.0, 2026-12-01 10:00 UTC", "", bm.HEAD]
    t = dict(tflops=400.0, lib_tflops=700.0, ratio=400 / 700)
    lines.append(bw._row(bm.BASELINE + " (notebook 06)", 4096, True, 0.01, "", "240", t))
    lines.append(bw._row("mma_gemm_tuned", 4096, True, 0.02, "", "242", dict(t, tflops=520.0, ratio=0.74)))
    lines.append(bw._row("hgemm_wgmma", 4096, False, 0.0, "256^3: wrong", "168"))
    lines.append(bw._row("dmma_gemm_fast (WMMA m8n8k4)", 4096, True, 0.0, "", "124", dict(t, tflops=30.0, ratio=0.5)))
    (tmp_path / X.RECORD).write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(X, "KERNELS", tmp_path)
    rows, source = X.recorded_ladder(4096)
    by = {r["name"]: r for r in rows}
    assert [r["name"] for r in rows] == X.RUNGS
    assert by["mma_gemm_tuned"]["ratio"] == pytest.approx(0.74) and by["mma_gemm_tuned"]["tflops"] == 520.0
    assert by[bm.BASELINE]["tflops"] == 400.0
    assert by["hgemm_wgmma"]["ratio"] is None and by["mma_gemm_ldmatrix"]["ratio"] is None  # wrong / not run
    assert source.startswith("recorded on NVIDIA H100 80GB HBM3, 2026-12-01 10:00 UTC")
    fp64, _ = X.recorded_fp64(4096)
    assert fp64[0]["tflops"] == 30.0 and fp64[1]["ratio"] is None


def test_without_a_record_the_ladder_shows_notebook_06s_best_only(tmp_path, monkeypatch):
    from grader.lessons import beyond_wmma as X

    (tmp_path / X.WMMA_RECORD).write_text((X.KERNELS / X.WMMA_RECORD).read_text())
    monkeypatch.setattr(X, "KERNELS", tmp_path)
    rows, source = X.recorded_ladder(4096)
    assert rows[0]["name"] == bm.BASELINE and 0.3 < rows[0]["ratio"] < 0.7
    assert all(r["ratio"] is None for r in rows[1:]) and "no GPU run yet" in source


def test_bench_refuses_without_a_gpu(capsys):
    from grader.runtime.device import has_gpu

    if has_gpu():
        pytest.skip("this machine has a GPU")
    assert bm.main(["--sizes", "256"]) == 2
    assert "needs a GPU" in capsys.readouterr().err


# ---------------------------------------------------------------- on a GPU
@pytest.mark.gpu
@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_rung_correct_at_several_sizes(rung):
    if rung.kind in ("wgmma", "tma", "dmma") and bm.arch() < 90:
        pytest.skip("needs sm_90")
    if rung.kind == "tma":  # not yet run on a GPU: first in a child with a time limit (a hang stops only it)
        why = bm.probe(rung, timeout=120)
        assert why is None, why
    ok, worst, detail = bw.check_sizes(bm.module_of(rung), rung.spec(), (256, 512, 1024))
    assert ok, detail


@pytest.mark.gpu
def test_tuned_mma_rung_reaches_70_percent_of_cublas():
    rung = next(r for r in bm.LADDER if r.file == bm.TUNED)
    module = bm.module_of(rung)
    for n in (4096, 8192):
        ratios = [bw.time_kernel(module, rung.spec(), n)["ratio"] for _ in range(2)]
        assert max(ratios) >= 0.70, (n, ratios)


@pytest.mark.gpu
def test_wgmma_rung_reaches_90_percent_of_cublas():
    if bm.arch() < 90:
        pytest.skip("needs sm_90")
    ratios = [bw.time_kernel(bm.module_of(bm.WGMMA), bm.WGMMA.spec(), 8192)["ratio"] for _ in range(2)]
    assert max(ratios) >= 0.90, ratios


@pytest.mark.gpu
def test_ldmatrix_layouts_agree_and_the_plain_one_is_slowest():
    rows = bm.banks_table(iters=1024, out=lambda s: None)
    assert all(r["ok"] for r in rows)
    plain = next(r for r in rows if r["layout"] == 0)
    assert plain["ms"] > 2 * min(r["ms"] for r in rows)


@pytest.mark.parametrize("bug", ["wait one group too loose", "no barrier after the wait"])
def test_a_broken_pipeline_fails_the_exercise_on_the_emulator(bug):
    """The grader's CPU path catches the pipeline bugs of the exercise's kernel, in the PTX names
    the kernel uses (cp.async.wait_group, not the cuda_pipeline.h primitives)."""
    from grader import check

    src = kernels.source("mma_gemm_tuned")
    wait = "                cp_async_wait<STAGES - 2>();  // tile kt+1 landed (STAGES + kt groups committed)\n"
    broken = (src.replace(wait, wait.replace("STAGES - 2", "STAGES - 1")) if bug.startswith("wait")
              else src.replace(wait + "                __syncthreads();\n", wait))
    assert broken != src
    v = check("mma-gemm", broken, backend="emu")
    assert not v.passed and v.score == 0
    text = v.text()
    assert "cp.async.wait_group" in text and "__pipeline_wait_prior" not in text, text


# ---------------------------------------------------------------- the contenders (issue #35 item 2)
def test_persistent_grid_is_one_block_per_sm_never_more_than_the_tiles():
    spec = dataclasses.replace(bm.CONTENDERS[0].spec(), blocks=132)
    assert spec.grid(4096, 4096, 4096) == (132, 1, 1)  # 512 tiles of 128 x 256
    assert spec.grid(256, 512, 64) == (4, 1, 1)
    assert spec.grid(128, 256, 64) == (1, 1, 1)
    assert all(not r.persistent for r in bm.LADDER) and bm.CONTENDERS[0].persistent


@pytest.mark.parametrize("rung", [r for r in PERSISTENT if r.kind == "mma"], ids=lambda r: r.name)
def test_persistent_contender_is_right_on_the_emulator_with_fewer_blocks_than_tiles(rung):
    """Each block walks several tiles (tiles per block: 2 and 1, 3, 3 and 2); with K of one k-tile
    the loader crosses into the next tile inside the prologue."""
    from grader.runtime import backend

    module = backend.load(kernels.source(rung.file), "emu", rung.options)
    bm_, bn, bk = rung.spec().multiple
    for blocks, shape in ((3, (2 * bm_, 2 * bn, 5 * bk)), (1, (3 * bm_, bn, 2 * bk)), (2, (bm_, 5 * bn, bk))):
        spec = dataclasses.replace(rung.spec(), blocks=blocks)
        run = gemm.run_once(module, spec, *shape, 1)
        assert run.comparison.ok, (blocks, shape, run.comparison)


@pytest.mark.parametrize("bug", ["accumulators not reset between tiles", "next tile's first fragments not loaded"])
def test_a_broken_walk_is_caught_on_the_emulator(bug):
    from grader.runtime import backend

    rung = bm.CONTENDERS[0]
    src = kernels.source(rung.file)
    broken = (src.replace("acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;", "")
              if bug.startswith("accumulators") else
              src.replace("const bool more = tile + static_cast<int>(gridDim.x) < tiles;", "const bool more = false;"))
    assert broken != src
    spec = dataclasses.replace(rung.spec(), blocks=2)
    run = gemm.run_once(backend.load(broken, "emu", rung.options), spec, 384, 256, 128, 1)
    assert not run.comparison.ok


def test_sweep_times_the_tuned_rung_beside_every_contender():
    from grader.bench import mma_sweep

    names = [r.name for r in mma_sweep.candidates()]
    assert names[0] == bm.TUNED and len(names) == len(set(names))
    assert {r.name for r in PERSISTENT} <= set(names) and len(PERSISTENT) >= 2
    assert all(r.shared_mem <= 232448 for r in mma_sweep.candidates())  # sm_90's 227 KB per block
    for n in mma_sweep.CHECK_SIZES:  # every check size is a whole number of every candidate's tiles
        M, N, K = n if isinstance(n, tuple) else (n, n, n)
        for r in mma_sweep.candidates():
            bm_, bn, bk = r.spec().multiple
            assert M % bm_ == 0 and N % bn == 0 and K % bk == 0, (r.name, n)


def test_sweep_summary_names_the_candidate_whose_worse_size_is_best():
    from grader.bench import mma_sweep

    rows = {"a": {4096: [0.72, 0.74], 8192: [0.60, 0.58]},   # worse size 0.59
            "b": {4096: [0.66, 0.68], 8192: [0.65, 0.64]},   # worse size 0.645: the best
            "c": {4096: [0.90], 8192: []}}                   # not timed at 8192
    line, best = mma_sweep.summary(rows, [4096, 8192])
    assert best == "b"
    assert re.match(r"mma\.sync rung: 67\.0% / 64\.5% of cuBLAS \(4096\^3 / 8192\^3; b:", line), line
    assert "does not meet the 70% aim" in line
    line, best = mma_sweep.summary({"d": {4096: [0.71, 0.75], 8192: [0.70, 0.72]}}, [4096, 8192])
    assert best == "d" and "73.0% / 71.0%" in line and "; meets the 70% aim" in line
    assert mma_sweep.summary({"c": {4096: [0.9], 8192: []}}, [4096, 8192])[1] is None


def test_sweep_refuses_without_a_gpu(capsys):
    from grader.bench import mma_sweep
    from grader.runtime.device import has_gpu

    if has_gpu():
        pytest.skip("this machine has a GPU")
    assert mma_sweep.main(["--sizes", "256"]) == 2
    assert "needs a GPU" in capsys.readouterr().err


def test_gpu_sweep_script_is_one_bounded_call():
    import subprocess

    script = kernels.KERNELS_DIR.parent / ".ci" / "gpu-mma-sweep"
    text = script.read_text()
    assert script.stat().st_mode & 0o111
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert "grader.bench.mma_sweep" in text and "MMA-SWEEP.md" in text
    # every step under grader.runtime.proctree's limit; the sweep's limit leaves room under 540 s
    assert text.count("run ") >= 2 and "proctree --timeout" in text
    assert int(re.search(r"SWEEP_LIMIT:-(\d+)", text).group(1)) <= 450


@pytest.mark.gpu
@pytest.mark.parametrize("rung", [r for r in bm.CONTENDERS if r.persistent], ids=lambda r: r.name)
def test_contender_correct_with_its_grid_and_a_small_one(rung):
    """Defaults only (the variants: .ci/gpu-mma-sweep); with 7 blocks each walks several tiles."""
    from grader.runtime.device import device_info

    if rung.shared_mem > device_info().max_shared_optin or (rung.kind == "tma" and bm.arch() < 90):
        pytest.skip(f"needs sm_90 and {rung.shared_mem} B of shared memory per block")
    if rung.kind == "tma":  # first in a child with a time limit (a wrong mbarrier phase hangs)
        why = bm.probe(rung, timeout=120)
        assert why is None, why
    module = bm.module_of(rung)
    shapes = (256, (256, 512, 64), (1024, 2048, 512), (2048, 768, 1536))
    for spec in (rung.spec(), dataclasses.replace(rung.spec(), blocks=7)):
        ok, worst, detail = bw.check_sizes(module, spec, shapes)
        assert ok, (spec.grid(4096, 4096), detail)


@pytest.mark.gpu
@pytest.mark.parametrize("rung", [r for r in bm.CONTENDERS if r.kind == "tma"], ids=lambda r: r.name)
def test_tma_contender_correct_with_fewer_k_tiles_than_stages_and_odd_shapes(rung):
    """First in a child with a time limit (a wrong mbarrier phase hangs rather than fails).
    Defaults only (the variants: .ci/gpu-mma-sweep)."""
    if bm.arch() < 90:
        pytest.skip("needs sm_90")
    why = bm.probe(rung, timeout=120)
    assert why is None, why
    ok, worst, detail = bw.check_sizes(bm.module_of(rung), rung.spec(),
                                       ((256, 512, 64), (512, 256, 128), (1024, 2048, 512), (2048, 768, 1536)))
    assert ok, detail


def test_sweep_checks_before_timing_and_never_times_a_wrong_or_hung_candidate(tmp_path, monkeypatch):
    """The sweep's flow on the CPU, the GPU parts stood in for: the real candidates, ptxas through
    NVRTC, the table and the summary; one candidate wrong, one hung in its probe, neither timed."""
    from grader.bench import mma_sweep
    from grader.runtime.compile import KernelResources
    from grader.runtime.device import DeviceInfo

    names = [bm.TUNED, "mma_gemm_persistent", "mma_gemm_tma", "mma_gemm_tma_persistent"]
    fake = DeviceInfo(name="Fake H100", cc=90, sm_count=132, memory_bytes=0, l2_bytes=0, max_shared_optin=232448,
                      clock_mhz=0.0, driver="0", runtime="0")
    ratios = {bm.TUNED: 0.64, "mma_gemm_persistent": 0.69, "mma_gemm_tma": 0.99}
    timed = []

    class Module:
        def resources(self, kernel):
            return KernelResources(registers=240, shared_bytes=0, stack_bytes=0, spill_stores=-1, spill_loads=-1)

    def check(module, spec, sizes):
        return (False, 3.0, "256x256x256: wrong") if spec.options == ("-DWRONG=1",) else (True, 0.01, "")

    def time_kernel(module, spec, n):
        name = next(r.name for r in mma_sweep.candidates(names) if r.spec() == spec)
        timed.append((name, n))
        return dict(tflops=400.0, lib_tflops=600.0, ratio=ratios[name] - (0.05 if n == 8192 else 0.0))

    wrong = bm.Rung("mma_gemm_tma[WRONG=1]", "mma_gemm_tma", {"WRONG": 1}, kind="tma")
    monkeypatch.setattr(mma_sweep, "device_info", lambda: fake)
    monkeypatch.setattr(mma_sweep, "candidates", lambda only=None: [
        *[r for r in bm.LADDER + bm.CONTENDERS if r.name in names], wrong])
    monkeypatch.setattr(bm, "module_of", lambda rung: Module())
    monkeypatch.setattr(bm, "probe", lambda rung, timeout=0: "HANG: no result" if rung.file.endswith("persistent")
                        and rung.kind == "tma" else None)
    monkeypatch.setattr(bw, "check_sizes", check)
    monkeypatch.setattr(bw, "time_kernel", time_kernel)
    out = tmp_path / "MMA-SWEEP.md"
    assert mma_sweep.main(["--out", str(out), "--rounds", "2"]) == 0
    text = out.read_text()
    assert "| mma_gemm_tma_persistent | 197696 B | FAILED: HANG: no result |" in text
    assert "| mma_gemm_tma[WRONG=1] | 197696 B | WRONG: 256x256x256: wrong |" in text
    assert "| mma_gemm_persistent | 147456 B | yes (0.01 of bound) | 240 | 0 B | 0/0 B | no cuobjdump here |" in text
    assert sorted(set(timed)) == sorted((n, s) for n in (bm.TUNED, "mma_gemm_persistent", "mma_gemm_tma")
                                        for s in (4096, 8192)) and len(timed) == 12
    line = next(l for l in text.splitlines() if l.startswith("mma.sync rung:"))
    assert line.startswith("mma.sync rung: 99.0% / 94.0% of cuBLAS (4096^3 / 8192^3; mma_gemm_tma:"), line
    assert (tmp_path / "best.txt").read_text().strip() == "mma_gemm_tma"
