"""problems: what each kind of exercise computes.

Inputs, launch geometry, float64 references and tolerances (`kinds`, `gemm`, `conv`,
`fragments`, `numerics`), the library baselines a speed is compared with (`baselines`), and
the references of the lecture-demo kernels no exercise grades (`demos`, `precisions`).
May import grader.runtime only.
"""
