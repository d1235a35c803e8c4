"""problems: what each kind of exercise computes.

Inputs, float64 references and tolerances (`kinds`, `gemm`, `conv`, `fragments`, `numerics`),
how every GEMM kernel is launched (`gemm_launch`: one description the exercises, the bench
ladders and the lessons read), the library baselines a speed is compared with (`baselines`), and
the references of the lecture-demo kernels no exercise grades (`demos`, `mma`, `precisions`).
May import grader.runtime only.
"""
