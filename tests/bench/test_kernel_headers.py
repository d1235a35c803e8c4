"""A kernel's header says what was measured, as its records say: a kernel that a dated record in
kernels/RESULTS-*.md times must not still say "Measured: not yet", and the record its header
cites must name it (four headers said "not yet" for days after kernels/RESULTS-mma.md timed them)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
RECORDS = {p.name: p.read_text() for p in sorted(KERNELS.glob("RESULTS*.md"))}


def _head(cu: Path) -> str:
    text = cu.read_text()
    return text[:text.find("*/") + 2] if text.lstrip().startswith("/*") else ""


def _timed_in(name: str) -> list[str]:
    """The records with a table row whose first cell names this kernel (alone or with a note), or
    a section heading that names it (the records of one kernel's run)."""
    row = re.compile(rf"^\|\s*{re.escape(name)}(\s*\(.*?\))?(\[[^\]]*\])?\s*\|", re.M)
    heading = re.compile(rf"^#+ .*\b{re.escape(name)}\b", re.M)
    return [f for f, text in RECORDS.items() if row.search(text) or heading.search(text)]


NOT_YET = re.compile(r"Measured:\s*not yet|not yet measured|Measured:\s*pending", re.I)


@pytest.mark.parametrize("cu", sorted(KERNELS.glob("*.cu")), ids=lambda p: p.stem)
def test_a_timed_kernel_header_does_not_say_unmeasured(cu):
    head, records = _head(cu), _timed_in(cu.stem)
    if records:
        assert not NOT_YET.search(head), f"{cu.name}: timed in {records}, but its header says it is not measured yet"
    if "Measured (" in head:  # a header that cites a record cites one that times it
        cited = re.findall(r"(RESULTS-\w+\.md)", head[head.find("Measured ("):])
        assert cited and set(cited) & set(records), f"{cu.name}: cites {cited}, timed in {records}"


def test_the_row_finder_sees_the_records():
    """The test above must not pass by finding no rows: the kernels the mma record times are found."""
    assert "RESULTS-mma.md" in _timed_in("hgemm_wgmma") and "RESULTS-mma.md" in _timed_in("mma_gemm_tuned")
    assert _timed_in("no_such_kernel") == []
