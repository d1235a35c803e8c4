"""EmuModule: launch a compiled kernel module in a child process (emu_runner)."""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from grader.emu.compiler import Built, build_module, runner_path
from grader.emu.translate import Param, code_view
from grader.runtime import sandbox
from grader.runtime.errors import FaultLocation, KernelFault, KernelTimeout, LaunchArgumentError

# pointer element type -> accepted numpy dtypes
_DTYPES: dict[str, tuple[str, ...]] = {
    "float": ("float32",), "double": ("float64",),
    "half": ("float16",), "__half": ("float16",),
    "__nv_bfloat16": ("uint16", "bfloat16", "int16"), "nv_bfloat16": ("uint16", "bfloat16", "int16"),
    "int": ("int32",), "signed int": ("int32",), "int32_t": ("int32",),
    "unsigned": ("uint32",), "unsigned int": ("uint32",), "uint32_t": ("uint32",),
    "long long": ("int64",), "long long int": ("int64",), "int64_t": ("int64",), "long": ("int64",),
    "unsigned long long": ("uint64",), "unsigned long long int": ("uint64",), "uint64_t": ("uint64",),
    "size_t": ("uint64",), "unsigned long": ("uint64",),
    "short": ("int16",), "int16_t": ("int16",), "unsigned short": ("uint16",), "uint16_t": ("uint16",),
    "char": ("int8", "uint8"), "signed char": ("int8",), "int8_t": ("int8",),
    "unsigned char": ("uint8",), "uint8_t": ("uint8",), "bool": ("bool",),
    "float2": ("float32",), "float4": ("float32",), "double2": ("float64",),
    "int2": ("int32",), "int4": ("int32",), "uint2": ("uint32",), "uint4": ("uint32",),
    "half2": ("float16",), "__half2": ("float16",),
    # fp8 (<cuda_fp8.h>): codes as bytes, pairs and quads as their storage words
    "__nv_fp8_storage_t": ("uint8",), "__nv_fp8_e4m3": ("uint8",), "__nv_fp8_e5m2": ("uint8",),
    "__nv_fp8x2_storage_t": ("uint16",), "__nv_fp8x2_e4m3": ("uint16",), "__nv_fp8x2_e5m2": ("uint16",),
    "__nv_fp8x4_storage_t": ("uint32",), "__nv_fp8x4_e4m3": ("uint32",), "__nv_fp8x4_e5m2": ("uint32",),
}
_VOID = {"void"}

# scalar parameter type -> struct format
_SCALARS: dict[str, str] = {
    "float": "<f", "double": "<d", "half": "<e", "__half": "<e",
    "int": "<i", "signed int": "<i", "int32_t": "<i", "unsigned": "<I", "unsigned int": "<I", "uint32_t": "<I",
    "long long": "<q", "long long int": "<q", "int64_t": "<q", "long": "<q",
    "unsigned long long": "<Q", "unsigned long long int": "<Q", "uint64_t": "<Q", "size_t": "<Q",
    "unsigned long": "<Q", "short": "<h", "int16_t": "<h", "unsigned short": "<H", "uint16_t": "<H",
    "char": "<b", "signed char": "<b", "int8_t": "<b", "unsigned char": "<B", "uint8_t": "<B", "bool": "<?",
}


@dataclass
class EmuResult:
    stdout: str
    seconds: float
    # tensor-core instructions this launch executed: {(m, n, k): count}, one count per
    # warp-wide wmma::mma_sync or PTX mma.sync (the runner counts them as they run)
    tensor_ops: dict = field(default_factory=dict)

    @property
    def tensor_macs(self) -> int:
        """Multiply-adds done on (emulated) tensor cores in this launch."""
        return sum(m * n * k * c for (m, n, k), c in self.tensor_ops.items())


def _tensor_ops(report: str) -> dict:
    ops = {}
    for line in report.splitlines():
        if line.startswith("tensor="):
            m, n, k, c = (int(x) for x in line[len("tensor="):].split(","))
            ops[(m, n, k)] = ops.get((m, n, k), 0) + c
    return ops


def _dim3(v, what: str) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    t = tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise LaunchArgumentError(f"{what} must be 1 to 3 positive integers, got {v!r}", argument=what)
    return t + (1,) * (3 - len(t))


