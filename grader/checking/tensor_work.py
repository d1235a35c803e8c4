"""Did the kernel run on tensor cores? Counted where it runs, never read from its text.

A `wmma::mma_sync` in a branch no launch takes, or an `asm` string that only names `mma.sync`,
compiles to PTX that *mentions* tensor-core instructions; the grade must rest on what a launch
*executed*. The CPU emulator counts every warp-wide matrix instruction (wmma::mma_sync, PTX
mma.sync) per launch; on a GPU, Nsight Compute's `smsp__inst_executed_pipe_tensor_op_*` counters
do the same where ncu can read them (grader.runtime.ncu). A launch passes when its instructions
multiply-add at least M*N*K times: at least M*N*K / (m*n*k) instructions of shape m x n x k.
"""
from __future__ import annotations

import numpy as np

from grader.checking.verdict import FAIL, PASS, Item

HINT = ("This exercise must run on tensor cores: every launch has to execute the matrix instructions "
        "its size needs (wmma::mma_sync on fragments, or mma.sync), not scalar multiply-adds. A "
        "mma_sync in a branch no thread takes, or an asm string that only names an instruction, "
        "executes nothing.")


def required_macs(ex, dims: dict) -> int:
    """Multiply-adds the exercise's product needs at `dims` (M*N*K in GEMM terms)."""
    return int(round(ex.problem.flops(dims) / 2))


def _ops_text(ops: dict) -> str:
    if not ops:
        return "no tensor-core instruction"
    return ", ".join(f"{c} x m{m}n{n}k{k}" for (m, n, k), c in sorted(ops.items()))


def _num(x: int) -> str:
    return f"{x:,}".replace(",", " ")


# what an exercise that asks for one instruction shape (Exercise.tensor_shapes) says of another
SHAPE_HINTS = {
    (16, 8, 16): ("This exercise is about the PTX instruction itself: issue mma.sync.aligned.m16n8k16 from inline "
                  "asm on fragments you load with ldmatrix (notebook 10). WMMA's m16n16k16 fragments compile to "
                  "the same hardware but are notebook 06's lesson, so they do not count here."),
    (16, 8, 32): ("This exercise is about FP8's own instruction: issue mma.sync.aligned.m16n8k32.row.col.f32.e4m3."
                  "e4m3.f32 on the e4m3 codes as they are, four to a 32-bit register (notebook 11). Decoded to fp16, "
                  "the same products run on the fp16 tensor cores (m16n8k16) at half FP8's rate: right, but not "
                  "what is graded here."),
}


def shape_hint(ex) -> str:
    return next((SHAPE_HINTS[s] for s in ex.tensor_shapes if s in SHAPE_HINTS), HINT)


USED_HINT = ("Every output element must come from the tensor cores' products: compute with the "
             "fragments you load from A and B and store the accumulator, not a result computed otherwise.")


def probe_key(ex) -> int:
    """A fresh secret key for the probe runs of one check (never 0), or 0 where the exercise's
    problem cannot compute the probe's reference (its probe then doubles every product)."""
    import secrets

    from grader.problems.kinds import Problem

    if not ex.tensor_cores or type(ex.problem).probe_reference is Problem.probe_reference:
        return 0
    return secrets.randbits(64) | 1


