"""Judging one run: the outputs of a case against the float64 reference, said in the exercise's
own terms (unwritten, NaN, an edge, a swapped epilogue, a fragment's layout), and a fault the
run raised (out of bounds, a race, a hang) with what to try."""
from __future__ import annotations

import numpy as np

from grader.checking import evidence
from grader.checking import hints as _hints
from grader.checking.cells import SourceCell, relabel
from grader.checking.steps.compile import compile_item
from grader.checking.verdict import FAIL, PASS, Item
from grader.problems.fp8 import Fp8Gemm
from grader.problems.kinds import Case, FragmentProbe, Transpose, is_poison
from grader.runtime.errors import CompileError, CourseError, KernelFault, KernelTimeout


def top_left_block(written: np.ndarray, tile) -> bool:
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


def epilogue_mistake(case: Case, vals: np.ndarray) -> str | None:
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


def grid_sentence(contract: str) -> str:
    """The sentence of an exercise's contract that says how the grid runs (the first that names it)."""
    sentences = contract.split(". ")
    return next((x for x in sentences if "grid" in x), sentences[1] if len(sentences) > 1 else contract)


def tile_map(bad: np.ndarray, tile) -> np.ndarray | None:
    if bad.ndim != 2:
        return None
    th, tw = tile
    H, W = -(-bad.shape[0] // th), -(-bad.shape[1] // tw)
    padded = np.zeros((H * th, W * tw), dtype=float)
    mask = np.zeros_like(padded)
    padded[:bad.shape[0], :bad.shape[1]] = bad
    mask[:bad.shape[0], :bad.shape[1]] = 1
    return padded.reshape(H, th, W, tw).sum(axis=(1, 3)) / mask.reshape(H, th, W, tw).sum(axis=(1, 3))


def judge_probe(ex, case: Case, pos: int, out: np.ndarray) -> Item | None:
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


def judge_output(ex, case: Case, pos: int, out: np.ndarray, source: str = "") -> Item | None:
    """None when the output is right; else a failed Item with its diagnosis."""
    if isinstance(ex.problem, FragmentProbe):
        return judge_probe(ex, case, pos, out)
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
    emap = tile_map(bad, exp.tile)
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
        if _hints.family(ex) not in ("im2col", "probe") and top_left_block(~poison, exp.tile):
            # the evidence points at the grid first: whole tiles, a top-left rectangle
            hint = _hints.SWAPPED_BLOCKS.format(contract=grid_sentence(ex.contract)) + " " + hint
        return failed(f"{n_poison} of {total} elements of {name} were never written, first {name}{list(fp)}",
                      "unwritten", hint=hint, index=fp)
    nonfinite = ~np.isfinite(vals)
    if nonfinite.any():
        fn = tuple(int(i) for i in np.argwhere(nonfinite)[0])
        hint = _hints.hint(ex, "nan", t)
        shared = _hints.shared_nan(source)  # the first suspect where tiles go through shared memory
        if shared:
            # a capital that only starts the sentence is lowered; "NaN", "WMMA" stay as they are
            word = hint.split(None, 1)[0]
            first = hint[0] if any(ch.isupper() for ch in word[1:]) else hint[0].lower()
            hint = f"{shared}Otherwise: {first}{hint[1:]}"
        if isinstance(ex.problem, Fp8Gemm):
            hint = evidence.fp8_nonfinite(case, vals, source) or hint
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
    # Errors only in the last, partial row or column of tiles: an edge bug.
    edge_only = False
    if out.ndim == 2:
        th, tw = exp.tile
        full_r, full_c = (out.shape[0] // th) * th, (out.shape[1] // tw) * tw
        rows, cols = np.nonzero(bad)
        edge_only = bool((full_r < out.shape[0] or full_c < out.shape[1])
                         and np.all((rows >= full_r) | (cols >= full_c)))
    if isinstance(ex.problem, Fp8Gemm) and not edge_only:  # what the wrong output equals: a scale, part of K ...
        said = evidence.fp8_wrong_sum(case, vals)
        if said:
            return failed(f"{detail} — {said}", "wrong-result")
    # from 2^23 on every float is whole: huge values say nothing of an integer accumulator
    whole = np.all(np.isfinite(vals)) and np.all(vals == np.round(vals)) and np.any(np.abs(vals) < 2.0**23)
    if whole and not np.all(exp.ref == np.round(exp.ref)):
        return failed(detail + " — every value is a whole number", "wrong-result",
                      hint="The sum is kept in an integer: an `int` accumulator (or an `(int)` cast) drops "
                           "the fraction of every product it adds. Declare the accumulator as float.")
    epilogue = getattr(ex.problem, "epilogue", False)
    if epilogue:  # the scalars are part of the input: show them
        detail += f" (alpha = {float(case.args[7]):.6g}, beta = {float(case.args[8]):.6g})"
    if edge_only:
        return failed(detail + " — all in the partial tiles at the edge", "edge")
    if epilogue:
        mistake = epilogue_mistake(case, vals)
        if mistake:
            return failed(f"{detail} — {mistake}", "wrong-result",
                          hint="D = alpha·A·B + beta·C: after the K loop load C's tile into a second "
                               "accumulator fragment c and set acc.x[i] = alpha * acc.x[i] + beta * c.x[i].")
    ref_norm = np.linalg.norm(exp.ref) or 1.0
    rel = float(np.linalg.norm(vals - exp.ref) / ref_norm)
    if n > 0.05 * total and rel < 5e-2:
        return failed(detail + f" — small errors everywhere (relative error {rel:.1e})", "precision")
    return failed(detail, "wrong-result")


def judge_case(ex, case: Case, res: dict, source: str = "") -> Item:
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
        # Elements never written come first: a grid that misses tiles (its axes swapped) also reads past
        # its inputs, so its written values change between runs, and "a race" would send the student to
        # __syncthreads() instead of the launch
        for pos in res["nondeterministic"]:
            item = judge_output(ex, case, pos, res["outputs"][pos], source)
            if item is not None and item.kind == "unwritten":
                return item
        return Item(f"correct: {case.label}", FAIL,
                    "the result changed between two runs on the same inputs", kind="race",
                    hint="A race: a missing __syncthreads() between writing shared memory and reading "
                         "it (or before overwriting it), or two threads writing the same element.")
    for pos in case.outputs:
        item = judge_output(ex, case, pos, res["outputs"][pos], source)
        if item is not None:
            return item
    return Item(f"correct: {case.label}", PASS, ex.problem.passed)


def output_names(ex) -> set[str]:
    return {n for n, t in ex.problem.params if t.endswith("*") and not t.startswith("const")}


def fault_item(e: CourseError, step_label: str, ex=None, cell: SourceCell | None = None) -> Item:
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
            "misaligned-address": "A vector load/store (float4, 16-byte copy, four fp8 codes as one unsigned) "
                                  "needs an address that is a multiple of its size: check the offsets and leading "
                                  "dimensions; where a row length is no multiple of that size, load element by "
                                  "element.",
            "launch-resources": "Use fewer threads per block or fewer registers/shared memory per block.",
        }
        hint = e.hint or hints.get(e.kind, "")
        if e.kind == "out-of-bounds" and ex is not None:  # in the exercise's own terms
            hint = _hints.out_of_bounds(ex, w.argument, output_names(ex)) or hint
        if e.kind == "uninitialized-shared" and ex is not None and _hints.family(ex) == "transpose":
            hint = _hints.TRANSPOSE_UNWRITTEN + " " + hint
        if cell is not None and w.line:
            where.update(cell=cell.name, cell_line=cell.line(w.line))
        return Item(step_label, FAIL, relabel(e.message, cell), hint=hint, kind=e.kind, where=where)
    if isinstance(e, CompileError):
        return compile_item(e, ex=ex, cell=cell)
    return Item(step_label, FAIL, relabel(e.message, cell), hint=e.hint, kind=type(e).__name__)
