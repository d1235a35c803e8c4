"""JupyterLab for the course, started the one way `./course.sh` does.

    python -m grader.classroom.lab lab   [jupyter lab arguments]   # a student's lab on notebooks/
    python -m grader.classroom.lab grade [jupyter lab arguments]   # the instructor's, on course/

`lab` turns nbgrader's instructor pages off (a formgrader started there would create an empty
gradebook.db in notebooks/); `grade` opens the formgrader on the course. Whatever stops the
server before it serves (a missing folder, a broken environment, a setting Jupyter refuses)
ends with ONE line that says why and what to do, never a traceback: that is the line a student
reads first.

The student's settings are Jupyter config files the launcher writes into the environment
(`<venv>/etc/tensorcore-lab/`, put first on JUPYTER_CONFIG_PATH): the server's extensions as a
dict in JSON (the command line's syntax for a dict trait broke `./course.sh lab` once) and
JupyterLab's page config, which hides nbgrader's menu from the student's lab.
tests/test_readme_commands.py starts the real server and opens it in a browser.
"""
from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# nbgrader's server extensions that only an instructor's server needs.
NBGRADER_PAGES = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
)


# nbgrader's JupyterLab extension (its "Nbgrader" menu: formgrader, assignment list, courses).
NBGRADER_LABEXTENSION = "@jupyter/nbgrader"


def _config_dir(name: str, server: dict, page: dict | None, prefix: Path) -> Path:
    folder = prefix / "etc" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": server}, indent=1) + "\n")
    if page is not None:
        (folder / "labconfig").mkdir(exist_ok=True)
        (folder / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=1) + "\n")
    return folder


def lab_config_dir(prefix: Path = Path(sys.prefix)) -> Path:
    """Writes the student's lab settings into the environment and returns their folder."""
    return _config_dir("tensorcore-lab", {"jpserver_extensions": {name: False for name in NBGRADER_PAGES}},
                       {"disabledExtensions": {NBGRADER_LABEXTENSION: True}}, prefix)


def grade_config_dir(prefix: Path = Path(sys.prefix)) -> Path:
    """The instructor's server settings: its pages show students' hand-ins, so nothing a page's
    script could reach beyond what grading needs: no terminals, no language servers, none of
    nbgrader's student-side pages (course/README.md, "What is trusted")."""
    off = ["jupyter_server_terminals", "jupyter_lsp", "nbgrader.server_extensions.assignment_list"]
    return _config_dir("tensorcore-grade", {"terminals_enabled": False,
                                            "jpserver_extensions": {name: False for name in off}}, None, prefix)


def course_dir(root: Path = ROOT) -> Path:
    """The course the formgrader opens: course/, or TC_COURSE_DIR (another term's folder)."""
    return Path(os.environ.get("TC_COURSE_DIR") or root / "course").resolve()


def lab_args(root: Path = ROOT) -> list[str]:
    """The student's lab: notebooks/ (its settings: lab_config_dir)."""
    return [f"--ServerApp.root_dir={root / 'notebooks'}"]


def grade_args(root: Path = ROOT) -> list[str]:
    """The instructor's lab: the course, opening on the formgrader (its settings: grade_config_dir)."""
    return [f"--ServerApp.root_dir={course_dir(root)}", "--ServerApp.default_url=/formgrader"]


def server_root(which: str, root: Path = ROOT) -> Path:
    """The folder the server serves and runs in: notebooks/ for `lab`, the course for `grade`."""
    return root / "notebooks" if which == "lab" else course_dir(root)


def preflight(which: str, root: Path = ROOT) -> str | None:
    """Why the server cannot start, in one line, or None."""
    folder = server_root(which, root)
    if not folder.is_dir():
        return f"{folder} is missing: run this from a complete copy of the course"
    if which == "grade" and not (folder / "nbgrader_config.py").is_file():
        return f"{folder / 'nbgrader_config.py'} is missing: restore it from the repository"
    try:
        import jupyterlab  # noqa: F401
        if which == "grade":
            import nbgrader  # noqa: F401
    except ImportError as e:
        return (f"{e.name} is not installed in this environment ({sys.prefix}): "
                f"remove it (rm -rf .venv) and run ./course.sh {which} again")
    return None


class _LastCritical(logging.Filter):
    """Keeps the last critical message Jupyter logs before it exits (its 'Bad config' line). A
    filter, not a handler: traitlets' logging set-up replaces the handlers of its apps' loggers
    and keeps their filters."""

    message = None

    def filter(self, record):
        if record.levelno >= logging.CRITICAL:
            self.message = record.getMessage()
        return True


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    which = argv.pop(0) if argv else ""
    if which not in ("lab", "grade"):
        print("usage: python -m grader.classroom.lab lab|grade [jupyter lab arguments]", file=sys.stderr)
        return 2
    tag = f"course.sh {which}"
    reason = preflight(which)
    if reason:
        print(f"{tag}: cannot start JupyterLab: {reason}", file=sys.stderr)
        return 1
    from jupyterlab.labapp import LabApp

    args = (lab_args() if which == "lab" else grade_args()) + argv
    if os.geteuid() == 0 and "--allow-root" not in args:
        # Jupyter refuses root unless told; a container or a lent machine often has only root.
        print(f"{tag}: running as root: --allow-root added", file=sys.stderr)
        args.append("--allow-root")
    critical = _LastCritical()
    for name in ("ServerApp", "LabApp"):  # traitlets apps log to their own, unpropagated loggers
        logging.getLogger(name).addFilter(critical)
    # nbgrader reads the course's nbgrader_config.py from the working folder and runs `alembic`
    # from the environment's bin/ (the formgrader's gradebook).
    os.chdir(server_root(which))
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    settings = lab_config_dir() if which == "lab" else grade_config_dir()
    os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, [str(settings), os.environ.get("JUPYTER_CONFIG_PATH")]))
    try:
        LabApp.launch_instance(argv=args)
    except KeyboardInterrupt:
        return 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code:
            why = critical.message or f"it exited with status {code}"
            print(f"{tag}: JupyterLab stopped: {why.splitlines()[0]}", file=sys.stderr)
        return code
    except Exception as e:  # a student reads one line, not a traceback
        print(f"{tag}: JupyterLab stopped: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
