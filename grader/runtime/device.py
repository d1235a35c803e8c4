"""Facts about the GPU at hand: what it is, its limits, and what its tensor cores take."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from grader.runtime import arch as arches
from grader.runtime.launch import Limits


@lru_cache(maxsize=1)
def has_gpu() -> bool:
    """True when CuPy can reach a CUDA device. Never raises: without a driver CuPy imports
    but every device call fails (FACTS.md), which is exactly what this detects."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    cc: int  # compute capability the course acts as (90 for 9.0): TC_ARCH, else the GPU's own
    sm_count: int
    memory_bytes: int
    l2_bytes: int
    max_shared_optin: int
    clock_mhz: float
    driver: str
    runtime: str
    native_cc: int = 0  # the GPU's own compute capability (0: same as cc)

    def __post_init__(self):
        if not self.native_cc:
            object.__setattr__(self, "native_cc", self.cc)

    @property
    def emulated(self) -> bool:
        """True when TC_ARCH makes this GPU act as an older arch."""
        return self.cc != self.native_cc

    @property
    def arch(self) -> str:
        if self.emulated:
            return f"sm_{self.cc}, as TC_ARCH asks; the GPU is sm_{self.native_cc}"
        return f"sm_{self.cc}"


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


@lru_cache(maxsize=1)
def device_info() -> DeviceInfo | None:
    """Facts of device 0, or None without a GPU."""
    if not has_gpu():
        return None
    import cupy

    rt = cupy.cuda.runtime
    p = rt.getDeviceProperties(0)
    name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
    native = p["major"] * 10 + p["minor"]
    cc = arches.effective(native)
    optin = p.get("sharedMemPerBlockOptin", 48 * 1024)
    if cc != native:  # acting as an older arch: its smaller shared memory too
        optin = min(optin, arches.shared_optin(cc) or optin)
    return DeviceInfo(
        name=name, cc=cc, sm_count=p["multiProcessorCount"],
        memory_bytes=p["totalGlobalMem"], l2_bytes=p["l2CacheSize"],
        max_shared_optin=optin,
        clock_mhz=p.get("clockRate", 0) / 1000, driver=_version(rt.driverGetVersion()),
        runtime=_version(rt.runtimeGetVersion()), native_cc=native)


def limits() -> Limits:
    """Launch limits of this GPU (the sm_90 defaults without one)."""
    info = device_info()
    return Limits(max_shared_optin=info.max_shared_optin) if info else Limits()


def needs(min_arch: int) -> str:
    """'' when the GPU in hand (TC_ARCH included) has `min_arch`, else the one line that says
    why a section is skipped, e.g. 'needs sm_80 (this GPU acts as sm_75)'. No GPU: ''."""
    info = device_info()
    if info is None or info.cc >= min_arch:
        return ""
    return f"needs sm_{min_arch} or newer (this GPU: {info.arch})"


def _kb(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n % 1024 == 0 or n >= 10 * 1024 else f"{n} bytes"


class NotHere(ValueError):
    """This GPU (or the arch TC_ARCH makes it act as) cannot run the kernel: not the student's fault.
    A lesson's timer raises it with cannot_run()'s line."""


def cannot_run(kernel: str, shared_mem: int = 0, min_arch: int = 0, backend: str = "auto") -> str:
    """'' when the GPU in hand (TC_ARCH included) can launch `kernel` (a kernels/ file name, or
    any label with `min_arch` given) with `shared_mem` bytes of dynamic shared memory per block;
    else the one line a lesson prints instead of launching, e.g. 'skipped here: wmma_gemm_async
    needs 105 KB of shared memory per block; this GPU acts as sm_75 (64 KB)'. The kernel's
    minimum arch is the larger of `min_arch` and its file's `Requires: sm_XX` line. No GPU, or
    backend "emu": '' (the emulator runs every kernel)."""
    info = device_info()
    if info is None or backend == "emu":
        return ""
    from grader.runtime import kernels

    try:
        min_arch = max(min_arch, kernels.required_arch(kernels.source(kernel)) or 0)
    except FileNotFoundError:  # a student's kernel or a label: the caller's min_arch only
        pass
    wants = []
    if info.cc < min_arch:
        wants.append(f"sm_{min_arch}")
    if shared_mem > info.max_shared_optin:
        wants.append(f"{_kb(shared_mem)} of shared memory per block")
    if not wants:
        return ""
    here = f"acts as sm_{info.cc} (TC_ARCH; it is sm_{info.native_cc})" if info.emulated else f"is sm_{info.cc}"
    return (f"skipped here: {kernel} needs {' and '.join(wants)}; this GPU {here}, "
            f"{_kb(info.max_shared_optin)} of shared memory per block")


# WMMA element types and shapes by minimum compute capability. Source: CUDA C++ Programming
# Guide, "Warp Matrix Functions" > "Element Types and Matrix Sizes" (CUDA 13).
TENSOR_CORE_TYPES = (
    # (A/B type, accumulator, shapes, minimum cc)
    ("half (fp16)", "float or half", "m16n16k16, m32n8k16, m8n32k16", 70),
    ("unsigned char / signed char (int8)", "int", "m16n16k16, m32n8k16, m8n32k16", 72),
    ("__nv_bfloat16 (bf16)", "float", "m16n16k16, m32n8k16, m8n32k16", 80),
    ("precision::tf32", "float", "m16n16k8", 80),
    ("double (fp64, DMMA)", "double", "m8n8k4", 80),
    ("experimental: u4 / s4", "int", "m8n8k32", 75),
    ("experimental: b1", "int", "m8n8k128", 75),
)


# The columns of the table: one GPU the course's learners meet per architecture.
TABLE_ARCHS = ((70, "V100"), (75, "T4"), (80, "A100"), (90, "H100"))


def tensor_core_table(cc: int | None) -> list[dict]:
    """One row per WMMA type: its minimum arch, a yes/no column per architecture (Volta sm_70
    to Hopper sm_90) and whether `cc` supports it (None: no GPU, nothing supported). Volta
    needs the CUDA 12 stack: NVRTC 13 no longer targets sm_70."""
    rows = []
    for t, acc, shapes, m in TENSOR_CORE_TYPES:
        row = dict(inputs=t, accumulator=acc, shapes=shapes, min_arch=f"sm_{m}")
        row.update({f"{gpu} sm_{a}": "yes" if a >= m else "-" for a, gpu in TABLE_ARCHS})
        row["supported"] = cc is not None and cc >= m
        rows.append(row)
    return rows
