"""runtime: compile a kernel and run it, on either backend.

Holds NVRTC/CuPy compiling, CUDA headers, launch-argument checks, kernel signatures, PTX
summaries, device facts, timing, the reference kernels' sources and the course's errors.
May import nothing else of the course; the one arrow out is `backend.load(..., "emu")`, which
loads the CPU backend (grader.emu) by name when it is asked for.
"""
