"""Which CUDA stack this machine needs, and which one is installed: CUDA 13 or CUDA 12.

A stack is CuPy + NVRTC + the CUDA headers, all of one CUDA major version. The driver decides:
CUDA 13 needs a driver for CUDA 13 (580 or newer); a 525-575 driver (CUDA 12.x: Colab, Kaggle,
most clusters) needs the CUDA 12 stack, whose NVRTC is also the only one that still targets
Volta (sm_70; CUDA 13 dropped it). A machine without a GPU keeps the CUDA 13 set (compile-only
NVRTC + headers; kernels run on the emulator).

Standard library only: `./course.sh` runs this file with the system Python before anything is
installed, and so does the Colab setup cell.

    python3 grader/runtime/stack.py extras     the pip extras for this machine, e.g. cuda12,gpu12
    python3 grader/runtime/stack.py explain    which stack and why, in one line
TC_STACK=cuda12|cuda13 forces the choice (a cluster login node has no GPU but its compute
nodes do); the fake-driver tests set PATH to a stand-in nvidia-smi.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Stack:
    name: str  # the pip extra that installs it: "cuda12" | "cuda13"
    cuda: int  # CUDA major version
    cupy: str  # the CuPy distribution built for it
    gpu_extra: str  # the extra with cuBLAS & co., for a machine with a GPU
    nvrtc: tuple[str, ...]  # libnvrtc, relative to a site-packages folder (pip wheels)
    include: tuple[str, ...]  # header folders, relative to site-packages, in search order
    wheels: dict  # header -> the wheel that has it (for a missing-header message)
    min_driver: str  # oldest Linux driver branch that runs it
    lowest_arch: int  # oldest GPU its NVRTC targets


STACKS = {
    "cuda13": Stack(
        "cuda13", 13, "cupy-cuda13x", "gpu13",
        nvrtc=("nvidia/cu13/lib/libnvrtc.so.13",),
        include=("nvidia/cu13/include",),  # CUDA 13 wheels share one folder; crt/ is its own wheel
        wheels={"crt/mma.h": "nvidia-cuda-crt"},
        min_driver="580", lowest_arch=75),
    "cuda12": Stack(
        "cuda12", 12, "cupy-cuda12x", "gpu12",
        nvrtc=("nvidia/cuda_nvrtc/lib/libnvrtc.so.12",),
        # the cu12 runtime wheel has mma.h but no crt/: crt/mma.h comes with the nvcc wheel
        include=("nvidia/cuda_runtime/include", "nvidia/cuda_nvcc/include"),
        wheels={"crt/mma.h": "nvidia-cuda-nvcc-cu12"},
        min_driver="525", lowest_arch=70),
}
DEFAULT = "cuda13"  # no GPU: today's compile-only set

# Linux driver branch -> newest CUDA it runs (CUDA Toolkit release notes, table "CUDA Toolkit
# and Minimum Required Driver Version"): used when nvidia-smi prints no "CUDA Version".
_DRIVER_CUDA = ((580, (13, 0)), (575, (12, 9)), (570, (12, 8)), (560, (12, 6)), (555, (12, 5)),
                (550, (12, 4)), (545, (12, 3)), (535, (12, 2)), (530, (12, 1)), (525, (12, 0)))


@dataclass(frozen=True)
class Driver:
    """What nvidia-smi says: None fields when there is no GPU (or no nvidia-smi)."""

    cuda: tuple[int, int] | None  # newest CUDA this driver runs, e.g. (12, 4)
    version: str | None  # e.g. "550.54.15"
    gpus: tuple[str, ...] = ()
    archs: tuple[int, ...] = ()  # compute capability of each GPU, e.g. (70,) for a V100

    @property
    def present(self) -> bool:
        return bool(self.gpus) or self.cuda is not None

    def cuda_text(self) -> str:
        return f"{self.cuda[0]}.{self.cuda[1]}" if self.cuda else "unknown"


def parse_smi(header: str, gpu_list: str = "", compute_caps: str = "") -> Driver:
    """Read `nvidia-smi` (its header), `nvidia-smi -L` and
    `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` output."""
    cuda = re.search(r"CUDA Version\s*:\s*(\d+)\.(\d+)", header)
    version = re.search(r"Driver Version\s*:\s*([\d.]+)", header)
    gpus = tuple(line.strip() for line in gpu_list.splitlines() if line.strip().startswith("GPU "))
    archs = tuple(int(m[1]) * 10 + int(m[2]) for m in re.finditer(r"^\s*(\d+)\.(\d)\s*$", compute_caps, re.M))
    cu = (int(cuda[1]), int(cuda[2])) if cuda else None
    if cu is None and version:
        branch = int(version[1].split(".")[0])
        cu = next((c for b, c in _DRIVER_CUDA if branch >= b), (11, 0))
    return Driver(cu, version[1] if version else None, gpus, archs)


def query_driver(timeout: float = 20.0) -> Driver:
    """Ask nvidia-smi (on PATH). No nvidia-smi, or one that fails (no GPU, driver not loaded):
    no driver."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return Driver(None, None)
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=timeout)
        if listed.returncode != 0 or "GPU" not in listed.stdout:
            return Driver(None, None)
        header = subprocess.run([smi], capture_output=True, text=True, timeout=timeout)
        caps = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=timeout)  # drivers before 510 do not know the field
    except (OSError, subprocess.TimeoutExpired):
        return Driver(None, None)
    return parse_smi(header.stdout, listed.stdout, caps.stdout if caps.returncode == 0 else "")


