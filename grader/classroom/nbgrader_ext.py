"""nbgrader pieces the course needs.

CudaClearSolutions: a solution region inside a CUDA source string (`// BEGIN SOLUTION` ...
`// END SOLUTION`) becomes a C++ comment stub, so the student's copy still compiles and the
grader answers "not yet" with a diagnosis; nbgrader's own stub there would be Python
(`raise NotImplementedError()`) inside C++. Python regions keep nbgrader's behaviour.
The text after BEGIN SOLUTION on the marker line (e.g. "(about 6 lines)") is kept in the stub.
"""
from __future__ import annotations

import re

from nbgrader.preprocessors import ClearSolutions

from grader.checking.stubs import MARKER

CUDA_STUB = MARKER + "{note}"  # grader.stubs finds these to say which parts are still empty
_BEGIN = re.compile(r"^(\s*)//\s*BEGIN SOLUTION(.*)$")


class CudaClearSolutions(ClearSolutions):
    def _replace_solution_region(self, cell, language):
        if cell.cell_type != "code" or not any(_BEGIN.match(l) for l in cell.source.split("\n")):
            return super()._replace_solution_region(cell, language)
        out, inside, replaced = [], False, False
        for line in cell.source.split("\n"):
            m = _BEGIN.match(line)
            if m:
                if inside:
                    raise RuntimeError("encountered nested begin solution statements")
                inside = replaced = True
                note = m.group(2).rstrip()
                out.append(m.group(1) + CUDA_STUB.format(note=note))
            elif self.end_solution_delimeter in line and inside:
                inside = False
            elif not inside:
                out.append(line)
        if inside:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(out)
        return replaced
