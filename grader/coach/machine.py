"""What the coach knows about the GPUs: per-arch limits (occupancy) and the rates of the GPU it
models (an H100 SXM, the course's GPU) for the bottleneck model.

Limits: CUDA C++ Programming Guide, "Compute Capabilities" table (registers per SM, shared memory
per SM and per block, threads, blocks and warps per SM), and its note that from compute capability
8.0 on, 1 KB of shared memory per block is reserved by the system. Registers are allocated per
warp in units of 256 (the CUDA Occupancy Calculator's "register allocation unit size").
Rates: measured on the course's H100/H200 (FACTS.md, kernels/RESULTS-*.md) where we have them;
the L2 bandwidth is the median of the peaks Nsight Compute's L2 throughput implies on the course's
H100 SXM (kernels/coach-h100.json, 2026-11-26: lts__t_sectors x 32 B / duration / the
lts__throughput percentage, for the 13 kernels of both ladders and the coach's fixtures: 5.3 to
11.0 TB/s, median 9.79 TB/s; cuBLAS's launch gave 10.6). The 5.5 TB/s used before (Chips and Cheese,
"Nvidia's H100: Funny L2, and Tons of Bandwidth", 2023-07-02) was an H100 PCIe's, and the swizzled
rung ran above the bound it set. The load latency is an assumption of the model (said so wherever
it is used).
"""
from __future__ import annotations

from dataclasses import dataclass

KB = 1024


@dataclass(frozen=True)
class Limits:
    arch: int
    regs_per_sm: int = 65536
    max_regs_per_thread: int = 255
    reg_unit: int = 256  # registers are allocated per warp in multiples of this
    smem_per_sm: int = 228 * KB
    smem_per_block: int = 227 * KB  # the most one block may opt in to
    smem_reserved: int = KB  # per block, from sm_80 on
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    threads_per_block: int = 1024

    @property
    def warps_per_sm(self) -> int:
        return self.threads_per_sm // 32


LIMITS = {
    70: Limits(70, smem_per_sm=96 * KB, smem_per_block=96 * KB, smem_reserved=0),
    75: Limits(75, smem_per_sm=64 * KB, smem_per_block=64 * KB, smem_reserved=0, threads_per_sm=1024,
               blocks_per_sm=16),
    80: Limits(80, smem_per_sm=164 * KB, smem_per_block=163 * KB),
    86: Limits(86, smem_per_sm=100 * KB, smem_per_block=99 * KB, threads_per_sm=1536, blocks_per_sm=16),
    89: Limits(89, smem_per_sm=100 * KB, smem_per_block=99 * KB, threads_per_sm=1536, blocks_per_sm=24),
    90: Limits(90),
}


def limits(arch: int) -> Limits:
    return LIMITS.get(arch) or LIMITS[max(a for a in LIMITS if a <= arch)] if arch >= 70 else LIMITS[70]


@dataclass(frozen=True)
class Rates:
    """The modelled GPU's rates, per SM and clock unless said otherwise."""

    name: str
    sms: int
    clock_hz: float
    # FLOP per clock per SM that each kind of math reaches at best
    tensor_f16: float
    tensor_f64: float
    fp32: float
    l2_bytes_per_s: float
    dram_bytes_per_s: float
    smem_bytes_per_clk: int = 128  # 32 banks x 4 bytes: one wavefront per clock
    load_latency: int = 600  # cycles a global load takes under load (an assumption of the model)
    # Warps per scheduler (SM sub-partition) that keep the tensor pipe fed: with w of them it reaches at
    # most w / this of its rate. H100, 2026-11-26 (kernels/RESULTS-mma.md): mma_gemm_tuned at 2 warps per
    # scheduler kept the pipe 75-80% busy with `wait` (dependent-issue latency) its top stall.
    tensor_warps: float = 2.5
    # L1 passes one wavefront per clock; a warp request's sectors beyond the fewest that hold its bytes
    # (uncoalesced) mostly lie in cache lines of their own, one wavefront each (NVIDIA's L1TEX model:
    # requests:wavefronts 1:N). Against issue #35's H100 run: a WMMA GEMM with 2-byte loads at 32 sectors
    # per request ran at 3.5% of cuBLAS (~23 TFLOP/s); tests/coach_kernels/uncoalesced_2byte.cu, the same
    # defect, is modelled at ~30 with this rate and ~80 at four sectors (128 bytes) per clock.
    scattered_sectors_per_clk: float = 1.0
    # Warp instructions per clock per SM on the narrow pipes (CUDA C++ Programming Guide, "Arithmetic
    # Instructions", compute capability 9.0: fp64 64 results per clock per SM, conversions and special functions
    # 16). Not issue (4 per clock per SM): a loop's SASS also holds the predicated-off copy code the emulator
    # sees skipped, and with it the course's first WMMA rung (measured: shared-memory stalls, 6-way conflicts)
    # came out issue-bound. "alu": 32-bit integer add, compare, select, shift and bitwise ops, 64 results per clock
    # per SM (the same table), a pipe of its own beside the fp32 math.
    pipe_per_clk: tuple = (("fp64", 2.0), ("convert", 0.5), ("mufu", 0.5), ("alu", 2.0))

    def per_clk(self, per_s: float) -> float:
        return per_s / (self.sms * self.clock_hz)

    def tflops(self, flop_per_clk_sm: float) -> float:
        return flop_per_clk_sm * self.sms * self.clock_hz / 1e12


_SMS, _CLK = 132, 1.98e9  # H100 SXM / H200: 132 SMs; 1980 MHz SM clock under load (RESULTS-wmma.md)
H100 = Rates(
    "H100 SXM (modelled)", _SMS, _CLK,
    # mma.sync/WMMA m16n8k16 from registers only: 625 TFLOP/s measured (FACTS.md, turn 3)
    tensor_f16=625e12 / (_SMS * _CLK),
    # cuBLAS fp64 (DMMA inside): 62.5 TFLOP/s measured (FACTS.md)
    tensor_f64=62.5e12 / (_SMS * _CLK),
    # cuBLAS fp32 without TF32: 51 TFLOP/s measured (FACTS.md)
    fp32=51e12 / (_SMS * _CLK),
    # median L2 peak implied by ncu on the course's H100 SXM (kernels/coach-h100.json, 13 kernels)
    l2_bytes_per_s=9.79e12,
    dram_bytes_per_s=3.0e12,  # HBM copy, measured (FACTS.md)
)

# Where the modelled rates come from, said under every panel's model.
RATES_SOURCE = ("model of an H100 SXM: tensor cores 625 TFLOP/s for mma.sync/WMMA fp16 (measured, "
                "registers only), fp64 62.5 and fp32 51 TFLOP/s (cuBLAS, measured), L2 9.8 TB/s (the median peak "
                "Nsight Compute implied on the course's H100), HBM 3.0 TB/s (measured copy), shared memory 128 B per clock per SM "
                "(CUDA guide), uncoalesced global sectors one per clock per SM (L1 wavefronts), per clock per SM 2 warp "
                "instructions of fp64 or of integer ALU ops, 0.5 of conversions or special functions (CUDA guide), a global load ~600 "
                "cycles (assumed)")
