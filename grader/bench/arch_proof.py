"""Every reference kernel at the lowest arch it allows, compiled by one stack's NVRTC: right?

For each item of the emulator cross-check (grader.bench.crosscheck: every kernels/*.cu, every
case with its float64 reference and bound): compile with the chosen NVRTC (default NVRTC 12,
the CUDA 12 stack's) for compute_70, else 75, else 80 (the first it compiles for), load that
PTX through CuPy (the driver JIT-compiles it for the GPU in hand) and judge every output as the
grader does. On an H100 this proves the code a V100 or T4 gets; `--backend emu` runs the same
on the CPU emulator at that arch (Volta's fragment layout for sm_70), which CI does.

    python -m grader.bench.arch_proof [--stack cuda12] [--backend gpu|emu] [--out FILE] [--only NAME ...]

fragment_probe is judged against the expected maps of the layout the backend has (the GPU's
own, or the emulator's arch); fragment_illegal_op demonstrates non-portable code, so its
positional variants are reported, not judged.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import sys

import numpy as np

from grader.bench import crosscheck as X
from grader.problems import fragments
from grader.runtime import kernels
from grader.runtime.errors import CompileError

LADDER = (70, 75, 80)  # what this proof is about; a kernel that needs sm_90 is named, not run
NOT_JUDGED = ("add_bias_guess", "add_bias_positional")  # wrong by design (notebook 05)


def declared_arch(source: str) -> int | None:
    """The arch a kernel file's header says it requires (`Requires: sm_80`, `sm_90a` -> 90)."""
    return kernels.required_arch(source, default=None)


def lowest_arch(source: str, options=(), stack: str = "cuda12", entries=()) -> tuple[int | None, str]:
    """The first arch of LADDER the source compiles for with `stack`'s NVRTC, with every entry
    point in `entries` present (a file may keep an entry for newer GPUs behind __CUDA_ARCH__),
    and why the lower ones failed (their first error line)."""
    from grader.runtime.compile import nvrtc_compile

    why = []
    floor = declared_arch(source) or LADDER[0]
    for arch in (*LADDER, 90):
        if arch < floor:  # the file says so (inline PTX such as ldmatrix is only checked by ptxas)
            why.append(f"sm_{arch}: the file requires sm_{floor}")
            continue
        try:
            # resources=True: ptxas compiles the PTX for sm_XX too, which is what rejects inline
            # PTX an arch lacks (NVRTC passes asm through), as the driver's JIT would
            ptx = nvrtc_compile(source, arch=arch, options=tuple(options), resources=True, stack=stack).ptx
            missing = [e for e in entries if not re.search(rf"\.entry {re.escape(e)}\(", ptx)]
            if not missing:
                return arch, "; ".join(why)
            why.append(f"sm_{arch}: no entry {', '.join(missing)}")
        except CompileError as e:
            first = next((d.message for d in e.diagnostics if d.severity == "error"), str(e).splitlines()[0])
            hint = f" ({e.hint})" if e.hint and "sm_80" in e.hint else ""
            why.append(f"sm_{arch}: {first[:90]}{hint}")
    return None, "; ".join(why)


