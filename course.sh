#!/usr/bin/env bash
# The course in one command. On a fresh machine with Python 3.10+ and pip:
#   ./course.sh lab     set up (first time only) and open the course in JupyterLab
#   ./course.sh test    set up (first time only) and run the test suite (extra args go to pytest;
#                       `-m "not slow"` for a quicker subset)
#   ./course.sh grade   the instructor's side: JupyterLab on course/ with nbgrader's formgrader open
#   ./course.sh stack   say which CUDA stack this machine gets, and why (installs nothing)
# Idempotent: the virtual environment in .venv is rebuilt only when pyproject.toml or the
# stack this machine needs changes.
#
# The CUDA stack follows the driver (grader/runtime/stack.py, run with the system Python):
# a driver for CUDA 13 (580+) gets CuPy + NVRTC for CUDA 13, a 525-575 driver (CUDA 12.x:
# Colab, clusters) or a Volta GPU the CUDA 12 ones, a machine without a GPU the compile-only
# CUDA 13 set. TC_STACK=cuda12|cuda13 overrides (e.g. installing on a GPU-less login node).
set -euo pipefail
cd "$(dirname "$0")"
py=${PYTHON:-python3}
venv=${COURSE_VENV:-.venv}
cmd=${1:-}
[ $# -gt 0 ] && shift
if [ "$cmd" = stack ]; then exec "$py" grader/runtime/stack.py explain; fi
stack_extras=$("$py" grader/runtime/stack.py extras)  # e.g. cuda12,gpu12 (reasons on stderr)
extras=lab,test,$stack_extras
stamp="$venv/.installed-$(cat pyproject.toml | cksum | cut -d' ' -f1)-${extras//,/-}"
if [ ! -f "$stamp" ]; then
  echo "course.sh: setting up $venv (extras: $extras); this happens once" >&2
  "$py" grader/runtime/stack.py explain | sed 's/^/course.sh: /' >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  # Two CuPy builds in one Python shadow each other: drop the other stack's before installing.
  case ",$stack_extras," in
    *,cuda12,*) other=cupy-cuda13x ;;
    *)          other=cupy-cuda12x ;;
  esac
  "$venv/bin/python" -m pip uninstall -q -y "$other" >/dev/null 2>&1 || true
  # setuptools announces every editable install with a multi-line "Editable installation."
  # notice on stderr; it asks nothing of the user, so it is hidden (its message only).
  PYTHONWARNINGS="ignore:Editable installation" "$venv/bin/python" -m pip install -q -e ".[$extras]"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
# The environment's own nbgrader config, loaded before any course's: autograde refuses to run
# without the course's sandbox and trusted grader even where a course config was replaced
# (grader/classroom/hardening.py).
guard="$venv/etc/jupyter/nbgrader_config.py"
if [ ! -f "$guard" ]; then
  mkdir -p "$(dirname "$guard")"
  printf '%s\n' "# written by course.sh: the course's safeguards, whatever course config follows" \
    "from grader.classroom import hardening" "hardening.install()" > "$guard"
fi
# JupyterLab starts through grader/classroom/lab.py: `lab` on notebooks/ without nbgrader's
# instructor pages (a formgrader there would create a stray gradebook.db), `grade` on course/ with
# the formgrader; either says in one line why it cannot start.
case "$cmd" in
  lab|grade) exec "$venv/bin/python" -m grader.classroom.lab "$cmd" "$@" ;;
  test)  exec "$venv/bin/python" -m pytest "$@" ;;
  *)     echo "usage: ./course.sh lab | grade | test [pytest arguments] | stack" >&2; exit 2 ;;
esac