def _workers(meta: dict) -> int:
    env = os.environ.get("TC_EMU_WORKERS")
    if env:
        return max(1, int(env))
    if meta.get("device_globals"):
        return 1  # file-scope __device__ variables live in one process
    return max(1, min(2, os.cpu_count() or 1))


def _tmpdir() -> str:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="tc-emu-", dir=base)


def _ptx_names(text: str) -> str:
    """The runner names the cuda_pipeline.h primitives; a kernel that wrote its copies in PTX
    reads about those instead (the same operations, grader/emu/inline_ptx.py)."""
    text = re.sub(r"__pipeline_wait_prior\((\w+)\)", r"cp.async.wait_group \1", text)
    return (text.replace("__pipeline_wait_prior", "cp.async.wait_group")
            .replace("__pipeline_memcpy_async", "cp.async").replace("__pipeline_commit", "cp.async.commit_group"))


class EmuModule:
    """A kernel source compiled for the CPU emulator."""

    def __init__(self, built: Built, name: str, source: str):
        self._built = built
        self.name = name
        self.source = source
        self.kernels: dict[str, list[Param]] = {k: [Param(**p) for p in v] for k, v in built.meta["kernels"].items()}
        self.checked_shared = built.meta.get("checked", True)
        self.warnings: list[str] = built.meta.get("warnings", [])
        self.last_tensor_ops: dict = {}

    # -------------------------------------------------------------- arguments
    def _pack(self, kernel: str, args: Sequence) -> tuple[list[tuple[int, int, bytes, str]], list]:
        if kernel not in self.kernels:
            known = ", ".join(sorted(self.kernels)) or "none"
            raise LaunchArgumentError(f"no __global__ kernel named '{kernel}' (found: {known})", argument=None)
        params = self.kernels[kernel]
        if len(args) != len(params):
            sig = ", ".join(f"{p.ctype} {p.name}" for p in params)
            raise LaunchArgumentError(f"{kernel}({sig}) takes {len(params)} arguments, got {len(args)}",
                                      argument=params[len(args)].name if len(args) < len(params) else None)
        packed, arrays = [], []
        for p, a in zip(params, args):
            if p.is_pointer:
                if not isinstance(a, np.ndarray):
                    raise LaunchArgumentError(
                        f"argument '{p.name}' ({p.ctype}) must be a numpy array, got {type(a).__name__}",
                        argument=p.name)
                if not a.flags.c_contiguous:
                    raise LaunchArgumentError(f"argument '{p.name}' must be C-contiguous (use np.ascontiguousarray)",
                                              argument=p.name)
                want = _DTYPES.get(p.elem_ctype)
                if want is not None and a.dtype.name not in want:
                    raise LaunchArgumentError(
                        f"argument '{p.name}' is {p.ctype}: it needs a numpy array of dtype {' or '.join(want)}, "
                        f"got {a.dtype.name}", argument=p.name)
                item = a.dtype.itemsize
                if p.elem_ctype in ("float2", "int2", "uint2", "half2", "__half2"):
                    item *= 2
                elif p.elem_ctype in ("float4", "int4", "uint4"):
                    item *= 4
                elif p.elem_ctype == "double2":
                    item *= 2
                packed.append((1, item, a.tobytes(), p.name))
                arrays.append(a)
            else:
                if isinstance(a, np.ndarray) and a.ndim > 0:
                    raise LaunchArgumentError(f"argument '{p.name}' is a scalar {p.ctype}, got an array",
                                              argument=p.name)
                base = " ".join(re.sub(r"\b(const|volatile)\b", " ", p.ctype).split())
                fmt = _SCALARS.get(base)
                if fmt is None:
                    raise LaunchArgumentError(f"the emulator cannot pass a '{p.ctype}' by value (argument '{p.name}')",
                                              argument=p.name)
                try:
                    v = a.item() if isinstance(a, (np.generic, np.ndarray)) else a
                    if fmt in ("<f", "<d", "<e"):
                        data = struct.pack(fmt, float(v))
                    elif fmt == "<?":
                        data = struct.pack(fmt, bool(v))
                    else:
                        if isinstance(v, float) and not v.is_integer():
                            raise TypeError("a non-integer value for an integer parameter")
                        bits = struct.calcsize(fmt) * 8
                        iv = int(v)
                        if fmt[1].isupper():
                            iv &= (1 << bits) - 1
                        data = struct.pack(fmt, iv)
                except (TypeError, ValueError, struct.error, OverflowError) as e:
                    raise LaunchArgumentError(f"argument '{p.name}' ({p.ctype}): cannot convert {a!r}: {e}",
                                              argument=p.name) from None
                packed.append((0, len(data), data.ljust(8, b"\0"), p.name))
        return packed, arrays

    # -------------------------------------------------------------- running
    # the orders the runner can resume a block's threads in (its flag bits; blocks too for reverse)
    _ORDERS = {"forward": 0, "reverse": 1, "lanes-reversed": 4, "warps-reversed": 8}

    def _run(self, kernel, grid, block, packed, shared_mem, timeout, *, order="forward", check_uninit=False,
             traffic: list | None = None, tc_double=False, tc_key: int = 0):
        """One launch in a child process: (stdout, seconds, bytes of every pointer argument).
        `traffic`: a list that receives the runner's memory-traffic lines (a traffic build);
        `tc_double`: every matrix instruction computes (2A)B + C (a probe run); `tc_key` (not 0):
        every product's sign flipped by a hash of its operands and the key (a keyed probe run,
        grader.problems.signed_products)."""
        flags = (self._ORDERS[order] | (2 if check_uninit else 0) | (16 if traffic is not None else 0)
                 | (32 if tc_double else 0) | (64 if tc_key else 0))
        sym = f"__emu_tramp_{kernel}".encode()
        hdr = [struct.pack("<I", 0x31554D45), struct.pack("<6I", *grid, *block), struct.pack("<Q", int(shared_mem)),
               struct.pack("<II", flags, _workers(self._built.meta)),
               struct.pack("<I", min(int(self._built.meta.get("stack_bytes", 0)), 1 << 20)),
               struct.pack("<I", len(sym)), sym,
               struct.pack("<I", len(packed))]
        for kind, item, data, name in packed:
            nm = name.encode()
            hdr += [struct.pack("<IIQ", kind, item, len(data)), struct.pack("<I", len(nm)), nm, data]
        tmp = _tmpdir()
        try:
            inp, out, rep = (os.path.join(tmp, n) for n in ("in.bin", "out.bin", "report.txt"))
            with open(inp, "wb") as f:
                f.write(b"".join(hdr))
            t0 = time.perf_counter()
            # the runner executes the student's code natively: sandboxed when grading (TC_SANDBOX)
            runner = runner_path()
            tr = os.path.join(tmp, "traffic.txt")
            cmd = [str(runner), str(self._built.so), inp, out, rep] + ([tr] if traffic is not None else [])
            box = sandbox.maybe_box(writable=[tmp], readable=[str(runner.parent), str(Path(self._built.so).parent)])
            try:
                # a keyed run's key on stdin, for the runner's parent only, never in a file a kernel could read
                key = struct.pack("<Q", int(tc_key) & (2**64 - 1)) if tc_key else None
                code, stdout, se, stopped = sandbox.run(cmd, timeout=timeout, box=box, input=key)
            finally:
                if box is not None:
                    box.close()
            if box is not None and box.exceeded:
                raise KernelFault("crash", f"kernel '{kernel}' was stopped on the CPU emulator: {box.exceeded}",
                                  hint="A kernel writes only its output arrays; nothing else should grow.")
            if stopped:
                raise KernelTimeout(
                    f"kernel '{kernel}' did not finish within {timeout:g} s on the CPU emulator "
                    f"(grid {grid}, block {block}): an infinite loop, or a wait that never ends",
                    seconds=timeout)
            seconds = time.perf_counter() - t0
            # the workers can write to it too (a kernel runs natively): bytes that are no text are not ours
            report = Path(rep).read_text(errors="replace") if os.path.exists(rep) else ""
            if code == 0:
                outputs = Path(out).read_bytes()
                self.last_tensor_ops = _tensor_ops(report)
                if traffic is not None and os.path.exists(tr):
                    traffic.extend(Path(tr).read_text().splitlines())
                return stdout, seconds, outputs
            if code == 3 and report:
                raise self._fault(kernel, report, stdout)
            raise KernelFault("crash", f"the emulator's runner failed (status {code}): {se.strip()[-2000:]}",
                              where=FaultLocation(extra={"stdout": stdout}))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # with whatever the kernel's code left there

    def _fault(self, kernel: str, report: str, stdout: str) -> KernelFault:
        rec: dict[str, str] = {}
        for line in report.splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                rec.setdefault(k, v.replace("\\n", "\n").replace("\\\\", "\\"))

        def tup(s):
            return tuple(int(x) for x in s.split(",")) if s else None

        line = int(rec["line"]) if rec.get("line") else None
        if line is None and rec.get("pcs"):
            line = self._line_from_pcs([x for x in rec["pcs"].split(",") if x])
        where = FaultLocation(
            thread=tup(rec.get("thread")), block=tup(rec.get("block")), line=line,
            argument=rec.get("argument"),
            index=int(rec["index"]) if rec.get("index") not in (None, "") else None,
            size=int(rec["size"]) if rec.get("size") not in (None, "") and int(rec["size"]) >= 0 else None,
            extra={"stdout": stdout, "kernel": kernel})
        kind = rec.get("kind", "crash")
        msg = rec.get("message", "the kernel failed")
        parts = [msg]
        if where.thread is not None:
            parts.append(f"thread {where.thread} of block {where.block}")
        elif where.block is not None:
            parts.append(f"block {where.block}")
        if line:
            lines = self.source.replace("\r\n", "\n").split("\n")
            src = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            parts.append(f"line {line}" + (f": {src}" if src else ""))
            where.extra["source_line"] = src
        text = "; ".join(parts[:1]) + ("\n  at " + ", ".join(parts[1:]) if len(parts) > 1 else "")
        hints = {
            "out-of-bounds": "Check the index against the array size; threads past the edge of the matrix need a guard (their row below M and column below N).",
            "shared-out-of-bounds": "Check the shared-memory index against the array's declared size (or shared_mem for extern __shared__).",
            "divergent-barrier": "Move __syncthreads() out of the branch, or make every thread take the same path; guard work, not the barrier.",
            "partial-warp-collective": "All 32 lanes of the warp (or every lane in the mask) must reach a warp collective or WMMA call: do not return early before it.",
            "uninitialized-shared": "Some thread reads shared memory before any thread wrote it: a missing __syncthreads() between the writes and the reads, or a tile that is not fully loaded.",
            "assert": "An assert() in the kernel failed for this thread.",
            "wmma-ldm": "When K (or N) is not a multiple of 8, the rows of A (or B) are not 16-byte aligned, so even "
                        "full tiles cannot be loaded straight from global memory: copy them into shared memory "
                        "(as the edge tiles), whose row length is a multiple of 8 halves (16, or 24 with padding).",
            "misaligned-address": "A tile's first element must sit at a multiple of 32 bytes (16 halves, 8 floats) "
                                  "from the start of its matrix, and a vector access (float4, 16-byte copy, four fp8 "
                                  "codes as one unsigned) at a multiple of its size: check the offset you add to "
                                  "the pointer and the row length (ldm); where a row length is no multiple of the "
                                  "access's size, load or store element by element.",
            "async-copy": "Before any thread reads a tile, each thread waits for its own copies of it "
                          "(__pipeline_wait_prior(n) leaves only its n most recent commit groups in flight) and "
                          "then all meet at __syncthreads(); copies of a new tile go into a buffer no warp still "
                          "reads (with STAGES buffers: tile kt+STAGES-1 into the buffer of tile kt-1).",
        }
        hint = rec.get("hint") or hints.get(kind, "")
        if kind in ("divergent-barrier", "partial-warp-collective") and not re.search(r"\breturn\b", code_view(self.source)):
            # no `return` in the kernel: the threads that never arrive skipped the call inside a branch
            hint = ("Some threads of the block never reach this call: it sits inside an `if` (a bounds check, "
                    "a loop whose trip count differs between threads) that not all of them enter. Keep the "
                    "barrier or warp call outside the branch and guard only the loads and stores.")
        if kind == "uninitialized-shared" and "wmma::load_matrix_sync" in msg:
            hint = ("Every element of the 16x16 tile that load_matrix_sync reads from shared memory must be "
                    "written first: write 0 where the tile overhangs the matrix (the padding), and make the writes "
                    "visible to the warp (__syncwarp(), or __syncthreads() for a block) before the load.")
        if "cp.async" in self.source and "__pipeline_" not in code_view(self.source):  # copies in PTX:
            text, hint = _ptx_names(text), _ptx_names(hint)  # name what the kernel wrote
        return KernelFault(kind, text, where=where, hint=hint)

    def _line_from_pcs(self, pcs: list[str]) -> int | None:
        filename = self._built.meta.get("filename", f"{self.name}.cu")
        try:
            r = subprocess.run(["addr2line", "-e", str(self._built.so), "-i", "-a", *[f"0x{p}" for p in pcs]],
                               capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        found = {}
        for ln in r.stdout.splitlines():
            m = re.match(r"^(.*):(\d+)(?: \(discriminator \d+\))?$", ln.strip())
            if m and int(m.group(2)) > 0:
                found.setdefault(os.path.basename(m.group(1)), int(m.group(2)))
        # the user's file first; binutils 2.40 names DWARF 5's file entry 1 (the user's, via
        # #line) by entry 0, the translated kernel.cpp, when the source had nothing to rewrite
        # (same line numbers), but it also names the fault path's own frames so: only a fallback
        return found.get(filename, found.get("kernel.cpp"))

    def launch(self, kernel: str, grid, block, args: Sequence, *, shared_mem: int = 0, timeout: float = 60.0,
               race_check: bool = False, tc_double: bool = False, tc_key: int = 0) -> EmuResult:
        """Run `kernel` over `grid` x `block` with `args` (numpy arrays are updated in place).
        `tc_double`: a probe run in which every matrix instruction computes (2A)B + C; `tc_key`
        (not 0): a keyed probe run (every product's sign flipped by a hash of its operands)."""
        g, b = _dim3(grid, "grid"), _dim3(block, "block")
        if b[0] * b[1] * b[2] > 1024:
            raise LaunchArgumentError(f"a block has at most 1024 threads, got {b} = {b[0] * b[1] * b[2]}",
                                      argument="block")
        if shared_mem < 0:
            raise LaunchArgumentError("shared_mem must be >= 0", argument="shared_mem")
        packed, arrays = self._pack(kernel, args)
        # Reads of __shared__ elements no thread wrote are checked in the forward run only.
        # With race_check such a read does not end the check at once: a missing barrier
        # usually causes one too, and is better reported as the race it is. So the forward
        # run is repeated without the check and compared with the reversed run (which must
        # not check: there a racy kernel's reads come before the writes by design); if both
        # orders agree, the unwritten read is the diagnosis.
        unwritten = None
        try:
            stdout, seconds, outputs = self._run(kernel, g, b, packed, shared_mem, timeout, check_uninit=True,
                                                 tc_double=tc_double, tc_key=tc_key)
            tensor_ops = self.last_tensor_ops
        except KernelFault as e:
            if not race_check or e.kind != "uninitialized-shared":
                raise
            unwritten = e
            stdout, seconds, outputs = self._run(kernel, g, b, packed, shared_mem, timeout, tc_double=tc_double,
                                                 tc_key=tc_key)
            tensor_ops = self.last_tensor_ops
        if race_check:
            stdout2, seconds2, outputs2 = self._run(kernel, g, b, packed, shared_mem, timeout, order="reverse")
            seconds += seconds2
            if outputs2 != outputs:
                raise self._race(kernel, g, b, packed, shared_mem, timeout, arrays, outputs, outputs2, stdout,
                                 unwritten)
            if unwritten is not None:  # both orders agree: no barrier is missing, nobody writes it
                unwritten.hint = _never_written_hint(unwritten)
                raise unwritten
        off = 0
        for a in arrays:
            n = a.nbytes
            chunk = outputs[off: off + n]
            off += n
            if chunk != a.tobytes():
                np.copyto(a, np.frombuffer(chunk, dtype=a.dtype).reshape(a.shape))
        return EmuResult(stdout=stdout, seconds=seconds, tensor_ops=tensor_ops)

    def _race(self, kernel, grid, block, packed, shared_mem, timeout, arrays, out1: bytes, out2: bytes,
              stdout: str, unwritten: KernelFault | None) -> KernelFault:
        params = [p for p in self.kernels[kernel] if p.is_pointer]
        first = _first_difference(params, arrays, out1, out2)
        if first is None:
            return KernelFault("race", "missing __syncthreads() or a shared-memory race (outputs differ)")
        p, a, i, ndiff, v1, v2 = first
        nthreads = block[0] * block[1] * block[2]
        # Which reordering matters: the lanes within a warp, or whole warps?
        within_warp = nthreads <= 32
        if nthreads > 32:
            try:
                lanes = self._run(kernel, grid, block, packed, shared_mem, timeout, order="lanes-reversed")[2]
                warps = self._run(kernel, grid, block, packed, shared_mem, timeout, order="warps-reversed")[2]
                within_warp = lanes != out1 and warps == out1
            except (KernelFault, KernelTimeout):
                within_warp = False
        at = _index_text(p.name, a, i)
        missing = "a missing __syncwarp() or __syncthreads()" if within_warp else "a missing __syncthreads()"
        msg = (f"the result depends on the order the threads of a block run in ({missing}, or another "
               f"shared-memory race). Running each block's threads in order (thread 0, 1, 2, ...) and in "
               f"reverse order gave different values of '{p.name}' at {ndiff} element(s), first {at}: "
               f"{_fmt(v1)} in order, {_fmt(v2)} in reverse order")
        if within_warp:
            if nthreads <= 32:
                msg += (". The block is a single warp, so the race is between lanes of that warp")
            else:
                msg += (". Reordering whole warps changes nothing, reordering the lanes of each warp does: the "
                        "race is between lanes of one warp, over data each warp keeps to itself")
            hint = ("Put a __syncwarp() between a lane writing shared memory and other lanes of its warp "
                    "reading it (and before overwriting what they may still read); data shared by several "
                    "warps needs __syncthreads() instead.")
        else:
            hint = ("Put a __syncthreads() between writing shared memory and reading what other threads wrote "
                    "(and before overwriting a tile others may still read).")
        if unwritten is not None:
            w = unwritten.where
            el = re.search(r"__shared__ (\w+(?:\[\d+\])+)", unwritten.message)  # by its declared dims
            msg += (f". In order, thread {w.thread} of block {w.block} read __shared__ "
                    f"{el[1] if el else repr(w.argument) + ' element ' + str(w.index)} before any thread wrote it"
                    + (f" (line {w.line}: {w.extra.get('source_line', '')})" if w.line else ""))
        where = FaultLocation(argument=p.name, index=i, size=int(a.size), extra={"stdout": stdout})
        if a.ndim >= 2:
            where.extra["index_nd"] = tuple(int(x) for x in np.unravel_index(i, a.shape))
        return KernelFault("race", msg, where=where, hint=hint)


def _never_written_hint(e: KernelFault) -> str:
    what = ("the 16x16 tile load_matrix_sync reads" if "load_matrix_sync" in e.message else
            "the matrices ldmatrix reads" if "ldmatrix" in e.message else "the shared array")
    return ("No thread of the block ever writes this element: running the threads in the opposite order "
            "reads the same unwritten element, so it is not a missing barrier. Every element of "
            f"{what} must be written before it is read: write 0 where a tile overhangs the matrix (the "
            "padding), and check the indices of the writes against those of the reads.")


def _first_difference(params, arrays, out1: bytes, out2: bytes):
    """(param, array, flat index, number of differing elements, value 1, value 2) of the first
    argument whose bytes differ between two runs, or None."""
    off = 0
    for p, a in zip(params, arrays):
        n = a.nbytes
        x = np.frombuffer(out1[off: off + n], dtype=a.dtype)
        y = np.frombuffer(out2[off: off + n], dtype=a.dtype)
        off += n
        bx = x.view(np.uint8).reshape(-1, a.dtype.itemsize)
        by = y.view(np.uint8).reshape(-1, a.dtype.itemsize)
        diff = np.flatnonzero((bx != by).any(axis=1))
        if diff.size:
            i = int(diff[0])
            return p, a, i, int(diff.size), x[i], y[i]
    return None


def _index_text(name: str, a: np.ndarray, i: int) -> str:
    """name[r, c] for an array of 2 or more dimensions, else name[i]."""
    if a.ndim >= 2:
        return f"{name}[{', '.join(str(int(x)) for x in np.unravel_index(i, a.shape))}]"
    return f"{name}[{i}]"


def _fmt(v) -> str:
    if isinstance(v, (np.floating, float)):
        return f"{float(v):.6g}"
    if isinstance(v, (np.integer, int, np.bool_)):
        return str(int(v))
    return str(v)


def compile_module(source: str, *, options: Sequence[str] = (), name: str = "kernel",
                   traffic: bool = False) -> EmuModule:
    """Compile a CUDA C++ source for the CPU emulator (cached on disk). `traffic`: a build whose
    loads and stores are observed (grader.emu.traffic), slower; for that view only."""
    if not re.match(r"^[A-Za-z_][\w.-]*$", name):
        name = "kernel"
    built = build_module(source, tuple(options), name, traffic=traffic)
    runner_path()
    return EmuModule(built, name, source)
