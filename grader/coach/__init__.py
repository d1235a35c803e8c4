"""coach: where a correct kernel's time goes, and what to try next (issue #21).

Every speed-graded verdict carries a short panel: the kernel's resources (registers, spills,
shared memory, blocks per SM and what limits them), its SASS instruction mix, its memory traffic
as the emulator saw it, a bottleneck model with the kernel's point on the roofline, and on a GPU
the profiler's counters (Nsight Compute). Findings are ranked by the model's numbers, so the first
names the main bottleneck and the notebook section that teaches the fix.

    machine    the GPUs' limits (per arch) and the modelled H100's rates, each with its source
    occupancy  blocks per SM and what limits them
    sass       cubin (NVRTC, ptxas -v) -> SASS (nvdisasm) -> the main loop's instruction mix
    model      per main-loop iteration: cycles of each resource, the bound each sets (roofline)
    findings   the bottlenecks ranked, each one sentence + one next step + a notebook section
    measured   Nsight Compute counters of one launch (profile_target is the profiled process)
    panel      the panel: static part everywhere, measured part where counters can be read
May import grader.problems, grader.emu and grader.runtime (never grader.checking).
"""
