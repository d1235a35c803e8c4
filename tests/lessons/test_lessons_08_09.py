"""Notebooks 08-09 helpers (grader.lessons.convolution / capstone) on the CPU: the emulator
runs the convolution kernels, and the capstone's save / load / plots work on a results file
without a GPU. GPU runs of the notebooks themselves: tests/classroom/test_notebooks.py."""
import json

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from grader.lessons import capstone
from grader.lessons import convolution as L
from grader.problems import conv
from grader.runtime import kernels


def test_direct_kernel_correct_at_borders_on_odd_sizes():
    out, ref, cmp, _ = L.run_direct(kernels.source("conv2d_direct_tiled"), 19, 35, 5, backend="emu")
    assert cmp.ok, cmp
    assert np.isfinite(out).all()


def test_toeplitz_matches_direct_and_overhead_rows():
    mask = np.arange(9, dtype=float).reshape(3, 3)
    _, T = L.plot_toeplitz(5, 6, mask)
    img = np.random.default_rng(1).uniform(-1, 1, (5, 6))
    assert np.allclose(T @ img.ravel(), conv.conv2d_same(img, mask).ravel())
    r = {x["n"]: x for x in L.overhead_rows(sizes=(16,))}[16]
    assert r["toeplitz"] == 256 * 256 * 4 and r["im2col"] == 256 * 9 * 4


def test_im2col_feeds_wmma_gemm():
    res = L.conv_by_im2col_wmma(kernels.source("im2col"), N=1, C=4, H=5, W=6, K=16, backend="emu")
    assert res["comparison"].ok, res["comparison"]


def test_im2col_stub_gives_not_yet_not_an_exception():
    stub = kernels.source("im2col").split("{", 1)[0] + "{\n    // YOUR CODE HERE\n}\n"
    res = L.conv_by_im2col_wmma(stub, N=1, C=4, H=5, W=6, K=16, backend="emu")
    assert not res["comparison"].ok


def test_implicit_gemm_reference_correct_on_emulator():
    cmp, backend = L.run_implicit(kernels.source("conv2d_implicit_wmma"), N=1, C=32, H=4, W=3, K=128,
                                  backend="emu")
    assert cmp.ok, cmp
    assert backend == "emu"


def test_gemm_dims_of_the_tvm_layer():
    d = L.gemm_dims(*L.TVM_SHAPE)
    assert (d["M"], d["N_gemm"], d["K_gemm"]) == (256 * 14 * 14, 512, 9 * 256)


def fake_results(gpu="Test GPU 80GB"):
    ms = {str(n): dict(cuda_cores=2 * n**3 / 20e12 * 1e3, tensor_cores=2 * n**3 / 300e12 * 1e3,
                       cublas_fp16=2 * n**3 / 650e12 * 1e3, cublas_fp32=2 * n**3 / 50e12 * 1e3)
          for n in (1024, 2048, 4096)}
    ms["1024"]["cpu_numpy"] = 5.0
    layer = dict(layer="TVM RFC b256 14x14 256->512", shape=list(L.TVM_SHAPE), flops=1.18e11, kernel_ms=0.36,
                 im2col_cublas_ms=1.38, im2col_ms=1.1, gemm_ms=0.18, astype_ms=0.13, gather_cublas_ms=1.0,
                 speedup_vs_im2col_cublas=3.85, speedup_vs_gather_cublas=2.78, cudnn_ms=0.17, kernel_vs_cudnn=0.47)
    return dict(
        meta=dict(gpu=gpu, arch="sm_90", sms=132, memory_gib=80.0, driver="13.0", runtime="13.0",
                  cupy="14.2.0", numpy="2", cpu="test cpu", cpu_threads=16, date="2026-11-22 00:00 UTC"),
        salerno=dict(sizes=[1024, 2048, 4096, 8192], gpu_sizes=[1024, 2048, 4096], cpu_sizes=[1024],
                     cuda_cores_kernel="sgemm_tiled", tensor_cores_kernel="wmma_gemm_swizzle", ms=ms),
        tvm=dict(gemm_4096={"without tensor cores": {"sgemm_tiled (kernels/)": 15.5, "cuBLAS fp32": 2.7},
                            "with tensor cores": {"wmma_gemm_swizzle (kernels/)": 0.4, "cuBLAS fp16": 0.21}},
                 conv2d={"without tensor cores": {"im2col + cuBLAS fp32 (CuPy gather)": 4.0},
                         "with tensor cores": {"implicit GEMM WMMA (kernels/)": 0.36, "cuDNN fp16 (PyTorch)": 0.17}},
                 conv2d_flops=1.18e11),
        roofline=dict(copy_gbs=3300.0, peaks_tflops={"cuBLAS fp16 (tensor cores)": 700.0, "cuBLAS fp32 (CUDA cores)": 51.0,
                                                      "cuBLAS fp64 (DMMA)": 55.0,
                                                      "WMMA registers only (wmma_peak_niter)": 620.0},
                      kernels=[dict(kernel="sgemm_tiled", size="4096^3", flops=1.37e11, bytes=2.0e8, ms=15.5,
                                    unit="CUDA cores", precision="float32"),
                               dict(kernel="wmma_gemm_swizzle", size="4096^3", flops=1.37e11, bytes=1.3e8, ms=0.4,
                                    unit="tensor cores", precision="float16"),
                               dict(kernel="im2col", size="TVM layer", flops=0.0, bytes=2.5e8, ms=1.1,
                                    unit="memory", precision="float16")]),
        conv_layers=[layer])


