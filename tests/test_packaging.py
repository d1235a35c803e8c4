"""pyproject.toml and environment.yml must install the same packages, both CUDA stacks."""
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SELF = "tensorcore-course"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower()


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _expand(names, extras: dict) -> set[str]:
    """The requirements of `names` (extras), with `tensorcore-course[x]` self-references expanded."""
    out = set()
    for name in names:
        for req in extras[name]:
            m = re.fullmatch(rf"{SELF}\[([\w,]+)\]", _norm(req))
            out |= _expand(m[1].split(","), extras) if m else {_norm(req)}
    return out


def _env_pip() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1, "environment.yml should have one pip: section"
    return {_norm(r) for r in pip_lists[0]}


def test_environment_yml_matches_pyproject():
    """environment.yml as written = base + lab + test + the CUDA 13 stack (no-GPU default)."""
    project = _project()
    extras = project["optional-dependencies"]
    wanted = {_norm(r) for r in project["dependencies"]} | _expand(["lab", "test", "cuda13"], extras)
    have = _env_pip()
    assert have == wanted, (f"only in pyproject: {sorted(wanted - have)}; "
                            f"only in environment.yml: {sorted(have - wanted)}")


def test_environment_yml_documents_the_cuda12_stack():
    """Its comment block for CUDA 12 names exactly the cuda12 + gpu12 extras' packages that the
    file does not already hold, and the CUDA 13 lines it says to replace are the cuda13 extra."""
    extras = _project()["optional-dependencies"]
    text = (ROOT / "environment.yml").read_text()
    block = text.split("#   cuda12:", 1)[1].split("\n# (", 1)[0]
    documented = {_norm(m) for m in re.findall(r"^#\s+- (\S+)", block, re.M)}
    cuda12 = _expand(["cuda12", "gpu12"], extras)
    assert documented == cuda12 - _env_pip(), (documented, cuda12)
    cuda13_lines = text.split("# CUDA 13 stack\n", 1)[1].split("      #", 1)[0]
    assert {_norm(m) for m in re.findall(r"- (\S+)", cuda13_lines)} == _expand(["cuda13"], extras)


def test_stacks_do_not_overlap():
    """One Python holds one CuPy: the two stacks name different CuPy builds, and the base holds none."""
    project = _project()
    extras = project["optional-dependencies"]
    assert not any("cupy" in r for r in project["dependencies"])
    c12, c13 = _expand(["cuda12"], extras), _expand(["cuda13"], extras)
    assert {r for r in c12 if r.startswith("cupy")} == {"cupy-cuda12x==14.2.0"}
    assert {r for r in c13 if r.startswith("cupy")} == {"cupy-cuda13x==14.2.0"}
