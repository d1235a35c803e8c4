"""The one check path: notebook, CLI and nbgrader all call `check`.

source -> includes (CUDA and C++ standard headers only) -> compile (NVRTC, here) -> signature ->
one preprocessor (the GPU's and the emulator's macros give the same code: same_source) -> run on
fresh random inputs in a child process (the emulator counts the tensor-core instructions each
launch executes, and whether they reach the output: tensor_work) -> compare to the float64
reference (here) -> time against the library, every timed launch checked (GPU only) -> verdict.
"""
from __future__ import annotations

import os
import re
import secrets

import numpy as np

from grader.checking import evidence, exercises, isolate, lesson_point, same_source
from grader.checking import hints as _hints
from grader.checking.cells import SourceCell, find_cell, relabel
from grader.checking.stubs import MARKER, Stub, unfilled
from grader.checking.verdict import FAIL, PASS, SKIP, Item, Verdict
from grader.problems import baselines
from grader.problems.kinds import Case, FragmentProbe, Transpose, is_poison
from grader.runtime.compile import SUPPORTED_ARCHS, hint_for, nvrtc_compile
from grader.runtime.errors import CompileError, CourseError, KernelFault, KernelTimeout
from grader.runtime.signature import kernel_body, parse_kernels

def _arch_here(backend: str) -> int:
    if backend == "gpu":
        from grader.runtime.device import device_info

        cc = device_info().cc
        return cc if cc in SUPPORTED_ARCHS else 90
    return 90


# Functions a kernel may call that no kernel source defines: the CUDA runtime's own (printf,
# malloc, assert). Any other external function would be resolved only when the module is
# loaded: on a GPU it fails there, on the emulator it could reach the emulator's machinery.
_CUDA_EXTERNALS = {"vprintf", "malloc", "free", "__assertfail", "__assert_fail", "cudaGetParameterBuffer",
                   "cudaLaunchDevice", "cudaGetParameterBufferV2", "cudaLaunchDeviceV2", "cudaDeviceSynchronize",
                   "cudaGetLastError", "cudaPeekAtLastError", "cudaMalloc", "cudaFree"}
