"""A block that needs more registers than an SM has: a GPU refuses the launch ("too many
resources requested for launch"), and the emulator, which has no register file, used to run it and
grade it correct. The held-out coach fixture sgemm_tiled_row_in_registers (74 registers x 1024
threads) scored 1/2 on the emulator, 0 on a GPU; now the emulator refuses it too, in the GPU's words."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader import check
from grader.runtime import kernels
from grader.runtime.launch import Limits, block_registers

VARIANTS = Path(__file__).resolve().parents[1] / "coach_kernels" / "variants.json"


def _variant(name: str) -> str:
    v = json.loads(VARIANTS.read_text())[name]
    src = kernels.source(v["base"])
    for old, new in v["replace"]:
        assert old in src
        src = src.replace(old, new)
    return src


def test_block_registers_follow_the_allocation_unit():
    assert block_registers(64, 1024) == 65536 <= Limits().regs_per_sm  # fits exactly
    assert block_registers(65, 1024) == 32 * 2304 > Limits().regs_per_sm  # 65 x 32 = 2080, a warp gets 2304
    assert block_registers(255, 256) == 65536  # the most a thread gets, at 256 threads, always fits
    assert block_registers(74, 1000) == 32 * 2560  # a partial warp is a whole warp


def test_the_emulator_refuses_what_a_gpu_refuses_and_says_how_to_fix_it():
    src = _variant("sgemm_tiled_row_in_registers.cu")
    r = check("sgemm-tiled", src, backend="emu")
    text = str(r)
    assert r.score == 0 and "launch-resources" in {i.kind for i in r.items}, text
    assert "more registers than an SM has" in text and "x 1024 threads" in text, text
    assert "__launch_bounds__(1024)" in text, text
    # the fix the hint names: ptxas keeps to 64 registers, and the kernel is graded correct again
    bounded = src.replace('extern "C" __global__ void', 'extern "C" __global__ void __launch_bounds__(1024)', 1)
    assert bounded != src
    fixed = check("sgemm-tiled", bounded, backend="emu")
    assert "more registers than an SM has" not in str(fixed) and "correct: M=33" in str(fixed)
    correct = [i.status for i in fixed.items if i.name.startswith("correct")]
    assert correct and set(correct) == {"pass"}, str(fixed)


@pytest.mark.gpu
def test_on_the_gpu_the_same_kernel_is_refused_the_same_way():
    r = check("sgemm-tiled", _variant("sgemm_tiled_row_in_registers.cu"), backend="gpu")
    assert r.score == 0 and "resources" in str(r), str(r)
