"""Facts about the GPU at hand: what it is, its limits, and what its tensor cores take."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

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
    cc: int  # compute capability as 90 for 9.0
    sm_count: int
    memory_bytes: int
    l2_bytes: int
    max_shared_optin: int
    clock_mhz: float
    driver: str
    runtime: str

    @property
    def arch(self) -> str:
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
    return DeviceInfo(
        name=name, cc=p["major"] * 10 + p["minor"], sm_count=p["multiProcessorCount"],
        memory_bytes=p["totalGlobalMem"], l2_bytes=p["l2CacheSize"],
        max_shared_optin=p.get("sharedMemPerBlockOptin", 48 * 1024),
        clock_mhz=p.get("clockRate", 0) / 1000, driver=_version(rt.driverGetVersion()),
        runtime=_version(rt.runtimeGetVersion()))


def limits() -> Limits:
    """Launch limits of this GPU (the sm_90 defaults without one)."""
    info = device_info()
    return Limits(max_shared_optin=info.max_shared_optin) if info else Limits()


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


def tensor_core_table(cc: int | None) -> list[dict]:
    """One row per WMMA type with whether `cc` supports it (None: no GPU, nothing supported).
    Note: NVRTC 13 cannot target sm_70/72 any more, so Volta rows are history here."""
    return [dict(inputs=t, accumulator=acc, shapes=shapes, min_arch=f"sm_{m}",
                 supported=cc is not None and cc >= m)
            for t, acc, shapes, m in TENSOR_CORE_TYPES]
