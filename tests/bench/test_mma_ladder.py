"""Notebook 10's kernels (kernels/mma_*.cu, hgemm_wgmma.cu, dmma_gemm_m16n8k16.cu,
mma_peak_niter*.cu, ldmatrix_layouts.cu), grader.bench.mma and grader.lessons.beyond_wmma.

CPU: the kernels compile for what they require with no spills, their headers state what the
bench and grader rely on, the bench's defaults and shared-memory formulas match the sources,
the exercise launches its reference as the bench does, the notebook's record parser reads what
the bench writes, and a wrong swizzle is caught. GPU (marked `gpu`): correctness at several
sizes, and the issue's aims (mma.sync rung >= 70% of cuBLAS fp16; wgmma >= 90% at 8192^3).
"""
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

FILES = ["mma_gemm_ldmatrix", "mma_gemm_swizzled", "mma_gemm_tuned", "mma_peak_niter", "mma_peak_niter_f64",
         "dmma_gemm_m16n8k16", "hgemm_wgmma", "ldmatrix_layouts"]
RUNGS = bm.LADDER + [bm.WGMMA, bm.DMMA]


@pytest.mark.parametrize("rung", RUNGS + bm.SWEEP, ids=lambda r: r.name)
def test_rungs_compile_with_their_instruction_and_no_spills(rung):
    src = kernels.source(rung.file)
    if rung.kind == "wgmma":
        out = bm.nvrtc_sm90a(src, rung.options)
        want = "wgmma.mma_async"
    else:
        out = nvrtc_compile(src, arch=90 if rung.kind == "dmma" else 80, options=rung.options)
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
    if rung.kind in ("wgmma", "dmma") and bm.arch() < 90:
        pytest.skip("needs sm_90")
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
