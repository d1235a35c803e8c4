# Sourced by the device scripts (.ci/gpu-*): what they set up on a bare lent machine, once.
# .ci/gpu-accept calls these before its jobs start side by side; each job's script calls them again
# and finds the work done (a second install or unpack under a running job replaces its files).

# The carried wheels (.whl, .whl-nbgrader: .ci/gpu-wheels) into /tmp/site; 1 when none were carried.
# Only the folders carried are named (a pattern that matches nothing made pip install none at all);
# a marker lists what an install put there, written only when it succeeded.
site_wheels() {
  ls .whl/*.whl >/dev/null 2>&1 || return 1
  local wheels
  wheels=$(ls .whl/*.whl .whl-nbgrader/*.whl 2>/dev/null)
  [ "$(cat /tmp/site/.tc-wheels 2>/dev/null)" = "$wheels" ] && return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $wheels > /tmp/site-pip.log 2>&1 && echo "$wheels" > /tmp/site/.tc-wheels
  tail -2 /tmp/site-pip.log
  return 0
}

# The CUDA 12 payload (.cu12.txz: .ci/gpu-cuda12 fetch) into $CU12_DIR (/tmp/cu12site), outside the
# repository and on the Python path, where the sandbox shows it (grader.runtime.sandbox.python_dirs);
# 1 when it is neither carried nor unpacked already. Python's tarfile reads xz with or without xz-utils.
site_cu12() {
  local cu12=${CU12_DIR:-/tmp/cu12site}
  if [ -f "$cu12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ] && { [ ! -f .cu12.txz ] || [ "$cu12/.unpacked" -nt .cu12.txz ]; }; then
    return 0
  fi
  [ -f .cu12.txz ] || return 1
  python3 -c "import sys, tarfile; tarfile.open('.cu12.txz').extractall(sys.argv[1])" "$cu12" && touch "$cu12/.unpacked"
}