def test_capstone_save_load_and_plots(tmp_path, monkeypatch):
    monkeypatch.setattr(capstone, "KERNELS_DIR", tmp_path)
    res = fake_results()
    path = capstone.save(res)
    assert path.name == "capstone-results-test-gpu-80gb.json"
    back = capstone.load()
    assert back["meta"]["loaded_from"] == path.name
    assert "loaded from kernels/capstone-results-test-gpu-80gb.json" in capstone.provenance(back)
    capstone.plot_salerno(back, "time")
    capstone.plot_salerno(back, "rate")
    capstone.plot_tvm(back)
    capstone.plot_roofline(back)
    assert "not run" in repr(capstone.salerno_table(back))  # 8192 was not measured
    assert len(capstone.tvm_rows(back)) == 7
    lines = capstone.headline(back)
    assert any("TVM layer" in s for s in lines) and any("CPU NumPy" in s for s in lines)
    json.loads(path.read_text())


def test_committed_capstone_results_load_and_plot():
    files = capstone.saved()
    if not files:
        pytest.skip("no committed kernels/capstone-results-*.json yet")
    for f in files:
        res = capstone.load(f)
        for key in ("meta", "salerno", "tvm", "roofline", "conv_layers"):
            assert key in res, f"{f.name} lacks {key}"
        capstone.plot_salerno(res)
        capstone.plot_tvm(res)
        capstone.plot_roofline(res)
        L.plot_layers(res["conv_layers"], "recorded")


def test_capstone_run_refuses_without_gpu():
    from grader.runtime.device import has_gpu

    if has_gpu():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="needs a GPU"):
        capstone.run()


def test_seed_tables_beside_a_run_without_the_papers_kinds_of_kernel():
    """fake_results ran sizes up to 4096 only: every seed row is still there, the ones this run
    did not time say so, and the paper's own kinds of kernel (not timed) add no rows."""
    res = fake_results()
    rows = capstone.paper_rows(res)
    assert [(r["kind"], r["n"]) for r in rows] == [("CPU", n) for n in (1024, 2048, 4096, 8192, 16384)] + [
        ("CUDA cores", 16384), ("tensor cores", 16384)]
    assert rows[0]["here_ms"] == 5.0 and rows[0]["faster"] == pytest.approx(40.72 / 5.0)
    assert all(r["here_ms"] is None and r["faster"] is None for r in rows[1:])
    text = repr(capstone.paper_table(res))
    assert "measured now" in text and "not run (over the CPU time budget)" in text
    assert "170,707,903.63" in text  # Table I's own 16384 figure, beside the text's
    res["salerno"]["ms"]["4096"].update(paper_cuda_cores=40.0, paper_tensor_cores=5.0)
    res["salerno"]["ms"]["16384"] = dict(cuda_cores=300.0, tensor_cores=30.0, paper_cuda_cores=900.0,
                                         paper_tensor_cores=300.0)
    rows = capstone.paper_rows(res)
    extra = [r for r in rows if "the paper's kind" in r["here"]]
    assert [(r["kind"], r["here_ms"]) for r in extra] == [("CUDA cores", 900.0), ("tensor cores", 300.0)]
    assert any("with the paper's kinds of kernel" in line for line in capstone.paper_speedups(res))