@dataclass(frozen=True)
class Choice:
    stack: Stack
    gpu: bool  # also install the GPU libraries (cuBLAS ...)
    reason: str
    warning: str = ""

    @property
    def extras(self) -> list[str]:
        return [self.stack.name] + ([self.stack.gpu_extra] if self.gpu else [])


def choose(driver: Driver, forced: str | None = None) -> Choice:
    """The stack for this driver: CUDA 13 from a CUDA 13 driver up, CUDA 12 for 12.x, and the
    no-GPU set (CUDA 13, compile only) without a usable driver. `forced` (TC_STACK) wins."""
    if forced:
        if forced not in STACKS:
            raise ValueError(f"TC_STACK={forced!r}: use one of {', '.join(STACKS)}")
        return Choice(STACKS[forced], driver.present, f"TC_STACK={forced} asks for it")
    if not driver.present:
        return Choice(STACKS[DEFAULT], False, "no NVIDIA GPU here: the compile-only CUDA 13 set "
                                              "(kernels run on the course's CPU emulator)")
    cu = driver.cuda or (0, 0)
    old = [a for a in driver.archs if a < STACKS["cuda13"].lowest_arch]
    if cu >= (12, 0) and old:
        return Choice(STACKS["cuda12"], True, f"this GPU is sm_{min(old)}, which only NVRTC 12 compiles for "
                                              "(CUDA 13 dropped Volta)")
    if cu >= (13, 0):
        return Choice(STACKS["cuda13"], True, f"the driver runs CUDA {driver.cuda_text()} (13 or newer)")
    if cu >= (12, 0):
        return Choice(STACKS["cuda12"], True, f"the driver runs CUDA {driver.cuda_text()}, older than 13: "
                                              "CuPy for CUDA 13 could not use the GPU")
    return Choice(STACKS[DEFAULT], False, "the driver is too old for any course stack",
                  warning=f"this driver runs CUDA {driver.cuda_text()}; the course's GPU path needs 525 or "
                          "newer (CUDA 12). Until the driver is updated the course runs in CPU mode.")


def choice_here() -> Choice:
    return choose(query_driver(), os.environ.get("TC_STACK") or None)


def installed() -> list[str]:
    """The stacks whose CuPy is installed in this Python (normally one; two is a broken mix)."""
    from importlib import metadata

    found = []
    for name, s in STACKS.items():
        try:
            metadata.distribution(s.cupy)
            found.append(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def in_use() -> Stack | None:
    """The stack CuPy in this Python belongs to (None: no CuPy installed)."""
    names = installed()
    return STACKS[names[0]] if len(names) == 1 else None


def diagnose(names: list[str], driver: Driver) -> tuple[bool, str, str]:
    """(ok, what, fix): is the installed stack right for this driver? One line each."""
    if not names:
        fix = "./course.sh (it picks the stack for this driver), or pip install -e \".[cuda13]\""
        return False, "no CuPy installed", fix
    if len(names) > 1:
        keep = choose(driver).stack
        other = [STACKS[n].cupy for n in names if n != keep.name]
        return False, f"two CuPy builds installed ({', '.join(STACKS[n].cupy for n in names)}): they shadow " \
                      "each other", f"pip uninstall -y {' '.join(other)}"
    s = STACKS[names[0]]
    if not driver.present:
        return True, f"{s.cupy} installed; no GPU here, so it compiles only", ""
    cu = driver.cuda or (0, 0)
    want = choose(driver).stack
    fix = (f"run ./course.sh again (it picks the CUDA {want.cuda} stack here), or: pip uninstall -y {s.cupy} "
           f"&& pip install -e \".[{want.name},{want.gpu_extra}]\"")
    if cu < (s.cuda, 0):
        return False, (f"the CUDA {s.cuda} stack ({s.cupy}) needs a driver for CUDA {s.cuda} ({s.min_driver} or "
                       f"newer); this driver runs CUDA {driver.cuda_text()}, so CuPy cannot use the GPU"), fix
    old = [a for a in driver.archs if a < s.lowest_arch]
    if old:
        return False, (f"the CUDA {s.cuda} stack's NVRTC cannot compile for this GPU (sm_{min(old)}; it targets "
                       f"sm_{s.lowest_arch} and newer)"), fix
    return True, f"the CUDA {s.cuda} stack fits this driver (CUDA {driver.cuda_text()})", ""


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "explain"
    try:
        c = choice_here()
    except ValueError as e:
        print(f"stack.py: {e}", file=sys.stderr)
        return 2
    if cmd == "extras":
        print(",".join(c.extras))
    elif cmd == "explain":
        print(f"CUDA {c.stack.cuda} stack (extras {','.join(c.extras)}): {c.reason}")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if c.warning:
        print(f"warning: {c.warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
