"""The coach on a GPU, for the record: every rung of notebook 06's WMMA ladder and notebook 10's
mma.sync ladder, and the coach's four bottleneck fixtures (tests/coach_kernels), each
- its static panel (what a CPU shows: ptxas, SASS, occupancy, the emulator's traffic, the model),
- the coach's measured path (grader.coach.measured: ncu on grader.coach.profile_target), and
- a raw `ncu --csv` of the same kernel and launch with a few metrics, parsed separately, to show the
  coach read the right kernel: same name, grid and block, same HMMA count (2*M*N*K / 4096 for
  HMMA.16816), and counters that agree;
plus cuBLAS's launch (for the roofline). Writes OUT/coach.json and OUT/COACH.md.

    python -m grader.bench.coach OUT [--size 2048] [--deadline SECONDS] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from grader.bench import ladders
from grader.checking import exercises
from grader.coach import measured, panel, sass
from grader.runtime import kernels

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "coach_kernels"
# the raw check: few metrics (few replay passes), each also in the coach's list
RAW = ["sm__inst_executed_pipe_tensor_op_hmma.sum", "gpu__time_duration.sum",
       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
       "dram__bytes_read.sum"]
EXPECT = {"global_only.cu": "global-low", "bank_conflicts.cu": "conflicts", "register_spills.cu": "spills",
          "single_stage.cu": "pipeline", "uncoalesced_copy.cu": "coalescing", "uncoalesced_2byte.cu": "coalescing",
          "transpose_strided_stores.cu": "coalescing", "transpose_unpadded_tile.cu": "conflicts",
          "sgemm_coalesced_global_only.cu": "global-low", "huge_shared_request.cu": "occupancy",
          "tiny_block_tile.cu": "global-low", "transpose_two_way_tile.cu": "none", "epilogue_column_stores.cu": "none",
          "sgemm_tiled_strided_b.cu": "coalescing", "sgemm_tiled_half_lanes.cu": "divergence",
          "mma_unswizzled.cu": "conflicts", "sgemm_tiled_double_acc.cu": "fp64",
          "sgemm_tiled_transposed_bs.cu": "conflicts", "sgemm_tiled_row_in_registers.cu": "occupancy",
          "transpose_tile_rows_on_x.cu": "coalescing", "conv2d_unpadded_rows.cu": "conflicts",
          "sgemm_tiled_transposed_as_store.cu": "conflicts",
          # held out, round 4 (2026-11-28)
          "sgemm_tiled_fp64_literal.cu": "fp64", "sgemm_tiled_mod_in_k.cu": "integer",
          "sgemm_tiled_atomic_acc.cu": "output", "transpose_tile_column_writes.cu": "coalescing",
          "transpose_tile_store_conflicts.cu": "conflicts", "sgemm_tiled_local_array.cu": "local",
          "wmma_sixteen_small_warps.cu": "shared", "sgemm_tiled_c_down_rows.cu": "shared"}
TRAFFIC = dict(M=128, N=256, K=320)  # the CPU size check() observes for wmma-gemm-fast


def _variants() -> dict:
    return {k: v for k, v in json.loads((FIXTURES / "variants.json").read_text()).items() if not k.startswith("_")}


def fixture_names() -> list[str]:
    return sorted({f.name for f in FIXTURES.glob("*.cu")} | set(_variants()))


def fixture_source(name: str) -> str:
    """A coach fixture's source: a .cu file of tests/coach_kernels, or a course kernel with the one edit
    variants.json gives (each replacement must apply exactly once), under a header naming its LAUNCH."""
    if (FIXTURES / name).exists():
        return (FIXTURES / name).read_text()
    v = _variants()[name]
    src = kernels.source(v["base"])
    for old, new in v["replace"]:
        assert src.count(old) == 1, (name, old)
        src = src.replace(old, new)
    edit = f"with {len(v['replace'])} edit(s)" if v["replace"] else "as the course has it"
    ex = f"\n * EXERCISE {v['exercise']}" if v.get("exercise") else ""
    return (f"/*\n * {name[:-3]}: {v['why']}.\n * Test fixture of the performance coach: kernels/{v['base']}.cu {edit} "
            f"(tests/coach_kernels/variants.json).{ex}\n * LAUNCH {json.dumps(v['launch'])}\n */\n" + src)


def fixture_exercise(src: str):
    """The exercise a fixture is slow for: its header's EXERCISE line, else the graded WMMA rung."""
    m = re.search(r"EXERCISE (\S+)", src)
    return exercises.get(m.group(1)) if m else exercises.graded_ladder("wmma")