_PTX_EXTERN = re.compile(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", re.M)


def _external_item(ptx: str) -> Item | None:
    names = sorted(set(_PTX_EXTERN.findall(ptx)) - _CUDA_EXTERNALS)
    names = [n for n in names if not n.startswith("__nv_")]
    if not names:
        return None
    return Item("same on every backend", FAIL,
                f"your kernel calls {', '.join(names[:5])}, declared but defined nowhere: no GPU can run it "
                "(it would fail to load), and the grader does not run what a GPU cannot",
                kind="backend-detection", hint="Call only functions you define in your source, and CUDA's own.")


def _signature_item(ex: exercises.Exercise, source: str) -> Item:
    kernels = parse_kernels(source)
    if ex.kernel not in kernels:
        found = ", ".join(kernels) or "none"
        return Item("signature", FAIL, f"no kernel named {ex.kernel} (found: {found})", kind="signature",
                    hint=f"The grader launches exactly: {ex.signature}. Keep extern \"C\" so the name "
                         "is not mangled.")
    params = kernels[ex.kernel]
    want = ex.problem.params
    if len(params) != len(want):
        return Item("signature", FAIL, f"{ex.kernel} has {len(params)} parameters; the grader passes "
                                       f"{len(want)}", kind="signature", hint=f"Use exactly: {ex.signature}")
    for pos, (p, (name, ctype)) in enumerate(zip(params, want), 1):
        base = ctype.replace("const ", "").replace("*", "").strip()
        if p.base != base or p.is_pointer != ctype.endswith("*"):
            return Item("signature", FAIL,
                        f"parameter {pos} is `{p.ctype} {p.name}`, but the grader passes `{ctype}` ({name})",
                        kind="signature", hint=f"Use exactly: {ex.signature}")
    return Item("signature", PASS, ex.signature)


def _compile_item(e: CompileError, *, source: str = "", launch: dict | None = None, ex=None,
                  cell: SourceCell | None = None, arch: int | None = None) -> Item:
    for d in e.diagnostics:  # lines as the student sees them numbered
        d.cell = cell
    first = next((d for d in e.diagnostics if d.severity == "error"), None)
    where = {"line": first.line, "source_line": first.source_line} if first else {}
    if first and first.likely_line:
        where["likely_line"] = first.likely_line
    if first and first.line and cell is not None:
        where.update(cell=cell.name, cell_line=cell.line(first.line))
    msg = str(first) if first else e.message
    hint = e.hint
    if first is not None:
        hint = (_static_assert_hint(first, source, launch or {}, ex) or evidence.const_write_hint(first, source)
                or hint_for(first, arch) or e.hint)
    return Item("compile", FAIL, msg, hint=hint, kind="compile-error", where=where)


_STATIC_ASSERT = re.compile(r'static assertion failed(?: with "(.*)")?')
_DEFINE = re.compile(r"^-D(\w+)=(.*)$")


def _static_assert_hint(d, source: str, launch: dict, ex) -> str:
    """A static_assert that fails because of the launch parameters (they reach the kernel as
    -D macros): name the parameter, its macro and the assert's own message."""
    m = _STATIC_ASSERT.search(d.message)
    if not m or not d.line:
        return ""
    said = f': "{m[1]}"' if m[1] else ""
    line = d.shown(d.line)
    # the whole assert, which may span lines
    lines = source.splitlines()[d.line - 1:d.line + 5] if source else [d.source_line or ""]
    text = " ".join(lines)
    text = text[:text.find(";") + 1] if ";" in text else text
    macros = {}  # launch key -> (macro, value)
    if ex is not None:
        for opt in ex.problem.options(launch):
            dm = _DEFINE.match(opt)
            if dm and dm[1].lower() in launch:
                macros[dm[1].lower()] = (dm[1], dm[2])
    defaults = ex.launch_defaults if ex is not None else {}
    changed = [k for k in macros if launch.get(k) != defaults.get(k)]
    named = [k for k in macros if re.search(rf"\b{macros[k][0]}\b", text)]
    keys = [k for k in named if k in changed] or changed or named
    if not keys:
        return (f"The static_assert on line {line} failed{said}. Its condition is false for the "
                "constants it checks: change them (or the assert) so it holds.")
    params = ", ".join(f"{k}={launch[k]}" for k in keys)
    flags = ", ".join(f"-D{macros[k][0]}={macros[k][1]}" for k in keys)
    one = len(keys) == 1
    return (f"Your launch parameter{'' if one else 's'} {params} reach{'es' if one else ''} the kernel as "
            f"{flags}; the static_assert on line {line} says what {'it' if one else 'they'} must "
            f"satisfy{said}. Change the launch parameter{'' if one else 's'} (or the #defines "
            f"{'it has' if one else 'they have'} to agree with).")


MAX_WARNINGS = 5
# Seconds the timed runs may take (kernel and library, each capped at 8 s of timing by
# timing.paired): past this the kernel hangs at the timed size, and the check stops it.
PERF_TIMEOUT = 60.0


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _compiled_item(warnings, cell: SourceCell | None = None) -> Item:
    """compile PASS, listing the compiler's warnings (one may be the very bug)."""
    if not warnings:
        return Item("compile", PASS, "compiled")
    for d in warnings:
        d.cell = cell
    lines = [f"compiled with {_plural(len(warnings), 'warning')}:"]
    for d in warnings[:MAX_WARNINGS]:
        lines.append(f"    {d.where() + ': ' if d.where() else ''}{d.message}")
    if len(warnings) > MAX_WARNINGS:
        lines.append(f"    and {len(warnings) - MAX_WARNINGS} more")
    return Item("compile", PASS, "\n".join(lines),
                where={"warnings": [dict(line=d.line, message=d.message,
                                         **({"cell_line": cell.line(d.line)} if cell and d.line else {}))
                                    for d in warnings]})


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _distinct_labels(cases: list[Case]) -> None:
    """Two random inputs of the same size get told apart: "... (2nd random input)"."""
    seen: dict[str, int] = {}
    for c in cases:
        seen[c.label] = seen.get(c.label, 0) + 1
        if seen[c.label] > 1:
            c.label = f"{c.label} ({_ordinal(seen[c.label])} random input)"


def _is_empty_stub(ex, source: str) -> bool:
    body = kernel_body(source, ex.kernel)
    return body is not None and not body.strip()


def _top_left_block(written: np.ndarray, tile) -> bool:
    """Only a top-left rectangle of whole tiles was written: the pattern of blockIdx.x and
    blockIdx.y swapped (the grid then covers min(rows, cols) tiles each way)."""
    if written.ndim != 2 or not written.any() or written.all():
        return False
    r = int(np.flatnonzero(written.any(axis=1))[-1]) + 1
    c = int(np.flatnonzero(written.any(axis=0))[-1]) + 1
    if not written[:r, :c].all():
        return False
    (H, W), (th, tw) = written.shape, tile
    return (r == H or r % th == 0) and (c == W or c % tw == 0)


# The usual epilogue mistakes, tried in order: (what D equals, what went wrong).
EPILOGUE_MISTAKES = (
    ("A·B", "alpha and beta are not applied"),
    ("alpha·A·B", "the beta·C term is missing"),
    ("alpha·A·B + C", "C is added without beta"),
    ("A·B + beta·C", "alpha is not applied"),
    ("beta·A·B + alpha·C", "alpha and beta are swapped"),
)


def _epilogue_mistake(case: Case, vals: np.ndarray) -> str | None:
    """Which of the usual wrong epilogues D matches, said in words (None: none of them)."""
    A, B, C = (np.asarray(case.args[i], dtype=np.float64) for i in range(3))
    alpha, beta = float(case.args[7]), float(case.args[8])
    ab = A @ B
    candidates = {"A·B": ab, "alpha·A·B": alpha * ab, "alpha·A·B + C": alpha * ab + C,
                  "A·B + beta·C": ab + beta * C, "beta·A·B + alpha·C": beta * ab + alpha * C}
    for name, what in EPILOGUE_MISTAKES:
        cand = candidates[name]
        if np.linalg.norm(vals - cand) <= 1e-3 * (np.linalg.norm(cand) or 1.0):
            return f"D matches {name}: {what}"
    return None


def _tile_map(bad: np.ndarray, tile) -> np.ndarray | None:
    if bad.ndim != 2:
        return None
    th, tw = tile
    H, W = -(-bad.shape[0] // th), -(-bad.shape[1] // tw)
    padded = np.zeros((H * th, W * tw), dtype=float)
    mask = np.zeros_like(padded)
    padded[:bad.shape[0], :bad.shape[1]] = bad
    mask[:bad.shape[0], :bad.shape[1]] = 1
    return padded.reshape(H, th, W, tw).sum(axis=(1, 3)) / mask.reshape(H, th, W, tw).sum(axis=(1, 3))


def _judge_probe(ex, case: Case, pos: int, out: np.ndarray) -> Item | None:
    """fragment-probe in its own terms: held[lane * 16 + i] is what x[i] of `lane` holds, and the
    input M is the index matrix, so every value names an element of M (compared exactly)."""
    from grader.problems.fragments import KINDS

    exp = case.expected[pos]
    ref = exp.ref.astype(np.int64)  # (32 lanes, 16 slots)
    lanes, slots = ref.shape
    rows, cols = KINDS[ex.problem.kind].rows, KINDS[ex.problem.kind].cols
    out = out.reshape(ref.shape)
    label = f"correct: {case.label}"

    def slot(lane, i):
        return f"lane {lane}, x[{i}]"

    def element(v):
        return f"element ({v // cols}, {v % cols})"

    poison = is_poison(out)
    if poison.any():
        lane, i = (int(x) for x in np.argwhere(poison)[0])
        return Item(label, FAIL, f"{int(poison.sum())} of {ref.size} values of held were never written, "
                                 f"first {slot(lane, i)} (held[{lane * slots + i}])",
                    kind="unwritten", where=dict(output="held", lane=lane, slot=i),
                    hint=_hints.hint(ex, "unwritten"))
    got_all = out.astype(np.int64)
    bad = got_all != ref
    if not bad.any():
        return None
    lane, i = (int(x) for x in np.argwhere(bad)[0])
    want, got = int(ref[lane, i]), int(got_all[lane, i])
    said = (f"{got} = {element(got)}" if 0 <= got < rows * cols
            else f"{got}, which is no element of M (its values are 0..{rows * cols - 1})")
    n_lanes = int(bad.any(axis=1).sum())
    msg = (f"{int(bad.sum())} of {ref.size} values of held are wrong (in {n_lanes} of {lanes} lanes); "
           f"first: {slot(lane, i)} should hold {element(want)} (value {want}); you wrote {said}")
    if np.array_equal(got_all.ravel().reshape(slots, lanes).T, ref):
        msg += (" — the values are right but laid out as held[i * 32 + lane]; the contract is "
                "held[lane * 16 + i]")
    return Item(label, FAIL, msg, kind="wrong-result", where=dict(output="held", lane=lane, slot=i),
                hint=_hints.hint(ex, "wrong-exact"))


def _judge_output(ex, case: Case, pos: int, out: np.ndarray, source: str = "") -> Item | None:
    """None when the output is right; else a failed Item with its diagnosis."""
    if isinstance(ex.problem, FragmentProbe):
        return _judge_probe(ex, case, pos, out)
    exp = case.expected[pos]
    name = ex.problem.params[pos][0]
    out = out.reshape(exp.ref.shape)
    poison = is_poison(out)
    vals = out.astype(np.float64)
    err = np.abs(vals - exp.ref)
    bad = ~(err <= exp.bound)  # NaN compares False: NaN is bad
    if not bad.any():
        return None
    n, total = int(bad.sum()), bad.size
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    tile = exp.tile if len(exp.tile) == out.ndim else (1,) * out.ndim
    where = dict(output=name, index=first, tile=tuple(f // t for f, t in zip(first, tile)))
    emap = _tile_map(bad, exp.tile)
    loc = f"{name}{list(first)} (tile {where['tile']})"
    label = f"correct: {case.label}"
    t = exp.tile[0]

    def failed(message, kind, hint_kind=None, hint="", **extra):
        return Item(label, FAIL, message, kind=kind, where=dict(where, **extra), error_map=emap,
                    tile=exp.tile, hint=hint or _hints.hint(ex, hint_kind or kind, t))

    n_poison = int(poison.sum())
    if n_poison:
        fp = tuple(int(i) for i in np.argwhere(poison)[0])
        hint = _hints.hint(ex, "unwritten", t)
        if _hints.family(ex) not in ("im2col", "probe") and _top_left_block(~poison, exp.tile):
            # the evidence points at the grid first: whole tiles, a top-left rectangle
            hint = _hints.SWAPPED_BLOCKS.format(contract=ex.contract.split(". ")[1] if ". " in ex.contract
                                                else ex.contract) + " " + hint
        return failed(f"{n_poison} of {total} elements of {name} were never written, first {name}{list(fp)}",
                      "unwritten", hint=hint, index=fp)
    nonfinite = ~np.isfinite(vals)
    if nonfinite.any():
        fn = tuple(int(i) for i in np.argwhere(nonfinite)[0])
        hint = _hints.hint(ex, "nan", t)
        shared = _hints.shared_nan(source)  # the first suspect where tiles go through shared memory
        if shared:
            hint = f"{shared}Otherwise: {hint[0].lower()}{hint[1:]}"
        return failed(f"{int(nonfinite.sum())} elements of {name} are NaN or Inf, first {name}{list(fn)}",
                      "nan", hint=hint, index=fn)
    expected_v, got = exp.ref[first], vals[first]
    detail = f"{n} of {total} elements of {name} are wrong; first {loc}: expected {expected_v:.6g}, got {got:.6g}"
    if exp.exact:
        if isinstance(ex.problem, Transpose) and evidence.tiles_not_transposed(case, vals):
            return failed(detail + " — each 32x32 tile of out is in the right place, but its elements are "
                          "not transposed", "wrong-result",
                          hint="The tile lands where it belongs, but inside it rows stay rows: after the "
                               "__syncthreads(), read the shared tile with its two indices swapped (the element "
                               "a thread writes to out is a column of what was loaded), and write out row by "
                               "row so the store stays coalesced.")
        ld = evidence.transpose_wrong_ld(case, vals) if isinstance(ex.problem, Transpose) else ""
        if ld:
            return failed(f"{detail} — {ld}", "wrong-result", hint=_hints.hint(
                ex, "read-out-of-bounds" if "reads" in ld else "write-out-of-bounds", t))
        return failed(detail, "wrong-result", "wrong-exact")
    whole = np.all(np.isfinite(vals)) and np.all(vals == np.round(vals))
    if whole and not np.all(exp.ref == np.round(exp.ref)):
        return failed(detail + " — every value is a whole number", "wrong-result",
                      hint="The sum is kept in an integer: an `int` accumulator (or an `(int)` cast) drops "
                           "the fraction of every product it adds. Declare the accumulator as float.")
    epilogue = getattr(ex.problem, "epilogue", False)
    if epilogue:  # the scalars are part of the input: show them
        detail += f" (alpha = {float(case.args[7]):.6g}, beta = {float(case.args[8]):.6g})"
    # Errors only in the last, partial row or column of tiles: an edge bug.
    if out.ndim == 2:
        th, tw = exp.tile
        full_r, full_c = (out.shape[0] // th) * th, (out.shape[1] // tw) * tw
        rows, cols = np.nonzero(bad)
        if (full_r < out.shape[0] or full_c < out.shape[1]) and np.all((rows >= full_r) | (cols >= full_c)):
            return failed(detail + " — all in the partial tiles at the edge", "edge")
    if epilogue:
        mistake = _epilogue_mistake(case, vals)
        if mistake:
            return failed(f"{detail} — {mistake}", "wrong-result",
                          hint="D = alpha·A·B + beta·C: after the K loop load C's tile into a second "
                               "accumulator fragment c and set acc.x[i] = alpha * acc.x[i] + beta * c.x[i].")
    ref_norm = np.linalg.norm(exp.ref) or 1.0
    rel = float(np.linalg.norm(vals - exp.ref) / ref_norm)
    if n > 0.05 * total and rel < 5e-2:
        return failed(detail + f" — small errors everywhere (relative error {rel:.1e})", "precision")
    return failed(detail, "wrong-result")


def _judge_case(ex, case: Case, res: dict, source: str = "") -> Item:
    names = [p[0] for p in ex.problem.params]
    for pos, w in res["bands"].items():
        if w["after"]:
            return Item(f"correct: {case.label}", FAIL,
                        f"wrote past the end of {names[pos]}: {w['after']} elements changed after it "
                        f"(the first {w['first_after']} elements beyond the end)", kind="out-of-bounds",
                        where=dict(output=names[pos]),
                        hint=_hints.hint(ex, "write-out-of-bounds", case.expected[pos].tile[0]
                                         if pos in case.expected else 16))
        return Item(f"correct: {case.label}", FAIL,
                    f"wrote before the start of {names[pos]} ({w['before']} elements)", kind="out-of-bounds",
                    where=dict(output=names[pos]), hint="A negative index: check the arithmetic of your offsets.")
    if res["changed_inputs"]:
        return Item(f"correct: {case.label}", FAIL,
                    f"your kernel wrote into its input {names[res['changed_inputs'][0]]}",
                    kind="wrote-input", hint="Inputs are read-only: write only to the output.")
    if res["nondeterministic"]:
        return Item(f"correct: {case.label}", FAIL,
                    "the result changed between two runs on the same inputs", kind="race",
                    hint="A race: a missing __syncthreads() between writing shared memory and reading "
                         "it (or before overwriting it), or two threads writing the same element.")
    for pos in case.outputs:
        item = _judge_output(ex, case, pos, res["outputs"][pos], source)
        if item is not None:
            return item
    return Item(f"correct: {case.label}", PASS, ex.problem.passed)


def _output_names(ex) -> set[str]:
    return {n for n, t in ex.problem.params if t.endswith("*") and not t.startswith("const")}


def _fault_item(e: CourseError, step_label: str, ex=None, cell: SourceCell | None = None) -> Item:
    if isinstance(e, KernelTimeout):
        return Item(step_label, FAIL, e.message, hint=e.hint, kind="timeout")
    if isinstance(e, KernelFault):
        w = e.where
        where = {k: v for k, v in vars(w).items() if v not in (None, {})}
        hints = {
            "illegal-address": "An index out of range: check every load and store against the sizes. "
                               "backend='emu' names the exact thread, array and index.",
            "out-of-bounds": "Guard the access with a bounds check, or fix the index arithmetic.",
            "divergent-barrier": "Every thread of the block must reach the same __syncthreads(): do not put "
                                 "it inside an if that only some threads take, or after an early return.",
            "race": "Add __syncthreads() between writing shared memory and reading it, and before "
                    "overwriting it in the next iteration.",
            "partial-warp-collective": "WMMA and shuffle calls need all 32 threads of the warp.",
            "shared-out-of-bounds": "A shared-memory index past the array's size: check the tile "
                                    "dimensions against blockDim.",
            "uninitialized-shared": "Shared memory is read before any thread wrote it: load the tile "
                                    "(and __syncthreads()) before using it.",
            "assert": "Your own assert() failed: the message names the condition and line.",
            "crash": "A memory access far outside every array (a wrong pointer or a huge index): "
                     "print the index you compute for one thread, or check the offsets by hand.",
            "misaligned-address": "A vector load/store (float4, 16-byte copy) needs an address that "
                                  "is a multiple of its size: check the offsets and leading dimensions.",
            "launch-resources": "Use fewer threads per block or fewer registers/shared memory per block.",
        }
        hint = e.hint or hints.get(e.kind, "")
        if e.kind == "out-of-bounds" and ex is not None:  # in the exercise's own terms
            hint = _hints.out_of_bounds(ex, w.argument, _output_names(ex)) or hint
        if e.kind == "uninitialized-shared" and ex is not None and _hints.family(ex) == "transpose":
            hint = _hints.TRANSPOSE_UNWRITTEN + " " + hint
        if cell is not None and w.line:
            where.update(cell=cell.name, cell_line=cell.line(w.line))
        return Item(step_label, FAIL, relabel(e.message, cell), hint=hint, kind=e.kind, where=where)
    if isinstance(e, CompileError):
        return _compile_item(e, ex=ex, cell=cell)
    return Item(step_label, FAIL, relabel(e.message, cell), hint=e.hint, kind=type(e).__name__)


def _launch_item(ex, unknown: list[str], given: dict) -> Item:
    """An unknown launch parameter: list the ones this exercise takes."""
    bad = ", ".join(f"{k}={given[k]!r}" for k in unknown)
    one = len(unknown) == 1
    if ex.launch_defaults:
        takes = ", ".join(f"{k}={v}" for k, v in ex.launch_defaults.items())
        msg = (f"{ex.id} has no launch parameter{'' if one else 's'} {', '.join(unknown)} ({bad}); it "
               f"takes {', '.join(ex.launch_defaults)} (defaults: {takes})")
    else:
        msg = (f"{ex.id} takes no launch parameters (its launch is fixed by the contract); got {bad}")
    macros = ", ".join(k.upper() for k in unknown)
    hint = ("Pass only the parameters above." if ex.launch_defaults else
            f"Call check(\"{ex.id}\", source) with no launch parameters.")
    hint += (f" A constant of your own ({macros}) is a #define in your kernel source: set it there, "
             f"e.g. #define {unknown[0].upper()} {given[unknown[0]]!r}.")
    return Item("launch", FAIL, msg, hint=hint, kind="launch-parameter",
                where=dict(unknown=unknown, accepted=list(ex.launch_defaults)))


def speed_graded() -> bool:
    """False under CPU-only grading (TC_CPU_ONLY=1, course/nbgrader_config.py): speed earns
    nothing and counts for nothing, so an exercise is worth its correctness points only."""
    return os.environ.get("TC_CPU_ONLY", "0") in ("", "0")


NO_SPEED = "not graded in this class (CPU-only grading: speed earns no points and counts for none)"


def handed_in() -> bool:
    """Grading a handed-in notebook (the trusted grader sets TC_HANDIN): hints speak of the
    hand-in, not of re-running a cell the student is not looking at."""
    return os.environ.get("TC_HANDIN") == "1"


def _unfilled(ex, v: Verdict, stubs: list[Stub], cell: SourceCell | None) -> Verdict:
    """One message for the parts of the stub still empty, instead of all their symptoms:
    compiler warnings held back, no per-case diagnoses, no other hints."""
    parts = [f"{s.part} at line {cell.line(s.line) if cell else s.line}" for s in stubs]
    if cell is not None:
        parts[-1] += f" of {cell.name}"
    one = len(stubs) == 1
    msg = (f"the part{'' if one else 's'} marked YOUR CODE HERE ({', '.join(parts)}) "
           f"{'is' if one else 'are'} still empty")
    if handed_in():  # a feedback page: the student reads it away from the running notebook
        hint = (f"Write {'it' if one else 'them'} (the marker says about how many lines), try "
                f"{'it' if one else 'them'} with the notebook's check cell, then hand the notebook in again. "
                f"If you did write {'it' if one else 'them'}, delete the `{MARKER}` line{'' if one else 's'} "
                "before handing in.")
    else:
        hint = (f"Write {'it' if one else 'them'} (the marker says about how many lines), then run that cell "
                "again; compiler warnings and the other diagnoses wait until then. If you did write "
                f"{'it' if one else 'them'}, delete the `{MARKER}` line{'' if one else 's'} and run the cell "
                "again.")
    kept = []
    for i in v.items:
        if i.name == "compile" and i.status == PASS:
            kept.append(Item("compile", PASS, "compiled", where=i.where))  # warnings held back
        elif i.name == "signature":
            kept.append(i)
    where = dict(stubs=[dict(part=s.part, line=s.line, note=s.note,
                             **({"cell_line": cell.line(s.line)} if cell else {})) for s in stubs])
    kept.append(Item("kernel", FAIL, msg, hint=hint, kind="unfilled-stub", where=where))
    v.items, v.speed = kept, None
    return _score(ex, v)


def check(exercise_id: str, source: str, *, backend: str = "auto", case_timeout: float | None = None,
          speed: bool = True, explain: bool = False, **launch) -> Verdict:
    """Grade `source` for `exercise_id`. `launch` holds the launch parameters the exercise
    takes (e.g. tile=32, or block_m/block_n/block_k/threads/shared_mem). `case_timeout`
    (seconds) overrides how long one run of the kernel may take before it counts as hung.
    A correct kernel of a speed-graded exercise gets the coach's panel, "where the time goes"
    (grader.coach); `explain=True` adds its details and, on a GPU where Nsight Compute can read
    the counters, the measured part (one profiled launch at the timed size)."""
    from grader.runtime.backend import pick
    from grader.runtime.device import has_gpu

    ex = exercises.get(exercise_id)
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":  # nobody reads it; the trusted pass grades
        v = Verdict(ex.id, backend, max_score=_worth(ex))
        v.items.append(Item("check", SKIP, "not run while autograding; the graded cell below shows the "
                            "course's verdict"))
        return v
    cell = find_cell(source)  # inside a notebook: the cell the kernel was written in
    unknown = sorted(set(launch) - set(ex.launch_defaults))
    if unknown:  # said as a verdict, like every other mistake
        v = Verdict(ex.id, backend, max_score=_worth(ex))
        v.items.append(_launch_item(ex, unknown, launch))
        return v
    launch = {**ex.launch_defaults, **launch}
    try:
        chosen = pick(backend)
    except CourseError as e:
        v = Verdict(ex.id, backend, max_score=_worth(ex))
        v.items.append(Item("backend", FAIL, e.message, hint=e.hint, kind="environment"))
        return v
    v = Verdict(ex.id, chosen, max_score=_worth(ex))
    if chosen == "gpu":  # a GPU (or TC_ARCH) below what the exercise needs: said, never a crash
        from grader.runtime.device import needs

        why = needs(ex.min_arch)
        if why:
            v.items.append(Item("arch", SKIP, f"{ex.id} {why}: it cannot run here (0 points on this GPU; "
                                "backend='emu' checks its correctness on the CPU)", kind="environment"))
            return _score(ex, v)

    # 1. compile here (no GPU needed): errors on the student's own line, PTX for honesty.
    arch = max(_arch_here(chosen), ex.min_arch)
    # before any compiler reads the source: an included file may be anything (a reference
    # kernel of the repository, /dev/zero) and may declare the kernel the signature check wants
    included = same_source.include_check(source, ex.problem.options(launch), arch)
    if included is not None:
        v.items.append(included)
        return _score(ex, v)
    try:
        compiled = nvrtc_compile(source, arch=arch, options=ex.problem.options(launch), resources=False)
        v.items.append(_compiled_item(compiled.warnings, cell))
    except CompileError as e:
        v.items.append(_compile_item(e, source=source, launch=launch, ex=ex, cell=cell, arch=arch))
        return v
    sig = _signature_item(ex, source)
    v.items.append(sig)
    if sig.status == FAIL:
        return v
    redefined = evidence.redefined_item(ex, source, launch)
    if redefined is not None:
        v.items.append(redefined)
        return _score(ex, v)
    same = _external_item(compiled.ptx) or same_source.check_item(source, ex.problem.options(launch), arch)
    if same is not None:
        v.items.append(same)
        return _score(ex, v)
    if _is_empty_stub(ex, source):  # said once, not once per case
        hint = ("Write it, try it with the notebook's check cell, then hand the notebook in again." if handed_in()
                else "If you did write it, run that cell again: the check sees the source as it was when its "
                     "cell last ran.")
        v.items.append(Item("kernel", FAIL, "Your kernel body is still empty — write the kernel in "
                            f"{cell.name if cell else 'the cell above'}", kind="empty-kernel", hint=hint))
        return v
    # Parts of the stub still empty: one message instead of all their symptoms. A kernel that
    # passes anyway (its author kept a marker) still passes, so it runs unless it cannot.
    stubs = unfilled(source)
    # the coach's compile to SASS runs beside the emulator (grader.coach.panel.start)
    coach_build = _coach_start(ex, source, launch, arch) if speed and not stubs else None

    # 2. run on fresh random inputs in a child process; judge here.
    if chosen == "emu":
        from grader import emu

        if not hasattr(emu, "compile_module"):
            v.items.append(Item("correctness", FAIL, "no GPU here and the CPU emulator is not available: "
                                "kernels cannot run on this machine", kind="environment"))
            return _score(ex, v)
    sizes = ex.gpu_sizes if chosen == "gpu" else ex.cpu_sizes
    # a second random input of the first size, unless the input never changes (fragment-probe)
    dims_list = list(sizes) + ([] if ex.problem.fixed_input else [sizes[0]])
    seeds = [secrets.randbits(32) for _ in dims_list]  # unpredictable, never shown
    cases = [ex.problem.make(d, np.random.default_rng(s), launch) for d, s in zip(dims_list, seeds)]
    _distinct_labels(cases)
    do_perf = speed and speed_graded() and chosen == "gpu" and ex.perf_size is not None
    perf_seed = secrets.randbits(32)
    # which output elements of the timed launches are checked: unpredictable, never shown
    perf_samples = _perf_samples(ex, launch, perf_seed) if do_perf else []
    # Reference kernels take about a second per case on the emulator; 20 s means "hung".
    case_timeout = case_timeout or 20.0
    job = dict(exercise=ex.id, source=source, backend=chosen, options=ex.problem.options(launch),
               kernel=ex.kernel, cases=[c.job() for c in cases], race_check=ex.race_check,
               launch=launch, perf=do_perf, perf_seed=perf_seed, perf_samples=perf_samples,
               case_timeout=case_timeout, tc_probe=ex.tensor_cores)
    result = isolate.run(job, compile_timeout=120 if chosen == "gpu" else 240,
                         case_timeout=case_timeout, perf_timeout=PERF_TIMEOUT)
    v.stdout = result["stdout"]
    for case, res in zip(cases, result["cases"]):
        v.items.append(_judge_case(ex, case, res, source))
    if result["error"] is not None:
        step = result.get("error_step", 0)
        label = "run" if not isinstance(step, int) else f"correct: {cases[min(step, len(cases) - 1)].label}"
        if not result["compiled"]:
            label = "load"
        item = _fault_item(result["error"], label, ex, cell)
        if isinstance(step, int) and item.kind == "out-of-bounds" and item.where.get("argument") == "A":
            case = cases[min(step, len(cases) - 1)]
            item.hint = _hints.swapped_grid(ex, item.where.get("block"), case.args) or item.hint
        v.items.append(item)
    if ex.tensor_cores and chosen == "gpu" and isinstance(result["error"], (KernelTimeout, KernelFault)):
        # a kernel the GPU stopped or that faulted fails already: counting its work would run it
        # again (on the emulator, under ncu on the GPU) and, for a hang, wait for it again
        v.items.append(Item("tensor cores", SKIP, "not counted: the kernel did not finish its runs on the GPU"))
    elif ex.tensor_cores:  # what the launches executed, never what the PTX mentions
        v.items.append(_tensor_item(ex, source, launch, chosen, dims_list, result, case_timeout, arch,
                                    [c.label for c in cases]))
    if stubs and any(i.status == FAIL for i in v.items):
        return _unfilled(ex, v, stubs, cell)
    if chosen == "gpu" and all(i.status == PASS for i in v.items):
        v.items.extend(_strict_items(ex, source, launch, cell))

    # 3. speed, only for a correct kernel on a GPU; on the emulator, what the lesson is about.
    if ex.target is not None:
        correct = all(i.status == PASS for i in v.items)
        lesson = None
        if chosen == "emu" and correct and speed:
            lesson = _lesson_item(ex, job, cases, launch)
            if lesson is not None:
                v.items.append(lesson)
        if not speed_graded():
            v.items.append(Item("speed", SKIP, NO_SPEED))
        elif chosen != "gpu":
            why = "needs a GPU" + ("" if has_gpu() else " (none here)")
            if lesson is not None and lesson.kind == "lesson-point":
                why += f"; and on the emulator it is {lesson_point.NOT_YET} (see {lesson_point.NAME})"
            v.items.append(Item("speed", SKIP, why))
        elif not speed:
            v.items.append(Item("speed", SKIP, "not measured (speed=False)"))
        elif not correct:
            v.items.append(Item("speed", SKIP, "not timed: make it correct first"))
        elif result["perf"]:
            timed = _timed_output_item(ex, launch, perf_seed, perf_samples, result["perf"])
            v.items.append(timed)
            if timed.status == PASS:
                v.items.append(_speed_item(ex, result["perf"], v))
        if coach_build is not None and correct:
            v.coach = _coach_panel(ex, source, launch, arch, coach_build, lesson, job, cases, chosen, explain)
    return _score(ex, v)


def _coach_start(ex, source: str, launch: dict, arch: int):
    """The coach's background compile for a speed-graded exercise (None: no panel for this one)."""
    if ex.target is None or os.environ.get("TC_COACH", "1") == "0":
        return None
    from grader.coach import panel

    return panel.start(source, ex.kernel, ex.problem.options(launch), arch)


def _coach_panel(ex, source, launch, arch, built, lesson, job, cases, chosen, explain):
    """The panel "where the time goes" (grader.coach), from the memory traffic the emulator
    observed (the lesson item's run on the CPU; its own run at the CPU size on a GPU)."""
    from grader.coach import panel
    from grader.emu.traffic import MemoryTraffic

    idx = lesson_point.observed_case(ex)
    traffic, dims, why = None, None, None
    if idx is None:
        why = f"{ex.id} names no case for the emulator to observe"
    else:
        dims = (list(ex.cpu_sizes) + [ex.cpu_sizes[0]])[idx]
        if lesson is not None and lesson.where.get("traffic"):
            traffic = MemoryTraffic.from_dict(lesson.where["traffic"])
        elif chosen == "gpu":  # the same CPU-size run the emulator makes on a CPU, in its own process
            case = ex.problem.make(dims, np.random.default_rng(secrets.randbits(32)), launch, reference=False)
            tjob = dict(job, backend="emu", cases=[], race_check=False, perf=False, traffic=case.job(),
                        case_timeout=60.0)
            res = isolate.run(tjob, compile_timeout=240, case_timeout=60.0, perf_timeout=60.0)
            if res.get("traffic"):
                traffic = MemoryTraffic.from_dict(res["traffic"])
            else:
                err = res.get("error")
                err = (getattr(err, "message", None) or str(err or "no traffic came back")).splitlines()[0][:200]
                why = f"the emulator's run at {' '.join(f'{k}={v}' for k, v in dims.items())} failed: {err}"
        else:
            why = "the emulator's run recorded no traffic" + ("" if lesson is not None else " (no lesson run)")
    block = cases[-1].block if cases else (1, 1, 1)
    threads = int(np.prod(block))
    try:
        return panel.build(exercise=ex.id, source=source, kernel=ex.kernel, options=ex.problem.options(launch),
                           arch=arch, threads=threads, smem_dynamic=cases[-1].shared_mem if cases else 0,
                           problem=ex.problem, traffic=traffic, traffic_dims=dims, perf_dims=ex.perf_size,
                           built=built, measure=explain, launch=launch, detail=explain,
                           reference=ex.reference, traffic_why=why)
    except Exception as e:  # the coach explains; it never costs a verdict
        from grader.coach.panel import Panel

        return Panel(ex.id, arch, missing=[f"the coach failed: {type(e).__name__}: {e}"])


STRICT = "strict checks"


def _strict_items(ex, source: str, launch: dict, cell) -> list[Item]:
    """A GPU grade is never laxer than the emulator's: a kernel a GPU ran right may still read out of
    bounds, race, read shared memory nobody wrote or break a WMMA alignment rule, and the GPU's result
    was then luck. So a kernel that passed on the GPU also runs on the emulator at its CPU sizes, and
    any fault there fails the grade with the emulator's precise message (TC_GPU_STRICT=0: off)."""
    if os.environ.get("TC_GPU_STRICT", "1") == "0":
        return []
    import shutil

    from grader import emu

    if not hasattr(emu, "compile_module") or shutil.which(os.environ.get("TC_EMU_CXX", "g++")) is None:
        return [Item(STRICT, SKIP, "the emulator's strict checks need g++ on this machine (not found)")]
    sizes = list(ex.cpu_sizes)
    cases = [ex.problem.make(d, np.random.default_rng(secrets.randbits(32)), launch) for d in sizes]
    job = dict(exercise=ex.id, source=source, backend="emu", options=ex.problem.options(launch),
               kernel=ex.kernel, cases=[c.job() for c in cases], race_check=ex.race_check, launch=launch,
               perf=False, case_timeout=20.0)
    result = isolate.run(job, compile_timeout=240, case_timeout=20.0)
    err = result["error"]
    if err is not None and (not result["compiled"] or not isinstance(err, KernelFault)):
        # what the emulator cannot run (a form it does not support, a build it refuses, too slow on a
        # CPU) says nothing against the kernel: the GPU's grade stands
        return [Item(STRICT, SKIP, f"not run on the emulator: {err.message.splitlines()[0][:300]}")]
    items = []
    for case, res in zip(cases, result["cases"]):
        item = _judge_case(ex, case, res, source)
        if item.status == FAIL:
            item.name = f"{STRICT}: {case.label}"
            items.append(item)
    if result["error"] is not None:
        step = result.get("error_step", 0)
        label = f"{STRICT}: " + (cases[min(step, len(cases) - 1)].label if isinstance(step, int) else "run")
        items.append(_fault_item(result["error"], label, ex, cell))
    for i in items:
        i.message = ("right on the GPU, but the emulator's stricter run (CPU sizes) finds: " + i.message)
    return items or [Item(STRICT, PASS, "the emulator's stricter run at the CPU sizes found no fault "
                                        "(bounds, races, unwritten shared memory, alignment) and the same results")]


def _lesson_item(ex, job: dict, cases: list[Case], launch: dict) -> Item | None:
    """The memory traffic of a correct kernel on the emulator, judged against the lesson
    (grader.checking.lesson_point); None when it cannot be observed."""
    from grader.emu.traffic import MemoryTraffic

    idx = lesson_point.observed_case(ex)
    if idx is None:
        return None
    tjob = dict(job, cases=[], race_check=False, perf=False, traffic=cases[idx].job(), case_timeout=60.0)
    res = isolate.run(tjob, compile_timeout=240, case_timeout=60.0, perf_timeout=60.0)
    if not res.get("traffic"):
        return None
    dims = (list(ex.cpu_sizes) + [ex.cpu_sizes[0]])[idx]
    return lesson_point.item(ex, MemoryTraffic.from_dict(res["traffic"]), dims, launch)


def _tensor_item(ex, source, launch, chosen, dims_list, result, case_timeout, arch, labels) -> Item:
    """Tensor-core work counted per launch by the emulator at the CPU sizes, on every backend
    (on a GPU the emulator runs them too), and by ncu's counter on a GPU where it can be read."""
    from grader.checking import tensor_work

    if chosen == "emu":
        runs, dims_run = result["cases"], dims_list
    else:
        dims_run = list(ex.cpu_sizes)
        labels = [_dims_label(d) for d in dims_run]
        cases = [ex.problem.make(d, np.random.default_rng(secrets.randbits(32)), launch, reference=False)
                 for d in dims_run]
        # the GPU's arch, so __CUDA_ARCH__ reads the same as in the GPU's compile
        job = dict(exercise=ex.id, source=source, backend="emu",
                   options=[*ex.problem.options(launch), f"-arch=compute_{arch}"],
                   kernel=ex.kernel, cases=[c.job() for c in cases], race_check=False, launch=launch,
                   perf=False, case_timeout=case_timeout, tc_probe=True)
        runs = isolate.run(job, compile_timeout=240, case_timeout=case_timeout)["cases"]
    counted = [(label, d, tensor_work.from_result(r.get("tensor_ops")), r if "tc_unchanged" in r else None)
               for label, d, r in zip(labels, dims_run, runs) if "tensor_ops" in r]
    emu_item = tensor_work.item(ex, counted)
    if chosen != "gpu":
        return emu_item
    gpu = tensor_work.gpu_item(ex, source, launch)  # None where ncu cannot read the counters
    if gpu is None:
        if emu_item.status == PASS:
            emu_item.message += " (the GPU's own counter could not be read here: ncu is not available)"
        return emu_item
    if emu_item.status == FAIL and counted:  # counted and too few: the emulator's count stands
        return emu_item
    if gpu.status == FAIL or not counted:
        return gpu
    emu_item.message += "; " + gpu.message
    return emu_item


def _dims_label(d: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in d.items())


TIMED_SAMPLES = 512  # output elements checked in every timed launch (isolate.LAUNCH_SAMPLES)


def _perf_samples(ex, launch, seed) -> list[int]:
    case = ex.problem.make(ex.perf_size, np.random.default_rng(seed), launch, reference=False)
    n = case.args[case.outputs[0]].size
    rng = np.random.default_rng(secrets.randbits(64))
    return sorted(int(i) for i in rng.choice(n, size=min(TIMED_SAMPLES, n), replace=False))


def _timed_output_item(ex, launch, seed, flat, perf: dict) -> Item:
    """Every launch that was timed must have computed the answer too, at the timed size: for
    each, sampled elements of what it wrote (into an output poisoned just before it, from an
    input scaled by that launch's own power of two) against a float64 reference of those
    elements, scaled alike; and no element left unwritten or non-finite, and the inputs as the
    grader left them. (The timed size is too large for a full reference on the CPU.)"""
    dims = ", ".join(f"{k}={v}" for k, v in ex.perf_size.items())
    label = f"correct: timed size ({dims})"
    case = ex.problem.make(ex.perf_size, np.random.default_rng(seed), launch, reference=False)
    flat = np.asarray(flat, dtype=np.int64)
    ref, bound = ex.problem.sample(case, flat)
    bound = np.broadcast_to(bound, ref.shape)
    shape = case.args[case.outputs[0]].shape
    hint = ("Your kernel is right at the small sizes but not in every launch at the size it is timed at: "
            "every timed launch is checked, each into a freshly poisoned output from fresh inputs, so "
            "each must do the whole computation.")
    n = int(perf.get("launches", 0))
    total = f"{n} timed launches"
    if n == 0:
        return Item(label, FAIL, "no timed launch was checked", kind="wrong-when-timed", hint=hint)
    if perf.get("changed_inputs"):
        return Item(label, FAIL, f"the timed launches changed input argument(s) {perf['changed_inputs']}: a "
                    "kernel only reads its inputs", kind="changed-input", hint=hint)
    samples = np.asarray(perf["launch_samples"], dtype=np.float64).reshape(n, -1)
    for i in range(n):
        s = float(perf["launch_scales"][i])
        if perf["launch_unwritten"][i]:
            return Item(label, FAIL, f"launch {i + 1} of {total}: {perf['launch_unwritten'][i]} of {perf['size']} "
                        "output elements were never written", kind="unwritten", hint=hint)
        if perf["launch_nonfinite"][i]:
            return Item(label, FAIL, f"launch {i + 1} of {total}: {perf['launch_nonfinite'][i]} output elements "
                        "are NaN or infinite", kind="nan", hint=hint)
        got = samples[i, :len(flat)]
        want = s * ref
        bad = ~(np.abs(got - want) <= abs(s) * bound)  # NaN counts as bad
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            where = np.unravel_index(flat[k], shape)
            return Item(label, FAIL, f"launch {i + 1} of {total} is wrong: {int(bad.sum())} of {len(flat)} checked "
                        f"elements; first at {tuple(int(x) for x in where)}: got {got[k]:.6g}, expected "
                        f"{want[k]:.6g}", kind="wrong-when-timed", hint=hint)
    ratio = perf.get("ratio") or perf["baseline_ms"] / perf["kernel_ms"]
    if ratio > ex.ceiling:
        base = baselines.name(ex.problem.baseline)
        return Item(label, FAIL, f"{100 * ratio:.0f}% of the speed of {base} is more than this GPU can do "
                    f"(above {100 * ex.ceiling:.0f}% is refused as impossible: it is past what the fastest "
                    "library reaches here)",
                    kind="impossible-speed",
                    hint="A correct kernel cannot be this fast: the timed launches must do the whole computation.")
    return Item(label, PASS, f"every one of the {total} was checked: {len(flat)} sampled elements each match "
                "the float64 reference, nothing left unwritten")


def _speed_item(ex, perf: dict, v: Verdict) -> Item:
    # median of per-round ratios when the child timed both sides in alternating rounds
    ratio = perf.get("ratio") or perf["baseline_ms"] / perf["kernel_ms"]
    frac = min(max((ratio - ex.floor) / (ex.target - ex.floor), 0.0), 1.0)
    base = baselines.name(ex.problem.baseline)
    dims = ex.perf_size
    flops = ex.problem.flops(dims)
    if flops:
        rate = (f"{flops / (perf['kernel_ms'] * 1e-3) / 1e9:.0f} GFLOPS vs "
                f"{flops / (perf['baseline_ms'] * 1e-3) / 1e9:.0f} for {base}")
    else:
        nbytes = ex.problem.bytes(dims)
        rate = (f"{nbytes / (perf['kernel_ms'] * 1e-3) / 1e9:.0f} GB/s vs "
                f"{nbytes / (perf['baseline_ms'] * 1e-3) / 1e9:.0f} for {base}")
    v.speed = dict(ratio=ratio, floor=ex.floor, target=ex.target, kernel_ms=perf["kernel_ms"],
                   baseline_ms=perf["baseline_ms"], fraction=frac)
    msg = (f"{rate}: {100 * ratio:.1f}% of the speed of {base} (floor {100 * ex.floor:.0f}%, target "
           f"{100 * ex.target:.0f}%) -> {frac * ex.points_speed:.2g}/{ex.points_speed:g} points")
    status = PASS if ratio >= ex.target else FAIL
    return Item("speed", status, msg, kind="" if status == PASS else "slow", hint=ex.slow_hint)


def _worth(ex) -> float:
    return ex.points if speed_graded() else ex.points_correct


def _score(ex, v: Verdict) -> Verdict:
    correctness = [i for i in v.items if i.name not in ("speed", lesson_point.NAME)
                   and not (i.name == STRICT and i.status == SKIP)]  # a strict run that could not run
    correct = bool(correctness) and all(i.status == PASS for i in correctness) and any(
        i.name.startswith("correct") for i in correctness)
    score = ex.points_correct if correct else 0.0
    if correct and v.speed:
        score += v.speed["fraction"] * ex.points_speed
    v.score = score
    return v


def grade(exercise_id: str, source: str, points: float | None = None, **kwargs) -> float:
    """For notebook and nbgrader test cells: show the verdict and return the points as a plain
    float, scaled to `points` (the cell's points) and capped.

    Under `nbgrader autograde` this copy, which runs beside the student's code, grades nothing:
    the course's trusted grader (grader.checking.trusted) replaces this cell's output."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        print(f"{exercise_id}: graded outside this notebook by the course's trusted grader.")
        return 0.0
    ex = exercises.get(exercise_id)
    if points is not None and not speed_graded():  # the cell is worth its correctness share
        points = points * ex.points_correct / ex.points
    v = check(exercise_id, source, **kwargs)
    try:
        from IPython.display import display

        display(v)
    except ImportError:  # pragma: no cover
        print(v.text())
    return v.points(points)