def probe_result(ex, case, res: dict, key: int) -> dict | None:
    """What the probe run of one launch says, for item(): {"tc_unfollowed": elements that are not
    the sum of their flipped products, "tc_outputs": elements judged} from a keyed run (the
    reference computed here, in the grading process, with the same key), the child's own count of
    unchanged elements from a doubling run, or None where no probe ran."""
    from grader.problems import numerics

    if "tc_probe_outputs" in res:
        expected = ex.problem.probe_reference(case, key) if key else None
        if not expected:  # a keyed run whose reference cannot be computed here proves nothing
            return dict(tc_unfollowed=sum(o.size for o in res["tc_probe_outputs"].values()),
                        tc_outputs=sum(o.size for o in res["tc_probe_outputs"].values()))
        bad = total = 0
        for pos, (ref, bound) in expected.items():
            out = np.asarray(res["tc_probe_outputs"][pos]).reshape(np.shape(ref))
            # only the elements the plain run got right say anything here: a wrong one (stored at another
            # element, say) fails the correctness check already, and is no sign of CUDA-core work
            judged = np.ones(np.shape(ref), bool)
            plain, exp = res.get("outputs", {}).get(pos), (case.expected or {}).get(pos)
            if plain is not None and exp is not None:
                got = np.asarray(plain, np.float64).reshape(np.shape(ref))
                judged = np.isfinite(got) & (np.abs(got - exp.ref) <= exp.bound)
                if judged.sum() * 2 < judged.size:
                    # mostly wrong: the few elements right by chance (5 of 32768 for mma-gemm with B's
                    # fragments untransposed) are sums of the wrong products, so they do not follow the
                    # flips either; the correctness check fails the kernel, and the probe says nothing
                    judged[...] = False
            bad += numerics.compare(out[judged], ref[judged], np.broadcast_to(bound, np.shape(ref))[judged]).n_bad
            total += out.size
        return dict(tc_unfollowed=bad, tc_outputs=total, tc_probe_ops=from_result(res.get("tc_probe_ops")))
    return res if "tc_unchanged" in res else None


def item(ex, counted: list[tuple], *, where: str = "on the CPU emulator") -> Item:
    """One verdict line from the launches counted: (case label, dims, {(m, n, k): count}, probe),
    where probe is what the same launch's probe run says (probe_result; None where none ran).
    The keyed probe (grader.problems.signed_products) flips the sign of some of every matrix
    instruction's products, chosen by a secret key from the two operands' bits: every output
    element must then be the sum of its flipped products, which only products of the kernel's
    own inputs computed on the tensor cores give (a CUDA-core answer scaled by what an mma_sync
    on constant fragments gives changes, but not so). Where the grader cannot compute that
    reference, every product is doubled instead and an element that comes out the same never
    depended on them. Every judged launch is counted and probed, so no launch is the one "being
    watched". No launch counted is a failure: the grade needs the evidence, not its absence."""
    if not counted:
        return Item("tensor cores", FAIL, f"no launch of your kernel could be counted {where}, so its "
                    "tensor-core work is unproven", kind="no-tensor-cores", hint=HINT)
    lines = []
    shapes = ex.tensor_shapes
    for label, dims, ops, *_ in counted:
        need = required_macs(ex, dims)
        other = {s: c for s, c in ops.items() if shapes and s not in shapes}
        ops = {s: c for s, c in ops.items() if s not in other}
        macs = sum(m * n * k * c for (m, n, k), c in ops.items())
        if other and macs < need:
            asked = " or ".join(f"m{m}n{n}k{k}" for m, n, k in shapes)
            return Item("tensor cores", FAIL, f"counted {where}: {label}: one launch executed "
                        f"{_ops_text(other)}, and this exercise asks for {asked} (PTX mma.sync): "
                        f"{_num(macs)} of the {_num(need)} multiply-adds came from it",
                        kind="wrong-instruction", hint=shape_hint(ex),
                        where=dict(case=label, executed=macs, needed=need,
                                   ops={f"m{m}n{n}k{k}": c for (m, n, k), c in other.items()}))
        said = (f"{label}: one launch executed {_ops_text(ops)} = {_num(macs)} multiply-adds on tensor "
                f"cores; the size needs M*N*K = {_num(need)}")
        if macs < need:
            return Item("tensor cores", FAIL, f"counted {where}: {said}", kind="no-tensor-cores", hint=HINT,
                        where=dict(case=label, executed=macs, needed=need,
                                   ops={f"m{m}n{n}k{k}": c for (m, n, k), c in ops.items()}))
        lines.append(said)
    probed = [(c[0], c[3]) for c in counted if len(c) > 3 and c[3] is not None]
    needs = {c[0]: required_macs(ex, c[1]) for c in counted}
    for label, probe in probed:
        # a keyed run's instructions are executed and counted by the emulator runner's parent, out of the
        # kernel's reach: that count must hold too (the plain run's is the kernel's own process's)
        ops = {s: c for s, c in probe.get("tc_probe_ops", {}).items() if not shapes or s in shapes}
        macs = sum(m * n * k * c for (m, n, k), c in ops.items())
        if "tc_probe_ops" in probe and macs < needs[label]:
            return Item("tensor cores", FAIL, f"counted {where}: {label}: the probe run (the same launch, its "
                        f"matrix instructions executed by the emulator's runner) executed {_ops_text(ops)} = "
                        f"{_num(macs)} multiply-adds; the size needs M*N*K = {_num(needs[label])}",
                        kind="no-tensor-cores", hint=HINT,
                        where=dict(case=label, executed=macs, needed=needs[label]))
        if probe.get("tc_unfollowed"):
            n, total = probe["tc_unfollowed"], probe["tc_outputs"]
            return Item("tensor cores", FAIL, f"counted {where}: {label}: {n} of {total} output elements "
                        "do not depend on the tensor cores' products as they must (a run in which every matrix "
                        "instruction flipped the signs of some of its products, chosen from their operands, did "
                        "not give the sum of the products so flipped): the tensor-core work does not reach them",
                        kind="tensor-cores-unused", hint=USED_HINT, where=dict(case=label, unfollowed=n))
        if probe.get("tc_unchanged"):
            n, total = probe["tc_unchanged"], probe["tc_outputs"]
            return Item("tensor cores", FAIL, f"counted {where}: {label}: {n} of {total} output elements "
                        "do not depend on the tensor cores' products (a run in which every matrix instruction "
                        "doubled its A operand left them unchanged): the tensor-core work does not reach them",
                        kind="tensor-cores-unused", hint=USED_HINT, where=dict(case=label, unchanged=n))
    used = ("; every output element of every launch depends on them" if len(probed) == len(counted) else
            "; every output element depends on them" if probed else "")
    return Item("tensor cores", PASS, f"counted {where}: " + "; ".join(lines) + used)


