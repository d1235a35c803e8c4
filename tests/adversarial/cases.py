"""The adversarial suite: kernels that must each fail with their own diagnosis.

Most are one deliberate bug applied to a reference kernel in kernels/ (so the reference
text keeps one home); two are whole files beside this one. `expect` lists the failure
kinds (Item.kind) that count as the right diagnosis; several where GPU and emulator see the
same bug differently (an illegal address on a GPU is a named out-of-bounds on the emulator).
"""
from dataclasses import dataclass
from pathlib import Path

from grader.runtime import kernels

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Bad:
    name: str
    exercise: str
    expect: tuple[str, ...]
    why: str
    base: str = ""  # reference kernel the bug is applied to
    old: str = ""
    new: str = ""

    def source(self) -> str:
        if not self.base:
            return (HERE / f"{self.name}.cu").read_text()
        src = kernels.source(self.base)
        assert self.old in src, f"{self.name}: the reference kernel {self.base} changed; update the case"
        return src.replace(self.old, self.new)


STORE = "    C[row * N + col] = acc;"
CASES = [
    Bad("compile_error", "wmma-gemm", ("compile-error",), "a missing semicolon",
        "wmma_gemm_naive", "wmma::mma_sync(acc, a, b, acc);", "wmma::mma_sync(acc, a, b, acc)"),
    Bad("wrong_result", "sgemm-naive", ("wrong-result",), "reads B with the row index",
        "sgemm_naive", "B[k * N + col]", "B[k * N + row % N]"),
    Bad("edge_off_by_one", "sgemm-tiled", ("edge",), "the last row of A is never loaded",
        "sgemm_tiled", "As[ty][tx] = (row < M && k0 + tx < K)", "As[ty][tx] = (row < M - 1 && k0 + tx < K)"),
    Bad("fp16_accumulation", "wmma-gemm", ("precision",), "accumulates in half"),
    Bad("nan_output", "sgemm-naive", ("nan",), "the accumulator starts as NaN",
        "sgemm_naive", "float acc = 0.0f;", "float acc = __int_as_float(0x7fc00000);"),
    Bad("never_written", "sgemm-naive", ("unwritten",), "only even rows are stored",
        "sgemm_naive", STORE, "    if (row % 2 == 0) C[row * N + col] = acc;"),
    Bad("write_past_end", "sgemm-naive", ("out-of-bounds",), "the overhanging threads store past the end of C",
        "sgemm_naive", "    if (row >= M || col >= N) return;  // the last blocks overhang the matrix edge\n"
                       "    float acc = 0.0f;\n    for (int k = 0; k < K; ++k)\n",
        "    float acc = 0.0f;\n    if (row < M && col < N)\n    for (int k = 0; k < K; ++k)\n"),
    Bad("infinite_loop", "sgemm-naive", ("timeout",), "the loop never advances",
        "sgemm_naive", "for (int k = 0; k < K; ++k)", "for (int k = 0; k < K; k += (K < 0))"),
    Bad("illegal_address", "sgemm-naive", ("illegal-address", "out-of-bounds", "crash"), "stores 16 GiB past C",
        "sgemm_naive", STORE, "    C[row * N + col + (1ll << 32)] = acc;"),
    Bad("no_tensor_cores", "wmma-gemm", ("no-tensor-cores",), "right answer on CUDA cores"),
    Bad("hard_coded", "sgemm-naive", ("wrong-result",), "an answer that ignores the inputs",
        "sgemm_naive", STORE, "    C[row * N + col] = 0.25f * K * (row == col);"),
    Bad("missing_syncthreads", "sgemm-tiled", ("race", "wrong-result"), "no barrier after loading the tiles",
        "sgemm_tiled", "        __syncthreads();  // the whole tile must be loaded before anyone reads it\n", ""),
]
