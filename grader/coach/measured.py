"""The measured part of the panel: Nsight Compute (`ncu`) counters of ONE launch of the kernel,
profiled in a child process (`python -m grader.coach.profile_target JOB`) that compiles the kernel,
makes the exercise's inputs at the given size and launches it once with the exercise's launch.

    ncu --csv --print-units base --clock-control none --kernel-name K --launch-count 1 --metrics ... \\
        python -m grader.coach.profile_target JOB

Where counters cannot be read (no GPU, no ncu, ERR_NVGPUCTRPERM: the driver restricts them to
admin users) `measure` returns why, and the panel keeps its static part.
Metric names: Nsight Compute's "Kernel Profiling Guide" (metrics structure; the stall reasons of the
WarpStateStats section, smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio).
"""
from __future__ import annotations

import os
import pickle
import subprocess
import tempfile

from grader.runtime import ncu

CORE = {
    "duration_ns": "gpu__time_duration.sum",
    "sm_clock_hz": "sm__cycles_elapsed.avg.per_second",
    "tensor_pipe_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "hmma_inst": "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "registers": "launch__registers_per_thread",
    "smem_ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smem_st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smem_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smem_st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_sectors": "lts__t_sectors.sum",
    # coalescing: 32-byte sectors per warp request of global loads and stores (Volta on; the Memory
    # Workload Analysis table's "Sectors/Req": 4 for 128 contiguous bytes, 32 when every lane has its own)
    "gld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "gld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "gst_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "gst_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
}
# cp.async (LDGSTS, Ampere on): its global side, asked for only in the first try (an older ncu lacks it)
ASYNC = {"gcp_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",
         "gcp_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"}
STALL_REASONS = ("long_scoreboard", "short_scoreboard", "barrier", "mio_throttle", "math_pipe_throttle", "wait",
                 "not_selected", "lg_throttle", "dispatch_stall", "no_instruction", "membar", "branch_resolving",
                 "drain", "imc_miss", "sleeping", "tex_throttle", "misc")
STALLS = {f"stall_{r}": f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS}
METRICS = {**CORE, **ASYNC, **STALLS}
# the last try when this ncu does not know one of CORE's names
MINIMAL = {k: CORE[k] for k in ("duration_ns", "hmma_inst", "occupancy_pct", "smem_ld_conflicts", "smem_st_conflicts",
                                "dram_pct")}

# what each stall reason usually means, for the panel
STALL_WORDS = {"long_scoreboard": "waiting for global/local memory", "short_scoreboard": "waiting for shared memory",
               "barrier": "waiting at __syncthreads", "mio_throttle": "shared-memory instruction queue full",
               "math_pipe_throttle": "tensor/math pipe busy (good: the math is the limit)",
               "wait": "fixed-latency dependency", "not_selected": "ready but another warp issued",
               "lg_throttle": "global-memory instruction queue full", "dispatch_stall": "dispatch stall",
               "no_instruction": "instruction cache miss", "membar": "memory barrier",
               "branch_resolving": "branch", "drain": "draining stores at exit", "imc_miss": "constant cache miss",
               "sleeping": "sleeping", "tex_throttle": "texture queue full", "misc": "other"}

def tool() -> str | None:
    return ncu.tool()


def parse_csv(text: str) -> list[dict]:
    """One dict per profiled launch: kernel name, grid, block, and {metric name: value in base units}."""
    return ncu.launches(text)


def summarise(launch: dict, flops: float | None = None) -> dict:
    """The panel's numbers from one launch's metrics (keys of CORE and STALLS)."""
    m = launch["metrics"]
    out = {k: m[v] for k, v in METRICS.items() if v in m}
    for d in ("ld", "st"):
        wf = out.get(f"smem_{d}_wavefronts")
        if wf:
            out[f"smem_{d}_ways"] = wf / max(wf - out.get(f"smem_{d}_conflicts", 0.0), 1.0)
    for d in ("gld", "gst", "gcp"):  # sectors per warp request (0 requests: none of that kind ran)
        if out.get(f"{d}_requests"):
            out[f"{d}_sectors_per_request"] = out.get(f"{d}_sectors", 0.0) / out[f"{d}_requests"]
    stalls = sorted(((k[6:], v) for k, v in out.items() if k.startswith("stall_")), key=lambda x: -x[1])
    out["top_stalls"] = [(r, v) for r, v in stalls[:3] if v > 0]
    dur = out.get("duration_ns")
    if dur and out.get("l2_sectors"):  # L2 bytes per second achieved, and the peak that percentage implies
        out["l2_bytes_per_s"] = out["l2_sectors"] * 32 / (dur * 1e-9)
        if out.get("l2_pct"):
            out["l2_peak_bytes_per_s"] = out["l2_bytes_per_s"] / (out["l2_pct"] / 100)
    if flops and dur:
        out["tflops"] = flops / (dur * 1e-9) / 1e12
        moved = out.get("dram_read_bytes", 0) + out.get("dram_write_bytes", 0)
        if moved:
            out["dram_intensity"] = flops / moved
    out.update(kernel=launch.get("kernel"), grid=launch.get("grid"), block=launch.get("block"),
               device=launch.get("device"))
    return out