def subjects(only=()):
    """(name, exercise id, source, launch, extra options)."""
    out = []
    for ex in exercises.EXERCISES.values():
        for r in ladders.rungs(ex):
            out.append((r.name, ex.id, kernels.source(r.file), r.launch, list(r.options)))
    for name in fixture_names():  # slow kernels, each for one reason (most of them WMMA GEMMs)
        src = fixture_source(name)
        launch = json.loads(re.search(r"LAUNCH (\{.*\})", src).group(1))
        out.append((name, fixture_exercise(src).id, src, launch, []))
    return [s for s in out if not only or any(o in s[0] for o in only)]


def traffic_dims(ex) -> dict:
    """The size the emulator observes a subject at: TRAFFIC for a GEMM, else the exercise's largest CPU size."""
    return dict(TRAFFIC) if "M" in ex.cpu_sizes[0] else dict(ex.cpu_sizes[-1])


def measure_dims(ex, n: int) -> tuple[dict, float]:
    """The size a subject that is not a GEMM is profiled at, and its FLOPs: a transpose 2n x 2n floats (no
    FLOPs), anything else (a convolution) the exercise's timed size."""
    if "rows" in ex.cpu_sizes[0]:
        return dict(rows=2 * n, cols=2 * n), 0.0
    dims = dict(ex.perf_size)
    return dims, ex.problem.flops(dims) if hasattr(ex.problem, "flops") else 0.0


def static_panel(ex, src, launch, opts, dims=None):
    from grader.emu.traffic import measure

    dims = dims or traffic_dims(ex)
    case = ex.problem.make(dims, np.random.default_rng(0), launch, reference=False)
    built = sass.build(src, ex.kernel, tuple(opts), 90)  # (already in a worker thread)
    tr = measure(src, ex.kernel, case.grid, case.block, case.args, shared_mem=case.shared_mem, options=opts)
    return panel.build(exercise=ex.id, source=src, kernel=ex.kernel, options=opts, arch=90,
                       threads=int(np.prod(case.block)), smem_dynamic=case.shared_mem, problem=ex.problem,
                       traffic=tr, traffic_dims=dims, perf_dims=ex.perf_size, built=built,
                       sections=ex.coach_sections)


def raw_ncu(job: dict, kernel: str, timeout: float = 150.0) -> dict:
    """`ncu --csv` by hand on `python -m grader.coach.profile_target JOB`, parsed here on its own."""
    exe = measured.tool()
    with tempfile.TemporaryDirectory(prefix="tc-coach-raw-") as tmp:
        path = os.path.join(tmp, "job.pkl")
        with open(path, "wb") as f:
            pickle.dump(job, f)
        cmd = [exe, "--csv", "--print-units", "base", "--clock-control", "none", "--kernel-name", kernel,
               "--launch-count", "1", "--metrics", ",".join(RAW), sys.executable, "-m", "grader.coach.profile_target",
               path]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        except subprocess.TimeoutExpired:
            return dict(ok=False, why="timeout")
    # parsed here on its own (csv module, by column name), not by grader.coach.measured
    import csv
    import io

    text = done.stdout[done.stdout.find('"ID"'):] if '"ID"' in done.stdout else ""
    rows = [ln for ln in text.splitlines() if ln.startswith('"')]
    vals, name, grid, block = {}, None, None, None
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        name, block, grid = row.get("Kernel Name"), row.get("Block Size"), row.get("Grid Size")
        try:
            vals[row["Metric Name"]] = float((row.get("Metric Value") or "").replace(",", ""))
        except (KeyError, ValueError):
            pass
    return dict(ok=bool(vals), kernel=name, grid=grid, block=block, metrics=vals, command=" ".join(cmd[:-1]) + " JOB",
                csv="\n".join(rows), stderr=done.stderr[-800:] if not vals else "")


def _close(a, b, rel: float) -> bool:
    """Equal within `rel` of the larger, exactly equal when either is 0 (both must be there)."""
    if a is None or b is None:
        return False
    if a == 0 or b == 0:
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _conflicts_agree(coach: dict, theirs) -> bool:
    """Shared-load bank conflicts of two ncu runs: within 1% of each other, or apart by at most 0.1% of
    the shared-load wavefronts (then both give the same ways to 3 decimals: a few thousand conflicts out
    of millions of wavefronts differ by more than 1% between runs); exactly equal when either is 0."""
    ours = coach.get("smem_ld_conflicts")
    if ours is None or theirs is None:
        return False
    if ours == 0 or theirs == 0:
        return ours == theirs
    return _close(ours, theirs, 0.01) or abs(ours - theirs) <= 0.001 * (coach.get("smem_ld_wavefronts") or 0)