def _probe_rows(module, arch: int, layout: int) -> list[dict]:
    rows = []
    xp = module.xp
    for kind, k in fragments.KINDS.items():
        if not fragments.supported(kind, arch):
            continue
        held = xp.full(32 * 16, -1, dtype=np.int32)
        module.launch(k.kernel, (1, 1, 1), (32, 1, 1), [xp.asarray(fragments.probe_input(kind)), held])
        h = held.get() if hasattr(held, "get") else np.asarray(held)
        used = int((h >= 0).sum())
        got = h[:used].reshape(32, max(used // 32, 1))
        if fragments.has_expected(kind, layout):
            want = fragments.expected_map(kind, layout)
            ok = got.shape == want.shape and bool((got == want).all())
            rows.append(dict(case=kind, worst=0.0 if ok else float("inf"), ok=ok))
        else:
            rows.append(dict(case=kind, worst=None, ok=True, note=f"no formula for sm_{layout}'s layout"))
    return rows


def prove(items=None, stack: str = "cuda12", backend: str = "gpu", progress=print) -> list[dict]:
    """One row per item: the lowest arch it compiles for with `stack`'s NVRTC, and each case
    judged against float64 (or the expected fragment map) after running that code."""
    saved = os.environ.get("TC_NVRTC")
    os.environ["TC_NVRTC"] = stack  # the GPU loader compiles with this stack's NVRTC too
    try:
        return _prove(items, stack, backend, progress)
    finally:
        if saved is None:
            os.environ.pop("TC_NVRTC", None)
        else:
            os.environ["TC_NVRTC"] = saved


def _prove(items, stack: str, backend: str, progress) -> list[dict]:
    from grader.runtime.backend import load
    from grader.runtime.device import device_info

    rows = []
    for item in items or X.ITEMS:
        src = kernels.source(item.file)
        row = dict(item=item.name, file=item.file, arch=None, why="", cases=0, worst=0.0, ok=True, notes=[])
        rows.append(row)
        needs = declared_arch(src)
        if needs is not None and needs > LADDER[-1]:  # Hopper-only (wgmma, TMA): not a T4/V100 question
            row["why"] = f"needs sm_{needs}: beyond what this proof is about (sm_70..sm_80)"
            continue
        if backend == "emu" and getattr(item, "gpu_only", ""):
            row["why"] = f"GPU only: {item.gpu_only}"
            continue
        if item.file == "fragment_probe":
            arch, why = 70, "sm_70/75: without the bf16/tf32/fp64 probes (they need sm_80)"
            src = fragments.probe_source(arch)
        else:
            entries = {X.entry_of(item, c) for c in item.cases(np.random.default_rng(X.SEED))}
            arch, why = lowest_arch(src, item.options, stack, sorted(entries))
        if arch is not None and arch > LADDER[-1]:
            row["why"] = f"needs sm_{arch}: beyond what this proof is about (sm_70..sm_80)"
            continue
        row.update(arch=arch, why=why)
        if arch is None:
            row.update(ok=False, worst=float("inf"))
            continue
        module = load(src, backend, item.options, arch=arch)
        if item.file == "fragment_probe":
            info = device_info() if module.backend == "gpu" else None
            layout = info.native_cc if info else arch
            results = _probe_rows(module, arch, layout)
        else:
            results = []
            for case in item.cases(np.random.default_rng(X.SEED)):
                label = X.entry_of(item, case)
                outs = X.run_case(module, label, case)
                for pos in case.outputs:
                    ratio = X._vs_reference(outs[pos], case.expected[pos])
                    judged = not any(label.startswith(n) for n in NOT_JUDGED)
                    results.append(dict(case=f"{case.label}", worst=ratio, ok=ratio <= 1.0 or not judged,
                                        note="" if judged else f"not portable by design: {ratio:.3g}"))
        row["cases"] = len(results)
        judged = [r["worst"] for r in results if r["worst"] is not None and not r.get("note")]
        row["worst"] = max(judged, default=0.0)
        row["ok"] = all(r["ok"] for r in results)
        row["notes"] = [f"{r['case']}: {r['note']}" for r in results if r.get("note")]
        if progress:
            progress(f"  {item.name:42s} sm_{arch}  {len(results):3d} outputs  worst {X._fmt(row['worst'])}  "
                     f"{'ok' if row['ok'] else 'FAIL'}")
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| kernel | lowest arch | outputs | worst error / bound | ok | why not lower / notes |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        notes = "; ".join(x for x in [r["why"], *r["notes"]] if x).replace("|", "/")
        lines.append(f"| {r['item']} | {'sm_' + str(r['arch']) if r['arch'] else '-'} | {r['cases']} | "
                     f"{X._fmt(r['worst'])} | {'yes' if r['ok'] else '**no**'} | {notes} |")
    by_arch = {a: sum(1 for r in rows if r["arch"] == a) for a in LADDER}
    lines.append(f"\n{sum(r['ok'] for r in rows)} of {len(rows)} items right; lowest arch: "
                 + ", ".join(f"sm_{a}: {n}" for a, n in by_arch.items()) + ".")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.bench.arch_proof", description=__doc__.split("\n")[0])
    ap.add_argument("--stack", default="cuda12", choices=("cuda12", "cuda13"), help="whose NVRTC compiles")
    ap.add_argument("--backend", default="gpu", choices=("gpu", "emu"))
    ap.add_argument("--out", help="append the Markdown report to this file")
    ap.add_argument("--only", nargs="+", help="kernel files to prove (default: all)")
    args = ap.parse_args(argv)
    from grader.runtime import nvrtc
    from grader.runtime.device import device_info

    nv = nvrtc.load(args.stack)
    if nv is None:
        print(f"the {args.stack} stack's NVRTC is not installed (pip install -e '.[nvrtc12]')", file=sys.stderr)
        return 2
    info = device_info()
    if args.backend == "gpu" and info is None:
        print("needs a GPU (or --backend emu)", file=sys.stderr)
        return 2
    items = [i for i in X.ITEMS if not args.only or i.file in args.only]
    rows = prove(items, args.stack, args.backend)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    where = f"{info.name} (sm_{info.native_cc}), driver for CUDA {info.driver}" if args.backend == "gpu" \
        else "the CPU emulator at each kernel's lowest arch"
    report = (f"## Every reference kernel at its lowest arch, NVRTC {nv.version[0]}.{nv.version[1]} — {where}, {now}\n\n"
              f"`python -m grader.bench.arch_proof --stack {args.stack} --backend {args.backend}`: each kernel "
              f"compiled for the first of compute_70 / 75 / 80 it allows, loaded as PTX"
              + (" through CuPy (JIT-compiled by the driver)" if args.backend == "gpu" else "")
              + f", every case judged against float64 (seed {X.SEED}) as the grader judges.\n\n" + table(rows))
    print("\n" + report)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + report + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