def lines(s: dict) -> list[str]:
    """The measured part, a few lines of text."""
    out = []
    if "tensor_pipe_pct" in s:
        out.append(f"tensor pipe busy {s['tensor_pipe_pct']:.0f}% of its peak"
                   + (f" ({s['tflops']:.0f} TFLOP/s in this launch)" if "tflops" in s else ""))
    if "occupancy_pct" in s:
        out.append(f"achieved occupancy {s['occupancy_pct']:.0f}% of the SM's warps"
                   + (f" (theoretical {s['theoretical_occupancy_pct']:.0f}%)" if "theoretical_occupancy_pct" in s else ""))
    if "smem_ld_ways" in s or "smem_st_ways" in s:
        out.append(f"shared memory: loads {s.get('smem_ld_ways', 1):.1f}-way, stores {s.get('smem_st_ways', 1):.1f}-way "
                   f"({s.get('smem_ld_conflicts', 0):.0f} / {s.get('smem_st_conflicts', 0):.0f} bank-conflict wavefronts)")
    spr = [(w, s[f"{d}_sectors_per_request"]) for d, w in (("gld", "loads"), ("gcp", "cp.async copies"),
                                                           ("gst", "stores")) if f"{d}_sectors_per_request" in s]
    if spr:
        out.append("global memory, 32-byte sectors per warp request: " + ", ".join(f"{w} {v:.1f}" for w, v in spr)
                   + " (4 per 128 contiguous bytes; 32: every lane its own sector, uncoalesced)")
    if "dram_pct" in s or "l2_pct" in s:
        out.append(f"DRAM throughput {s.get('dram_pct', 0):.0f}% of peak, L2 {s.get('l2_pct', 0):.0f}%"
                   + (f"; {s['dram_intensity']:.0f} FLOP per DRAM byte" if "dram_intensity" in s else ""))
    if s.get("top_stalls"):
        out.append("warps mostly stalled on: " + "; ".join(f"{r} ({STALL_WORDS.get(r, r)}) {v:.2f}"
                                                          for r, v in s["top_stalls"]))
    return out


def _why(stdout: str, stderr: str, rc: int) -> str:
    text = stdout + stderr
    if "ERR_NVGPUCTRPERM" in text:
        return ("the GPU's performance counters are not readable here (ERR_NVGPUCTRPERM: the driver lets only "
                "admin users profile); run as root or set NVreg_RestrictProfilingToAdminUsers=0")
    if "No kernels were profiled" in text:
        return "ncu profiled no kernel (the launch failed or the kernel name did not match)"
    last = [l for l in text.strip().splitlines() if l.strip()][-1:] or [f"exit {rc}"]
    return f"ncu failed: {last[0][:200]}"


def measure(source: str, kernel: str, options, problem, dims: dict, launch: dict, *, flops: float | None = None,
            metrics: dict | None = None, timeout: float = 180.0) -> dict:
    """{"ok": True, "summary": {...}, "csv": raw ncu output, "command": [...]} or {"ok": False, "why": ...}."""
    from grader.runtime.device import has_gpu

    if not has_gpu():
        return dict(ok=False, why="no GPU here: the counters need one (the static part above is what a CPU can say)")
    exe = tool()
    if exe is None:
        return dict(ok=False, why="no Nsight Compute (ncu) on this machine")
    from grader.runtime import sandbox

    names = metrics or METRICS
    with tempfile.TemporaryDirectory(prefix="tc-coach-ncu-") as tmp:
        job = os.path.join(tmp, "job.pkl")
        with open(job, "wb") as f:
            pickle.dump(dict(source=source, kernel=kernel, options=list(options), problem=problem, dims=dims,
                             launch=launch), f)
        tried = []
        for chosen in (names, CORE, MINIMAL):  # a metric this ncu does not know fails the run: then fewer
            cmd = [exe, "--csv", "--print-units", "base", "--clock-control", "none", "--kernel-name", kernel,
                   "--launch-count", "1", "--metrics", ",".join(chosen.values())] + \
                sandbox.python_command("grader.coach.profile_target") + [job]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return dict(ok=False, why=f"ncu took more than {timeout:.0f} s", command=cmd)
            except OSError as e:
                return dict(ok=False, why=f"ncu did not start: {e}", command=cmd)
            launches = parse_csv(done.stdout)
            if launches and launches[0]["metrics"]:
                return dict(ok=True, summary=summarise(launches[0], flops), csv=done.stdout, command=cmd,
                            launches=len(launches))
            tried.append(_why(done.stdout, done.stderr, done.returncode))
            if "ERR_NVGPUCTRPERM" in tried[-1]:  # (an unknown metric may also read "no kernel profiled")
                break
        return dict(ok=False, why=tried[-1], command=cmd, stderr=done.stderr[-2000:])
