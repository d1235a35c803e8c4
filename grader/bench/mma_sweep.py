"""The mma.sync rung and its contenders on one GPU in one call (issue #35 item 2; .ci/gpu-mma-sweep).

    python -m grader.bench.mma_sweep --out OUT/MMA-SWEEP.md [--sizes 4096 8192] [--rounds 2]
                                     [--budget 400] [--cubins OUT/cubins] [--only NAME ...]

1. Correctness of every candidate first (the tuned rung, grader.bench.mma's CONTENDERS and their
   CONTENDER_SWEEP variants): a float64 reference at several sizes, square and not, output
   poisoned. A wrong candidate is reported and never timed; one that waits on mbarriers (the TMA
   kinds) is first run in a child process with a time limit (grader.bench.mma.probe), so a hang
   costs only that.
2. Registers, local memory and spills of each: what the loaded function reports, ptxas's own
   report through NVRTC (spill bytes), and `cuobjdump --dump-resource-usage` of the same source
   compiled to a cubin for this GPU (when the image has cuobjdump).
3. Each correct candidate paired with cuBLAS fp16 at each size (grader.bench.wmma.time_kernel:
   alternating rounds, each row divided by its own cuBLAS), `rounds` times in round-robin order,
   so that no candidate is always the one timed on a hotter board. Timing stops starting new
   pairings once `budget` seconds have passed; what was skipped is said.
4. A table, and the summary line `mma.sync rung: <a>% / <b>% of cuBLAS` (the median over the
   rounds at the first and second size) for the candidate whose worse size is best; its name
   goes to best.txt beside the output, for a profiler to launch (`grader.bench.mma --once`).
Without a GPU it says so and exits 2.
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from grader.bench import mma as bm
from grader.bench import wmma as bw
from grader.runtime import kernels
from grader.runtime.device import device_info

# Square sizes and shapes that are not (M, N, K multiples of every candidate's tile); 4096^3 has
# 512 tiles of 128 x 256: more than one per SM, so a persistent block walks several.
# K of one k-tile: fewer k-tiles than the pipeline's depth (the prologue's edge).
CHECK_SIZES = (256, 512, 1024, (256, 512, 64), (1024, 2048, 512), (2048, 768, 1536), 4096)
AIM = 0.70  # of cuBLAS fp16, at every size (issue #35)
PROBE_SECONDS = 60


def _size(n) -> str:
    return "x".join(map(str, n)) if isinstance(n, tuple) else f"{n}^3"


def candidates(only=None) -> list:
    """The tuned rung (the one to beat), then each contender and its variants."""
    tuned = next(r for r in bm.LADDER if r.file == bm.TUNED)
    files = {r.file for r in bm.CONTENDERS}
    found = [tuned] + bm.CONTENDERS + [r for r in bm.CONTENDER_SWEEP if r.file in files]
    return [r for r in found if not only or r.name in only or r.file in only]


def cuobjdump_usage(rung, arch: int, folder: Path | None) -> str:
    """`cuobjdump --dump-resource-usage` of the rung compiled by the course's NVRTC to a cubin for
    sm_`arch`: 'REG:.. STACK:.. SHARED:.. LOCAL:..', or why not."""
    tool = shutil.which("cuobjdump")
    if tool is None:
        return "no cuobjdump here"
    from grader.runtime.compile import BASE_OPTIONS, compiler_for
    from grader.runtime.headers import include_options

    nv = compiler_for(arch)
    opts = [f"-arch=sm_{arch}", *BASE_OPTIONS, *include_options(nv.stack.name), *rung.options]
    cubin = nv.compile(kernels.source(rung.file), opts, "kernel.cu", "cubin").code
    folder = folder or Path("/tmp")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9_]+", "-", rung.name).strip("-") + ".cubin")
    path.write_bytes(cubin)
    try:
        out = subprocess.run([tool, "--dump-resource-usage", str(path)], capture_output=True, text=True,
                             timeout=60).stdout
    except subprocess.TimeoutExpired:
        return "cuobjdump timed out"
    found = re.search(r"REG:\d+.*", out)
    return found.group(0).strip() if found else f"no resource line in cuobjdump's output ({out.strip()[:80]})"


def resources(rung, module, arch: int, folder: Path | None) -> dict:
    """What the loaded function says, ptxas's spill bytes (NVRTC) and cuobjdump's line."""
    from grader.runtime.compile import nvrtc_compile

    res = module.resources("mma_gemm")
    out = dict(registers=res.registers, local=res.stack_bytes, spills="?", cuobjdump="")
    try:
        ptxas = nvrtc_compile(kernels.source(rung.file), arch=arch, options=rung.options).resources.get("mma_gemm")
        out["spills"] = f"{ptxas.spill_stores}/{ptxas.spill_loads} B" if ptxas else "?"
    except Exception as e:  # noqa: BLE001 - informative only
        out["spills"] = f"? ({type(e).__name__})"
    try:
        out["cuobjdump"] = cuobjdump_usage(rung, arch, folder)
    except Exception as e:  # noqa: BLE001 - informative only
        out["cuobjdump"] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    return out


def summary(rows: dict, sizes) -> tuple[str, str | None]:
    """The summary line for the candidate whose worse size is best (medians over the rounds)."""
    def med(name, n):
        got = rows[name].get(n) or []
        return statistics.median(got) if got else 0.0

    timed = [name for name in rows if all(rows[name].get(n) for n in sizes)]
    if not timed:
        return "mma.sync rung: no candidate was both correct and timed at every size", None
    best = max(timed, key=lambda name: min(med(name, n) for n in sizes))
    cells = " / ".join(f"{100 * med(best, n):.1f}%" for n in sizes)
    tops = " / ".join(f"{100 * max(rows[best][n]):.1f}%" for n in sizes)
    at = " / ".join(f"{n}^3" for n in sizes)
    met = "meets" if all(med(best, n) >= AIM for n in sizes) else "does not meet"
    return (f"mma.sync rung: {cells} of cuBLAS ({at}; {best}: the median of {len(rows[best][sizes[0]])} "
            f"paired rounds, best round {tops}; {met} the {100 * AIM:.0f}% aim at every size)"), best


def main(argv=None) -> int:
    import datetime

    ap = argparse.ArgumentParser(prog="python -m grader.bench.mma_sweep")
    ap.add_argument("--out", help="write the record (markdown) here as it is printed")
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget", type=float, default=400.0, help="seconds after which no new timing starts")
    ap.add_argument("--cubins", help="folder for the cubins given to cuobjdump")
    ap.add_argument("--only", nargs="+", help="candidate names or files")
    args = ap.parse_args(argv)
    info = device_info()
    if info is None:
        print("needs a GPU: no CUDA device found", file=sys.stderr)
        return 2
    start = time.monotonic()
    sink = open(args.out, "w") if args.out else None

    def out(s: str) -> None:
        print(s, flush=True)
        if sink:
            sink.write(s + "\n")
            sink.flush()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out(f"## The mma.sync rung's contenders vs cuBLAS fp16 — {info.name} ({info.arch}, {info.sm_count} SMs), "
        f"driver {info.driver}, CUDA runtime {info.runtime}, {now}\n")
    out("Measured by `python -m grader.bench.mma_sweep` (.ci/gpu-mma-sweep): every candidate checked against a "
        "float64 reference (componentwise bound, output poisoned) at "
        f"{', '.join(_size(n) for n in CHECK_SIZES)} "
        "before any timing; then each paired with cuBLAS (cupy.matmul) in alternating rounds "
        f"(grader.runtime.timing.paired), {args.rounds} rounds per size in round-robin order over the candidates; "
        "% of cuBLAS = that pairing's median per-round ratio.\n")
    cands = candidates(args.only)
    cubins = Path(args.cubins) if args.cubins else None

    # 1 + 2: correctness and resources, before anything is timed
    out("### Correctness and resources\n")
    out("| candidate | shared memory | correct (sizes checked) | registers | local (stack) | ptxas spills | "
        "cuobjdump --dump-resource-usage |\n|---|---|---|---|---|---|---|")
    ready = []
    for rung in cands:
        if rung.shared_mem > info.max_shared_optin:
            out(f"| {rung.name} | {rung.shared_mem} B | SKIPPED: this GPU allows {info.max_shared_optin} B "
                "per block | | | | |")
            continue
        # a kernel that waits on mbarriers is first run in a child with a time limit: a hang there
        # costs PROBE_SECONDS, not this process's CUDA context and the rest of the sweep
        why = bm.probe(rung, timeout=PROBE_SECONDS) if rung.kind in bm.TMA_KINDS else None
        if why:
            out(f"| {rung.name} | {rung.shared_mem} B | FAILED: {why} | | | | |")
            continue
        try:
            module = bm.module_of(rung)
            spec = rung.spec()
            ok, worst, detail = bw.check_sizes(module, spec, CHECK_SIZES)
            res = resources(rung, module, info.cc, cubins)
        except Exception as e:  # noqa: BLE001 - a candidate that fails to build or launch: say so, go on
            out(f"| {rung.name} | {rung.shared_mem} B | FAILED: {type(e).__name__}: "
                f"{str(e).splitlines()[0][:160] if str(e) else ''} | | | | |")
            continue
        verdict = f"yes ({worst:.2g} of bound)" if ok else f"WRONG: {detail}"
        out(f"| {rung.name} | {rung.shared_mem} B | {verdict} | {res['registers']} | {res['local']} B | "
            f"{res['spills']} | {res['cuobjdump']} |")
        if ok:
            ready.append((rung, module, spec))
    out(f"\n({time.monotonic() - start:.0f} s so far)\n")

    # 3: paired timings, round-robin
    out("### Paired with cuBLAS fp16\n")
    out("| round | candidate | size | TFLOP/s | cuBLAS TFLOP/s | % of cuBLAS |\n|---|---|---|---|---|---|")
    rows: dict = {rung.name: {n: [] for n in args.sizes} for rung, _, _ in ready}
    skipped = []
    for rnd in range(1, args.rounds + 1):
        for rung, module, spec in ready:
            for n in args.sizes:
                if time.monotonic() - start > args.budget:
                    skipped.append(f"{rung.name} at {n}^3 (round {rnd})")
                    continue
                try:
                    t = bw.time_kernel(module, spec, n)
                except Exception as e:  # noqa: BLE001
                    out(f"| {rnd} | {rung.name} | {n}^3 | FAILED: {type(e).__name__}: {str(e)[:120]} | | |")
                    continue
                rows[rung.name][n].append(t["ratio"])
                out(f"| {rnd} | {rung.name} | {n}^3 | {t['tflops']:.1f} | {t['lib_tflops']:.1f} | "
                    f"{100 * t['ratio']:.1f}% |")
    if skipped:
        out(f"\nNot timed (the {args.budget:.0f} s budget was spent): {'; '.join(skipped)}")

    # 4: per candidate, then the summary line
    out("\n### Per candidate (median of the rounds; best round in brackets)\n")
    out("| candidate | " + " | ".join(f"{n}^3" for n in args.sizes) + f" | {100 * AIM:.0f}% at every size |")
    out("|---" * (len(args.sizes) + 2) + "|")
    for name, by_n in rows.items():
        cells = [f"{100 * statistics.median(v):.1f}% ({100 * max(v):.1f}%)" if v else "not timed"
                 for v in by_n.values()]
        met = all(v and statistics.median(v) >= AIM for v in by_n.values())
        out(f"| {name} | " + " | ".join(cells) + f" | {'yes' if met else 'no'} |")
    line, best = summary(rows, args.sizes)
    out("\n" + line)
    out(f"\n({time.monotonic() - start:.0f} s in all)")
    if sink:
        sink.close()
        if best:
            (Path(args.out).parent / "best.txt").write_text(best + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
