"""The seeds' own numbers, in one place, each with the source and the spot it was read from.

Notebook 09 shows them beside this GPU's measurements of the same workloads; other notebooks
cite the same papers by the names below. Numbers were read from the source texts (the course's
copies: ../shared/seeds/ beside the repository, README there); nothing here is estimated.

    PAPER, PAPER_CPU_MS, PAPER_GPU_MS, PAPER_SETUP     the Salerno paper (Table I, Fig. 6 text)
    TVM_RFC, TVM_TITAN_V_MS, TVM_SETUP                 apache/tvm RFC #4052 (its Performance list)
"""
from __future__ import annotations

# ----------------------------------------------------------------------------- the Salerno paper
PAPER = dict(
    title="Tensor Unit Evaluation",
    authors="G. Arienzo, F. Coppola, L. Squitieri",
    affiliation="Department of Computer Science, University of Salerno",
    short="the Salerno paper",
)
PAPER_CITATION = f"{PAPER['authors']} ({PAPER['affiliation']}), \"{PAPER['title']}\""

# Table I: mean of 5 runs, ms, of the OpenMP CPU GEMM (their listing 2), square n.
PAPER_CPU_MS = {1024: 40.72, 2048: 545.93, 4096: 20896.34, 8192: 203777.52, 16384: 170707903.63}
# Table I's 16384 entry is 100x the figure the text quotes for the same run ("1707 secs"); 1707 s
# is what n^3 growth from 8192 predicts (203.8 s x 8 = 1630 s), so plots and speedups use it and
# the tables show both.
PAPER_CPU_16384_TEXT_MS = 1707e3
# Section IV's text on Fig. 6 (the figure itself is a plot): n = 16384 only, ms.
PAPER_GPU_MS = {"cuda_cores": {16384: 9073.0}, "tensor_cores": {16384: 3138.0}}
PAPER_SETUP = dict(
    cpu="AMD Ryzen 5 3600 (6 cores, 12 threads)",
    cpu_code="OpenMP tiled loop nest, 16-wide tiles (listing 2)",
    gpu="GeForce RTX 2060 (Turing, sm_75, 30 SMs, 240 tensor cores, 336 GB/s)",
    cuda_cores_code="shared-memory tiled SGEMM (listing 3; notebook 03's sgemm_tiled)",
    tensor_cores_code="one warp per 16x16 tile of C, fragments loaded from global memory "
                      "(listings 4-5; notebook 04's wmma_gemm_naive)",
    statistic="mean of 5 runs",
    where="Section IV: setup list, Table I, and the paragraph under Fig. 6",
)


def paper_cpu_ms(n: int) -> float | None:
    """The paper's CPU time at n, ms, with 16384 taken from its text (see PAPER_CPU_16384_TEXT_MS)."""
    return PAPER_CPU_16384_TEXT_MS if n == 16384 else PAPER_CPU_MS.get(n)


# ----------------------------------------------------------------------------- the TVM RFC
TVM_RFC = dict(
    title="[RFC] Tensor Core Support",
    where="apache/tvm issue #4052 (2019), section Performance",
    url="https://github.com/apache/tvm/issues/4052",
)
TVM_CITATION = f"{TVM_RFC['where']}, \"{TVM_RFC['title']}\", {TVM_RFC['url']}"
# ms on a TITAN V, as listed: (workload, implementation) -> ms. "tvm" is TVM's generated code,
# "library" cuBLAS for the GEMM and cuDNN for the convolution.
TVM_TITAN_V_MS = {
    ("gemm", "tvm", False): 11.7415,
    ("gemm", "library", False): 11.462592,
    ("gemm", "tvm", True): 2.795257,
    ("gemm", "library", True): 1.787328,
    ("conv2d", "tvm", False): 10.943293,
    ("conv2d", "library", False): 4.990112,
    ("conv2d", "tvm", True): 2.397308,
    ("conv2d", "library", True): 1.750688,
}
TVM_WORKLOADS = {
    "gemm": "GEMM 4096x4096x4096, mixed precision",
    "conv2d": "conv2d batch 256, 256 -> 512 channels, 14x14, 3x3 (pad 1)",
}
TVM_SETUP = dict(
    gpu="TITAN V (Volta, sm_70)",
    code="TVM's tensorized schedules (2019) and that year's cuBLAS / cuDNN",
    precision="'mixed precision' for the GEMM; the RFC does not say what 'without tensor cores' ran in",
)
