"""Google Colab: one step from a student notebook opened from GitHub to a working course.

    python -m grader.classroom.colab readme    rewrite README.md's "Open in Colab" links (HANDOUT_REPOSITORY,
                                               set in pyproject.toml [tool.tensorcore-course])

Every student notebook starts with CELL, as `colab_cell()` (grader/classroom/notebooks.py and the
release's ColabSetupCell put it there):
outside Colab it does nothing; in Colab it clones the course's HANDOUT repository (once) and
calls `setup`, which installs the grader and the CUDA stack this runtime's driver needs into the
running kernel, turns on Colab's widget manager, and says what it did. Run again, it only checks
(idempotent).

Never the course's own repository: an instructor's fork holds solutions/ and the hidden tests.
The cell clones `handout-repository` (a repository holding what `python -m
grader.classroom.handout` wrote, marked by its HANDOUT file), and removes a clone that has no
HANDOUT marker or has a solutions/ folder, saying so. Releasing refuses while the setting names
the course's own repository or a copy that is not a marked handout (`release_problem`).

Colab's free GPU is a T4 (sm_75) whose driver runs CUDA 12.x (FACTS.md), so a GPU runtime
gets the CUDA 12 stack; a CPU runtime gets the compile-only CUDA 13 set and the emulator, as
any machine without a GPU (grader/runtime/stack.py decides, the same rule as ./course.sh).
cuBLAS is not installed: Colab's image has it (and its PyTorch pins its own copy).

Standard library only at import: it runs before anything is installed.
"""
from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from grader.runtime import stack as stacks

PLACEHOLDER = "YOUR-ORG"
_ROOT = Path(__file__).resolve().parents[2]