def compare(coach: dict, raw: dict, expect_grid, expect_block, hmma_expected) -> dict:
    """Do the coach's numbers and the raw ncu's agree, and is it the launch we meant? The two are
    separate processes, each one launch: name, grid, block and the HMMA count must be equal; ncu's
    bank-conflict counter varies a little from run to run (84,248,539 vs 84,246,838; 5,418 vs 6,464 of
    4.3 million wavefronts on the H100, 2026-11-26), so it must agree within 1% or within 0.1% of the
    shared-load wavefronts (exactly when either is 0), the duration within 15%, the achieved occupancy
    within 5 points."""
    m = raw.get("metrics", {})
    checks = {
        "same kernel": raw.get("kernel") == coach.get("kernel"),
        "grid as launched": (raw.get("grid") or "").replace(" ", "") == str(tuple(expect_grid)).replace(" ", ""),
        "block as launched": (raw.get("block") or "").replace(" ", "") == str(tuple(expect_block)).replace(" ", ""),
        "HMMA count (both)": coach.get("hmma_inst") == m.get(RAW[0]),
        "HMMA count = 2MNK/4096": m.get(RAW[0]) == hmma_expected,
        "bank conflicts (ld) agree": _conflicts_agree(coach, m.get(RAW[2])),
        "duration within 15%": bool(coach.get("duration_ns") and m.get(RAW[1]))
        and abs(coach["duration_ns"] - m[RAW[1]]) <= 0.15 * m[RAW[1]],
        "occupancy within 5 points": abs(coach.get("occupancy_pct", -99) - m.get(RAW[3], 99)) <= 5,
    }
    return checks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--deadline", type=float, default=500.0, help="stop starting new kernels after this many s")
    ap.add_argument("--only", nargs="*", default=())
    ap.add_argument("--no-static", action="store_true")
    ap.add_argument("--no-measure", action="store_true", help="the static part only (any machine)")
    a = ap.parse_args(argv)
    t0 = time.time()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from grader.runtime.device import device_info

    info = device_info()
    n = a.size
    dims = dict(M=n, N=n, K=n)
    flops = 2.0 * n ** 3
    record = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  gpu=getattr(info, "name", None), size=n, ncu=measured.tool(), kernels=[], skipped=[])
    md = [f"# The coach on {record['gpu']} ({record['date']}, {n}^3, one launch per kernel under ncu --clock-control none)",
          "", "\"raw ncu agrees\": a separate `ncu --csv` run of the same kernel and launch names the same kernel, "
          "grid and block and the same HMMA count (= 2MNK/4096), its shared-load bank conflicts are within 1% "
          "of the coach's or apart by at most 0.1% of the shared-load wavefronts (exactly equal when either is 0: "
          "the counter varies slightly between two runs), "
          "its duration within 15%, its achieved occupancy within 5 points.",
          "", "| kernel | coach: tensor pipe % | occupancy % | smem ld ways | DRAM % | L2 % | TFLOP/s (this launch) | "
          "top stall | raw ncu agrees | model bound | first finding | L2 TB/s (implied peak) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    todo = subjects(a.only)
    # the static parts (emulator, NVRTC, nvdisasm: CPU work in child processes or without the GIL)
    # run in worker threads while the main thread profiles on the GPU
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=4)
    statics = {} if a.no_static else {
        name: pool.submit(static_panel, exercises.get(ex_id), src, launch,
                          [*exercises.get(ex_id).problem.options(launch), *extra])
        for name, ex_id, src, launch, extra in todo}
    for name, ex_id, src, launch, extra in todo:
        if time.time() - t0 > a.deadline:
            record["skipped"].append(name)
            continue
        ex = exercises.get(ex_id)
        opts = [*ex.problem.options(launch), *extra]
        entry = dict(name=name, exercise=ex_id, launch=launch, options=opts)
        ts = time.time()
        gemm = hasattr(ex.problem, "geometry")  # else a transpose (2n x 2n floats, no FLOPs) or a convolution
        dims_x, flops_x = (dims, flops) if gemm else measure_dims(ex, n)
        got = (dict(ok=False, why="not measured (--no-measure)") if a.no_measure else
               measured.measure(src, ex.kernel, opts, ex.problem, dims_x, launch, flops=flops_x or None))
        entry["measured"] = {k: v for k, v in got.items() if k not in ("csv", "command")}
        entry["measured_csv"] = got.get("csv", "")
        if gemm:
            case_grid, case_block, _ = ex.problem.geometry(n, n, n, launch)
        elif got["ok"]:
            case = ex.problem.make(dims_x, np.random.default_rng(0), launch, reference=False)
            case_grid, case_block = case.grid, case.block
        if got["ok"]:
            raw = raw_ncu(dict(source=src, kernel=ex.kernel, options=opts, problem=ex.problem, dims=dims_x, launch=launch),
                          ex.kernel)
            entry["raw"] = raw
            entry["agree"] = compare(got["summary"], raw, case_grid, case_block, flops_x / 4096)
        if name in statics:
            try:
                p = statics[name].result(timeout=max(a.deadline + 60 - (time.time() - t0), 5))
                entry["static"] = p.to_dict()
                entry["first_finding"] = p.first.key if p.first else None
                entry["panel_text"] = p.text()
            except Exception as e:  # recorded, never fatal
                entry["static_error"] = f"{type(e).__name__}: {e}"
        entry["seconds"] = round(time.time() - ts, 1)
        if name in EXPECT:
            entry["expected_finding"] = EXPECT[name]
        record["kernels"].append(entry)
        s = got.get("summary", {})
        stall = (s.get("top_stalls") or [("-", 0)])[0][0]
        agree = entry.get("agree")
        ok = ("yes" if agree and all(agree.values()) else
              "NO: " + ", ".join(k for k, v in agree.items() if not v) if agree else got.get("why", "-"))
        bound = entry.get("static", {}).get("model") or {}
        md.append(f"| {name} | {s.get('tensor_pipe_pct', float('nan')):.0f} | {s.get('occupancy_pct', float('nan')):.0f} | "
                  f"{s.get('smem_ld_ways', float('nan')):.1f} | {s.get('dram_pct', float('nan')):.0f} | "
                  f"{s.get('l2_pct', float('nan')):.0f} | {s.get('tflops', float('nan')):.0f} | {stall} | {ok} | "
                  f"{bound.get('tflops', float('nan')):.0f} | {entry.get('first_finding')}"
                  + (f" (expected {EXPECT[name]})" if name in EXPECT else "") + " | "
                  + (f"{s['l2_bytes_per_s'] / 1e12:.2f} ({s.get('l2_peak_bytes_per_s', float('nan')) / 1e12:.1f})"
                     if s.get("l2_bytes_per_s") else "-") + " |")
        print(md[-1], flush=True)
        (out / "coach.json").write_text(json.dumps(record, indent=1, default=str))
    if time.time() - t0 < a.deadline + 30 and not a.no_measure:
        cub = _cublas(n, flops)
        record["cublas"] = cub
        md.append("")
        md.append(f"cuBLAS fp16 {n}^3 (cupy.matmul), one launch: " + (
            "; ".join(measured.lines(cub["summary"])) if cub.get("ok") else cub.get("why", "")))
    if record["skipped"]:
        md.append(f"\nNot run (deadline {a.deadline:.0f} s): {', '.join(record['skipped'])}")
    md.append(f"\nTotal {time.time() - t0:.0f} s.")
    (out / "coach.json").write_text(json.dumps(record, indent=1, default=str))
    (out / "COACH.md").write_text("\n".join(md) + "\n")
    pool.shutdown(wait=False, cancel_futures=True)
    print("\n".join(md[-3:]))
    return 0


def _cublas(n: int, flops: float) -> dict:
    """cuBLAS's own launch under ncu (its kernel names vary by version: any GEMM-like name)."""
    exe = measured.tool()
    if exe is None:
        return dict(ok=False, why="no Nsight Compute (ncu) on this machine")
    with tempfile.TemporaryDirectory(prefix="tc-coach-cublas-") as tmp:
        path = os.path.join(tmp, "job.pkl")
        with open(path, "wb") as f:
            pickle.dump(dict(cublas=n), f)
        cmd = [exe, "--csv", "--print-units", "base", "--clock-control", "none", "--kernel-name",
               "regex:gemm|nvjet|xmma|cutlass|sm90|ampere", "--launch-count", "1", "--metrics",
               ",".join(measured.CORE.values()), sys.executable, "-m", "grader.coach.profile_target", path]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=150,
                                  env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        except subprocess.TimeoutExpired:
            return dict(ok=False, why="timeout")
    launches = measured.parse_csv(done.stdout)
    if not launches:
        return dict(ok=False, why=(done.stdout + done.stderr)[-400:])
    return dict(ok=True, summary=measured.summarise(launches[0], flops))


if __name__ == "__main__":
    sys.exit(main())
