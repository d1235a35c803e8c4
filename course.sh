#!/usr/bin/env bash
# The course in one command. On a fresh machine with Python 3.10+ and pip:
#   ./course.sh lab     set up (first time only) and open the course in JupyterLab
#   ./course.sh test    set up (first time only) and run the test suite (extra args go to pytest;
#                       about 7 min on 2 CPU cores, `-m "not slow"` for a quicker subset)
# Idempotent: the virtual environment in .venv is rebuilt only when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")"
py=${PYTHON:-python3}
venv=${COURSE_VENV:-.venv}
extras=test
# A GPU machine also gets cuBLAS for the library baselines; a laptop skips those 2 GB.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then extras=test,gpu; fi
stamp="$venv/.installed-$(cat pyproject.toml | cksum | cut -d' ' -f1)-${extras/,/-}"
if [ ! -f "$stamp" ]; then
  echo "course.sh: setting up $venv (extras: $extras); this happens once" >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  # setuptools announces every editable install with a multi-line "Editable installation."
  # notice on stderr; it asks nothing of the user, so it is hidden (its message only).
  PYTHONWARNINGS="ignore:Editable installation" "$venv/bin/python" -m pip install -q -e ".[$extras]"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  lab)  exec "$venv/bin/jupyter" lab --notebook-dir=notebooks "$@" ;;
  test) exec "$venv/bin/python" -m pytest "$@" ;;
  *)    echo "usage: ./course.sh lab | test [pytest arguments]" >&2; exit 2 ;;
esac