def configured(key: str, default: str, pyproject: Path = _ROOT / "pyproject.toml") -> str:
    """A setting under [tool.tensorcore-course] in pyproject.toml (read as text: this module runs
    before anything is installed, on 3.10 too)."""
    try:
        text = pyproject.read_text()
    except OSError:
        return default
    section = re.search(r"^\[tool\.tensorcore-course\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    m = re.search(rf'^\s*{re.escape(key)}\s*=\s*"([^"]+)"', section.group(1), re.M) if section else None
    return m.group(1) if m else default


def configured_repository(pyproject: Path = _ROOT / "pyproject.toml") -> str:
    """The course's own repository (the instructor's: it holds solutions/)."""
    return configured("repository", f"https://github.com/{PLACEHOLDER}/tensorcore-course", pyproject)


def configured_handout(pyproject: Path = _ROOT / "pyproject.toml") -> str:
    """The repository students get: what the handout command wrote, marked HANDOUT."""
    return configured("handout-repository", f"https://github.com/{PLACEHOLDER}/tensorcore-course-handout", pyproject)


# The course's own repository, and the handout repository the Colab cell clones and the README's
# "Open in Colab" links open. Set in ONE place, pyproject.toml [tool.tensorcore-course].
REPOSITORY = configured_repository()
HANDOUT_REPOSITORY = configured_handout()
MARKER = "HANDOUT"  # the handout command's mark at the top of its copy (grader/classroom/handout.py)
BRANCH = "main"
HOME = "/content/tensorcore-course"

CELL = f'''# Colab: set up the course in this runtime (the grader and the CUDA stack for its GPU; about a
# minute the first time, then it only checks). Outside Colab this cell does nothing.
import os, subprocess, sys
if "google.colab" in sys.modules:
    home = os.environ.get("TC_COURSE_HOME", "{HOME}")
    url = os.environ.get("TC_COURSE_GIT", "{HANDOUT_REPOSITORY}")
    if not os.path.isdir(home) and "{PLACEHOLDER}" in url:
        raise SystemExit("This notebook does not name its course repository yet: ask your instructor "
                         "(pyproject.toml, [tool.tensorcore-course] handout-repository, then regenerate).")
    if not os.path.isdir(home):
        subprocess.run(["git", "clone", "-q", "--depth=1", "--branch", "{BRANCH}", url, home], check=True)
        if not os.path.isfile(os.path.join(home, "{MARKER}")) or os.path.exists(os.path.join(home, "solutions")):
            import shutil
            shutil.rmtree(home)  # an instructor's repository: its answer key stays out of this runtime
            raise SystemExit(f"{{url}} is not the course's student handout: ask your instructor to publish one "
                             "(course/README.md, 'Colab without the answer key').")
    if home not in sys.path:
        sys.path.insert(0, home)
    from grader.classroom.colab import setup
    setup(home)'''


COLAB_CELL_ID = "colab-setup"


def colab_cell():
    """The first cell of every student notebook and release: CELL, which Colab shows as a titled
    form with the code folded."""
    import nbformat  # not at import: this module runs in Colab before anything is installed

    source = '#@title Colab: set up the course (run me first) { display-mode: "form" }\n' + CELL
    cell = nbformat.v4.new_code_cell(source, metadata={"cellView": "form"})
    cell.id = COLAB_CELL_ID  # fixed, so regenerating gives the same file
    return cell

def colab_url(notebook: str) -> str:
    """The "Open in Colab" address of a student notebook (path relative to the repository)."""
    return (f"https://colab.research.google.com/github/{HANDOUT_REPOSITORY.split('github.com/', 1)[1]}"
            f"/blob/{BRANCH}/{notebook}")


def same_repository(a: str, b: str) -> bool:
    """Do two git addresses name one repository (https or ssh, with or without .git, any case)?"""
    def norm(u: str) -> str:
        u = u.strip().rstrip("/").lower()
        u = re.sub(r"\.git$", "", u)
        u = re.sub(r"^(https?://|ssh://|git://)", "", u)
        u = re.sub(r"^[^@/]+@", "", u)  # git@github.com:org/x -> github.com:org/x
        return u.replace(":", "/", 1) if "/" in u and ":" in u.split("/", 1)[0] else u
    return norm(a) == norm(b)


def release_problem(handout_check=None) -> str | None:
    """Why releasing must stop because the Colab cell would clone a repository holding the answer
    key, or None. Offline: the setting itself, whether it is the course's own repository, and the
    marked handout copy (`handout_check(url)`, grader.classroom.handout.check_published)."""
    if PLACEHOLDER in HANDOUT_REPOSITORY:
        return None  # the cell clones nothing and says so; ColabSetupCell warns
    if same_repository(HANDOUT_REPOSITORY, REPOSITORY):
        return (f"the Colab setup cell would clone {HANDOUT_REPOSITORY}, the course's own repository, which holds "
                "solutions/ and the hidden tests. Set handout-repository in pyproject.toml [tool.tensorcore-course] "
                "to the repository you publish the handout in (course/README.md, 'Colab without the answer key')")
    return handout_check(HANDOUT_REPOSITORY) if handout_check else None


def _pins(home: Path, extras: list[str]) -> list[str]:
    """The requirements of `extras` in home/pyproject.toml, self-references expanded."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: Colab runs 3.11+; elsewhere nothing is checked
        return []
    table = tomllib.loads((home / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    out: list[str] = []
    for name in extras:
        for req in table.get(name, []):
            m = re.fullmatch(r"tensorcore-course\[([\w,]+)\]", req.replace(" ", ""))
            out += _pins(home, m[1].split(",")) if m else [req]
    return out


def _satisfied(req: str) -> bool:
    """Is requirement `req` installed: `name==version` exactly, anything else by name?"""
    from importlib import metadata

    name, _, version = req.partition("==")
    name = re.split(r"[\[<>=!~; ]", name, 1)[0]
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return not version or have == version.split(";")[0].strip()


def ready(home: Path, stack: stacks.Stack) -> bool:
    """The course and exactly this stack are installed, at the pinned versions."""
    from importlib import metadata

    try:
        metadata.distribution("tensorcore-course")
    except metadata.PackageNotFoundError:
        return False
    pins = _pins(home, [stack.name])
    return stacks.installed() == [stack.name] and bool(pins) and all(_satisfied(r) for r in pins)


def _pip(*args: str) -> None:
    r = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def _gxx_major(cxx: str) -> int:
    try:
        return int(subprocess.run([cxx, "-dumpversion"], capture_output=True, text=True).stdout.split(".")[0])
    except (OSError, ValueError):
        return 0


def emulator_compiler(install: bool) -> str:
    """Make sure the CPU emulator has g++ 12 or newer (for _Float16; Colab's image has g++ 11):
    use g++-12 when present, else apt-get it when `install` (root on Colab). Returns one line."""
    if _gxx_major(os.environ.get("TC_EMU_CXX", "g++")) >= 12:
        return "emulator: g++ found"
    if not shutil.which("g++-12") and install and shutil.which("apt-get"):
        subprocess.run(["apt-get", "-qq", "install", "-y", "g++-12"], capture_output=True)
    if shutil.which("g++-12"):
        os.environ["TC_EMU_CXX"] = "g++-12"  # grader/emu/compiler.py reads it; child processes inherit it
        return "emulator: using g++-12"
    return "emulator: needs g++ 12 or newer (not found): kernels compile, but cannot run without a GPU"


def setup(home: str = HOME, *, out=print, install_compiler: bool | None = None) -> dict:
    """Install the course and the CUDA stack for this runtime into the running Python; idempotent.
    Returns what it found and did (also printed, one line each)."""
    t0 = time.time()
    root = Path(home)
    driver = stacks.query_driver()
    choice = stacks.choose(driver, os.environ.get("TC_STACK") or None)
    gpu = f"GPU {driver.gpus[0].split(' (UUID')[0].split(': ', 1)[-1]}, driver for CUDA {driver.cuda_text()}" \
        if driver.present else "no GPU (Runtime > Change runtime type > T4 GPU gives you one)"
    lines = [f"{gpu} -> CUDA {choice.stack.cuda} stack ({choice.reason})"]
    before = {m: getattr(sys.modules[m], "__version__", None) for m in ("numpy", "cupy", "matplotlib")
              if m in sys.modules}
    installed_now = False
    if ready(root, choice.stack):
        lines.append("already set up: nothing to install")
    else:
        other = [stacks.STACKS[n].cupy for n in stacks.installed() if n != choice.stack.name]
        if other:  # e.g. Colab's own cupy-cuda12x on a CPU runtime: two CuPy builds shadow each other
            _pip("uninstall", "-q", "-y", *other)
            lines.append(f"removed {', '.join(other)}")
        _pip("install", "-q", "-e", f"{root}[{choice.stack.name}]")
        installed_now = True
        lines.append(f"installed the course and the CUDA {choice.stack.cuda} stack in {time.time() - t0:.0f} s")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        from google.colab import output  # type: ignore[import-not-found]

        output.enable_custom_widget_manager()  # ipywidgets in Colab (sliders, dropdowns)
        lines.append("widgets: Colab's custom widget manager on")
    except (ImportError, AttributeError):
        lines.append("widgets: not in Colab, left as they are")
    if not driver.present or min(driver.archs or (0,)) < 80:
        # no GPU, or a T4: the emulator runs what the GPU cannot (bf16/tf32/fp64 need sm_80)
        lines.append(emulator_compiler("google.colab" in sys.modules if install_compiler is None else install_compiler))
    changed = [m for m, v in before.items() if installed_now and v is not None and _version_now(m) not in (None, v)]
    if changed:
        lines.append(f"RESTART NEEDED: {', '.join(changed)} changed while loaded: Runtime > Restart session, "
                     "then run this cell again")
    lines.append(_compile_check(choice.stack))
    for line in lines:
        out(f"course setup: {line}")
    return dict(stack=choice.stack.name, gpu=driver.present, installed=installed_now, lines=lines,
                seconds=time.time() - t0)


def _version_now(module: str) -> str | None:
    from importlib import metadata

    dist = {"cupy": None, "numpy": "numpy", "matplotlib": "matplotlib"}.get(module)
    if module == "cupy":
        names = stacks.installed()
        dist = stacks.STACKS[names[0]].cupy if names else None
    try:
        return metadata.version(dist) if dist else None
    except metadata.PackageNotFoundError:
        return None


def _compile_check(stack: stacks.Stack) -> str:
    """A WMMA kernel through this stack's NVRTC, no GPU needed: the one-line proof of the install."""
    try:
        from grader.runtime.compile import nvrtc_compile

        src = ('#include <mma.h>\nusing namespace nvcuda;\nextern "C" __global__ void k(const half* a, float* c) {\n'
               "  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> f;\n"
               "  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;\n  wmma::fill_fragment(acc, 0.0f);\n"
               "  wmma::load_matrix_sync(f, a, 16);\n  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);\n}\n")
        out = nvrtc_compile(src, arch=75, resources=False, stack=stack.name)
        return f"NVRTC {out.nvrtc[0]}.{out.nvrtc[1]} compiles WMMA for sm_75: ready (notebook 00 checks the rest)"
    except Exception as e:  # noqa: BLE001 - report, never crash the student's first cell
        return f"NOT READY: a test compile failed: {str(e).splitlines()[0]}"


_LINK = re.compile(r"https://colab\.research\.google\.com/github/[^)\s]*?/(notebooks/[\w.-]+/[\w.-]+\.ipynb)")


def readme_links(text: str) -> str:
    """README text with every Colab link pointing at REPOSITORY/BRANCH."""
    return _LINK.sub(lambda m: colab_url(m[1]), text)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["readme"]:
        print(__doc__, file=sys.stderr)
        return 2
    readme = Path(__file__).resolve().parents[2] / "README.md"
    text = readme.read_text()
    new = readme_links(text)
    if new != text:
        readme.write_text(new)
        print(f"rewrote the Colab links of {readme.name} for {HANDOUT_REPOSITORY}")
    else:
        print(f"the Colab links of {readme.name} already point at {HANDOUT_REPOSITORY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
