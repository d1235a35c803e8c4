"""Command line: `python -m grader doctor | inspect FILE.cu | list | check EXERCISE FILE.cu`.

Exit codes: 0 success, 1 a check failed, 2 usage error (argparse's own convention).
"""
from __future__ import annotations

import argparse
import sys


def _doctor(args) -> int:
    from grader.classroom.doctor import run

    rep = run()
    print(rep.text())
    return 0 if rep.ready else 1


def _inspect(args) -> int:
    from grader.runtime.compile import nvrtc_compile
    from grader.runtime.errors import CompileError, CourseError
    from grader.runtime.ptx import summary

    try:
        source = open(args.file).read()
    except OSError as e:
        print(f"cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        if args.arch == "90a":  # wgmma, setmaxnreg: the arch-specific Hopper target
            from grader.bench.mma import nvrtc_sm90a

            out = nvrtc_sm90a(source, args.define)
        else:
            out = nvrtc_compile(source, arch=int(args.arch), options=args.define)
    except CompileError as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 1
    except CourseError as e:  # no NVRTC for this arch (sm_70 needs NVRTC 12)
        print(str(e), file=sys.stderr)
        return 2
    for w in out.warnings:
        print(f"{args.file}: {w}")
    print(f"compiled for sm_{args.arch} by NVRTC {out.nvrtc[0]}.{out.nvrtc[1]}: kernels {', '.join(out.kernels) or 'none'}")
    for name, r in out.resources.items():
        print(f"  {name}: {r.registers} registers, {r.shared_bytes} B static shared, "
              f"{r.stack_bytes} B stack, spills {r.spill_stores} B stored / {r.spill_loads} B loaded")
    print(summary(out.ptx))
    if args.ptx:
        print(out.ptx)
    return 0


def _list(args) -> int:
    from grader.checking.exercises import EXERCISES

    for ex in EXERCISES.values():
        from grader.problems import baselines

        base = baselines.name(ex.problem.baseline)
        # the units: a ratio of times, the baseline's over yours (1.25x = 25% faster than it)
        speed = (f"speed vs {base}: {100 * ex.floor:.3g}%..{100 * ex.target:.3g}%, i.e. its time / yours, same GPU and "
                 f"size; speed credit from {ex.floor:g}x, full at {ex.target:g}x"
                 + (" (provisional: not yet calibrated on a GPU)" if ex.calibration and ex.calibration.provisional
                    else "")
                 if ex.target is not None else "correctness only")
        launch = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in ex.launch_defaults.items())
        print(f"{ex.id}  ({ex.points:g} point{'' if ex.points == 1 else 's'}; {speed}{'; tensor cores required' if ex.tensor_cores else ''})")
        print(f"    {ex.title}")
        print(f"    {ex.signature}")
        print(f"    {ex.contract}")
        if launch:
            print(f"    launch parameters (defaults): {launch}")
        print(f"    reference solution: kernels/{ex.reference}.cu")
        print()
    return 0


def _check(args) -> int:
    from grader.checking.check import check
    from grader.checking.exercises import EXERCISES
    from grader.runtime.errors import CourseError

    if args.exercise not in EXERCISES:
        print(f"no exercise '{args.exercise}'; see `python -m grader list`", file=sys.stderr)
        return 2
    try:
        source = open(args.file).read()
    except OSError as e:
        print(f"cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    launch = {}
    for item in args.set:
        key, _, value = item.partition("=")
        if not value.lstrip("-").isdigit():
            print(f"--set expects KEY=INTEGER, not {item!r}", file=sys.stderr)
            return 2
        launch[key.replace("-", "_")] = int(value)
    if args.tile is not None:
        launch["tile"] = args.tile
    try:
        verdict = check(args.exercise, source, backend=args.backend, speed=not args.no_speed,
                        explain=args.explain, **launch)
    except CourseError as e:  # bad launch parameters
        print(str(e), file=sys.stderr)
        return 2
    print(verdict.to_json() if args.json else verdict.text())
    return 0 if verdict.passed else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check this machine's setup and print a verdict")
    p = sub.add_parser("inspect", help="compile a .cu file with NVRTC (no GPU needed) and show "
                                       "registers, shared memory, spills and tensor-core instructions")
    p.add_argument("file")
    p.add_argument("--arch", default="90", choices=("70", "75", "80", "86", "89", "90", "90a"),
                   help="target GPU: 70 Volta (needs NVRTC 12), 75 Turing, 80/86 Ampere, 89 Ada, 90 Hopper, "
                        "90a Hopper with wgmma/setmaxnreg")
    p.add_argument("-D", dest="define", action="append", default=[], type=lambda s: f"-D{s}",
                   help="preprocessor definition, e.g. -D TILE=16")
    p.add_argument("--ptx", action="store_true", help="also print the PTX")
    sub.add_parser("list", help="the exercises, their contracts and thresholds")
    c = sub.add_parser("check", help="grade a kernel file for an exercise")
    c.add_argument("exercise")
    c.add_argument("file")
    c.add_argument("--backend", choices=("auto", "gpu", "emu"), default="auto")
    c.add_argument("--json", action="store_true", help="print the verdict as JSON")
    c.add_argument("--tile", type=int, help="launch parameter of sgemm-tiled")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a launch parameter, e.g. --set block_m=128 --set threads=256")
    c.add_argument("--no-speed", action="store_true", help="skip the speed measurement")
    c.add_argument("--explain", action="store_true",
                   help="the coach's panel in full (where the time goes), with Nsight Compute counters on a GPU")
    args = ap.parse_args(argv)
    return {"doctor": _doctor, "inspect": _inspect, "list": _list, "check": _check}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