def from_result(ops) -> dict:
    """The child's [[m, n, k, count], ...] as {(m, n, k): count}."""
    return {(int(m), int(n), int(k)): int(c) for m, n, k, c in (ops or [])}


def gpu_item(ex, source: str, launch: dict) -> Item | None:
    """The GPU's own count (Nsight Compute) for one launch at EVERY size the GPU grades (so a
    kernel that keeps tensor cores for one size gains nothing), or None where ncu cannot read it
    (no ncu, no permission to the counters, or the launch failed there)."""
    import numpy as np

    from grader.runtime import ncu

    if ncu.tool() is None:
        return None
    key = "dmma" if getattr(ex.problem, "accumulate", "") == "fp64" else "hmma"
    lines = []
    for dims in ex.gpu_sizes:
        case = ex.problem.make(dims, np.random.default_rng(), launch, reference=False)
        got = ncu.count(source, ex.problem.options(launch), ex.kernel, case.job())
        if got is None or key not in got:  # this counter could not be read here
            return None
        label = " ".join(f"{k}={v}" for k, v in dims.items())
        # at least this many instructions of the largest shape the pipe has
        least = -(-required_macs(ex, dims) // ncu.MACS_PER_INSTRUCTION[key])
        n = int(got[key])
        said = (f"{label}: one launch executed {_num(n)} {key.upper()} instructions; the size needs at least "
                f"{_num(least)}")
        if n < least:
            return Item("tensor cores", FAIL, f"counted on the GPU by ncu ({ncu.METRICS[key]}): {said}",
                        kind="no-tensor-cores", hint=HINT,
                        where=dict(case=label, executed=n, needed=least, counter=ncu.METRICS[key]))
        lines.append(said)
    return Item("tensor cores", PASS, f"counted on the GPU by ncu ({ncu.METRICS[key]}): " + "; ".join(lines))
