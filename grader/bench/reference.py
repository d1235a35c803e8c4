"""Measure the reference kernels on this GPU beside cuBLAS and write a results file.

    python -m grader.bench [--sizes 1024 4096] [--out kernels/RESULTS.md]

Each kernel is checked on fresh random inputs before it is timed; a wrong kernel is
reported, never timed. The file records GPU, driver, date and every number measured.
"""
from __future__ import annotations

import argparse
import datetime
import sys

from grader.problems import gemm, gemm_launch
from grader.runtime import kernels
from grader.runtime.device import device_info
from grader.runtime.gpu import GpuModule

LADDER = (
    ("sgemm_naive", gemm_launch.sgemm_naive()),
    ("sgemm_tiled", gemm_launch.sgemm_tiled(32)),
    ("wmma_gemm_naive", gemm_launch.wmma_naive()),
)


def measure(sizes=(1024, 4096), seeds=(1, 2)) -> list[dict]:
    rows = []
    for name, spec in LADDER:
        module = GpuModule(kernels.source(name), spec.options)
        for n in sizes:
            runs = [gemm.run_once(module, spec, n, n, n, seed, xp=__import__("cupy")) for seed in seeds]
            worst = max(r.comparison.worst_ratio for r in runs)
            ok = all(r.comparison.ok for r in runs)
            row = dict(kernel=name, n=n, correct=ok, worst=worst,
                       detail="; ".join(str(r.comparison) for r in runs))
            if ok:
                t1 = gemm.time_gemm(module, spec, n, n, n)
                t2 = gemm.time_gemm(module, spec, n, n, n)  # twice: the spread of the method
                row.update(gflops=t1["gflops"], gflops_again=t2["gflops"],
                           library=spec.library, library_gflops=t1["library_gflops"],
                           ratio=t1["ratio"], timing=str(t1["kernel"]))
            rows.append(row)
            print(_line(row), flush=True)
    return rows


def _line(r: dict) -> str:
    if not r["correct"]:
        return f"| {r['kernel']} | {r['n']} | WRONG: {r['detail']} | | | | |"
    return (f"| {r['kernel']} | {r['n']}^3 | yes ({r['worst']:.2g} of bound) | {r['gflops']:.0f} "
            f"(again: {r['gflops_again']:.0f}) | cuBLAS {r['library']}: {r['library_gflops']:.0f} "
            f"| {100 * r['ratio']:.1f}% | {r['timing']} |")


def report(rows: list[dict]) -> str:
    info = device_info()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"## Reference kernels vs cuBLAS — {info.name} ({info.arch}, {info.sm_count} SMs), "
            f"driver {info.driver}, CUDA runtime {info.runtime}, {now}\n\n"
            "Measured by `python -m grader.bench`: inputs U(-1,1), checked against a float64 "
            "reference on 2 seeds first; GFLOPS = 2n^3 / median time (CUDA events), timed twice; "
            "cuBLAS through cupy.matmul in the same process on the same size.\n\n"
            "| kernel | size | correct | GFLOPS | library GFLOPS | % of library | timing |\n"
            "|---|---|---|---|---|---|---|\n")
    return head + "\n".join(_line(r) for r in rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--out", help="append the markdown table to this file")
    args = ap.parse_args(argv)
    if device_info() is None:
        print("needs a GPU: no CUDA device found", file=sys.stderr)
        return 2
    text = report(measure(tuple(args.sizes)))
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
