"""A stand-in nvidia-smi on PATH, for the tests of the CUDA stack a machine gets (tests/runtime/test_stack.py)
and of the Colab setup (tests/classroom/test_colab_setup.py)."""
import stat
from pathlib import Path


def smi_header(driver: str, cuda: str | None) -> str:
    cu = f"   CUDA Version: {cuda}     " if cuda else ""
    return ("+-----------------------------------------------------------------------------+\n"
            f"| NVIDIA-SMI {driver}    Driver Version: {driver}  {cu}|\n")


def fake_smi(bin_dir: Path, driver: str, cuda: str, gpu: str, cc: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    p = bin_dir / "nvidia-smi"
    p.write_text("#!/bin/sh\n"
                 f'case "$1" in\n  -L) echo "GPU 0: {gpu} (UUID: GPU-0)" ;;\n'
                 f'  --query-gpu=compute_cap) echo "{cc}" ;;\n'
                 f"  *) printf '%s' '{smi_header(driver, cuda)}' ;;\nesac\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