def test_tvm_rows_pair_each_rfc_row_with_its_counterpart():
    res = fake_results()
    rows = capstone.tvm_compare_rows(res)
    rfc = [(r["workload"], r["rfc"], r["tensor_cores"], r["here"]) for r in rows if r["rfc"]]
    assert rfc == [("gemm", "TVM", False, "sgemm_tiled (kernels/)"), ("gemm", "cuBLAS", False, "cuBLAS fp32"),
                   ("gemm", "TVM", True, "wmma_gemm_swizzle (kernels/)"), ("gemm", "cuBLAS", True, "cuBLAS fp16"),
                   ("conv2d", "TVM", False, None),
                   ("conv2d", "cuDNN", False, "im2col + cuBLAS fp32 (CuPy gather)"),
                   ("conv2d", "TVM", True, "implicit GEMM WMMA (kernels/)"),
                   ("conv2d", "cuDNN", True, "cuDNN fp16 (PyTorch)")]
    assert "im2col + cuBLAS fp32 (cuDNN fp32 not in this run)" in capstone.tvm_setup(res)
    res["tvm"]["conv2d"]["without tensor cores"]["cuDNN fp32 (PyTorch, TF32 off)"] = 3.0
    rows = capstone.tvm_compare_rows(res)
    lib32 = next(r for r in rows if r["workload"] == "conv2d" and r["rfc"] == "cuDNN" and not r["tensor_cores"])
    assert lib32["here"].startswith("cuDNN fp32") and lib32["faster"] == pytest.approx(4.990112 / 3.0)
    assert any(r["here"] == "im2col + cuBLAS fp32 (CuPy gather)" and r["rfc"] is None for r in rows)
    assert "cuDNN fp32 (TF32 off)" in capstone.tvm_setup(res)
    assert "measured now" in repr(capstone.tvm_table(res))


def test_capstone_text_names_baselines_and_run():
    res = fake_results()
    conv = next(s for s in capstone.headline(res) if "TVM layer" in s)
    assert "im2col kernel (kernels/im2col.cu) + cuBLAS fp16 (1.380 ms" in conv
    assert "fp32 im2col + cuBLAS fp32" in conv
    assert capstone.cublas_peaks(res) == {"fp16": 700.0, "fp32": 51.0, "fp64": 55.0}
    ctx = capstone.cublas_context(res)
    assert "measured now on Test GPU 80GB" in ctx and "wmma_gemm_swizzle" in ctx
    res["meta"]["loaded_from"] = "capstone-results-test.json"
    assert "recorded on Test GPU 80GB, 2026-11-22 00:00 UTC (kernels/capstone-results-test.json)" in \
        capstone.cublas_context(res)
    assert "TFLOP/s in the" in capstone.cublas_context(res)  # the spread across recorded runs
    d = capstone.roof_at(res, res["roofline"]["kernels"][0])  # sgemm_tiled, fp32
    assert d["compute_label"] == "cuBLAS fp32" and d["roof"] == 51.0


def test_capstone_measures_nothing_while_autograding(tmp_path, monkeypatch):
    """09 awards no points: under nbgrader it shows the saved run instead of measuring past the
    limit of a cell that awards none (seen on an H100: the cell was stopped at 60 s)."""
    from grader.lessons import capstone

    mine = tmp_path / "capstone-h100.json"
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert capstone.measure_here(mine, rerun=False)
    mine.write_text("{}")
    assert not capstone.measure_here(mine, rerun=False) and capstone.measure_here(mine, rerun=True)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert not capstone.measure_here(mine, rerun=True)
    assert not capstone.measure_here(None, rerun=True)
