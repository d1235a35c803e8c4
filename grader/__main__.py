"""Command line: `python -m grader doctor | inspect FILE.cu | list | check EXERCISE FILE.cu`.

Exit codes: 0 success, 1 a check failed, 2 usage error (argparse's own convention).
"""
from __future__ import annotations

import argparse
import sys


def _doctor(args) -> int:
    from .doctor import run

    rep = run()
    print(rep.text())
    return 0 if rep.ready else 1


def _inspect(args) -> int:
    from .compile import nvrtc_compile
    from .errors import CompileError
    from .ptx import summary

    try:
        source = open(args.file).read()
    except OSError as e:
        print(f"cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        out = nvrtc_compile(source, arch=args.arch, options=args.define)
    except CompileError as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 1
    for w in out.warnings:
        print(f"{args.file}: {w}")
    print(f"compiled for sm_{args.arch}: kernels {', '.join(out.kernels) or 'none'}")
    for name, r in out.resources.items():
        print(f"  {name}: {r.registers} registers, {r.shared_bytes} B static shared, "
              f"{r.stack_bytes} B stack, spills {r.spill_stores} B stored / {r.spill_loads} B loaded")
    print(summary(out.ptx))
    if args.ptx:
        print(out.ptx)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check this machine's setup and print a verdict")
    p = sub.add_parser("inspect", help="compile a .cu file with NVRTC (no GPU needed) and show "
                                       "registers, shared memory, spills and tensor-core instructions")
    p.add_argument("file")
    p.add_argument("--arch", type=int, default=90, choices=(75, 80, 86, 89, 90))
    p.add_argument("-D", dest="define", action="append", default=[], type=lambda s: f"-D{s}",
                   help="preprocessor definition, e.g. -D TILE=16")
    p.add_argument("--ptx", action="store_true", help="also print the PTX")
    args = ap.parse_args(argv)
    return {"doctor": _doctor, "inspect": _inspect}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
