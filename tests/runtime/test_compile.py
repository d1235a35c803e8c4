"""NVRTC compiles (no GPU needed): every reference kernel with both stacks' NVRTC (13: sm_75
and up; 12: also Volta, sm_70), error lines, inspection."""
import re

import pytest

from grader.runtime import kernels, ptx
from grader.runtime.compile import nvrtc_compile, parse_log, parse_resources
from grader.runtime.errors import CompileError

# (stack, arch): NVRTC 13 for the CUDA 13 stack; NVRTC 12 (the CUDA 12 stack: Colab, 525-575
# drivers) for every arch the course's learners have, Volta included.
TARGETS = [("cuda13", 75), ("cuda13", 80), ("cuda13", 90),
           ("cuda12", 70), ("cuda12", 75), ("cuda12", 80), ("cuda12", 90)]


def min_arch(source: str) -> int:
    """Kernels that need Ampere say so in their header comment: `Requires: sm_80`."""
    m = re.search(r"Requires:\s*sm_(\d+)", source)
    return int(m.group(1)) if m else 70


def is_tensor_core_kernel(source: str) -> bool:
    """Kernels that multiply on tensor cores call mma_sync (some only load/store fragments), or
    issue mma.sync / wgmma.mma_async in inline PTX (notebook 10)."""
    return "mma_sync(" in source or bool(re.search(r'"(mma\.sync|mma\.sp|wgmma\.mma_async)', source))


@pytest.mark.parametrize("path", kernels.all_files(), ids=lambda p: p.name)
@pytest.mark.parametrize("stack,arch", TARGETS, ids=lambda t: str(t))
def test_reference_kernel_compiles(path, stack, arch, nvrtc_of):
    nvrtc_of(stack)
    src = path.read_text()
    if arch < min_arch(src):
        with pytest.raises(CompileError) as e:
            nvrtc_compile(src, arch=arch, resources=False, stack=stack)
        need = f"sm_{min_arch(src)}"
        assert need in str(e.value), f"a kernel that needs {need} should say so when compiled for less"
        return
    if re.search(r"Requires:\s*sm_90a", src):  # wgmma, setmaxnreg: the arch-specific target
        from grader.bench.mma import nvrtc_sm90a

        out = nvrtc_sm90a(src, stack=stack)
    else:
        out = nvrtc_compile(src, arch=arch, stack=stack)
    assert out.nvrtc[0] == int(stack[-2:])
    assert out.kernels, "no extern \"C\" __global__ kernel found"
    for name in out.kernels:
        assert name in out.resources, f"ptxas reported nothing for {name}"
        assert out.resources[name].spill_stores == 0, f"{name} spills registers on sm_{arch}"
    assert out.uses_tensor_cores == is_tensor_core_kernel(src), ptx.summary(out.ptx)


def test_there_are_reference_kernels():
    names = {p.stem for p in kernels.all_files()}
    assert {"sgemm_naive", "sgemm_tiled", "wmma_gemm_naive"} <= names


def test_error_points_at_the_users_line():
    src = kernels.source("sgemm_naive")
    lines = src.splitlines()
    target = next(i for i, l in enumerate(lines) if "acc +=" in l)
    lines[target] = lines[target].replace("acc +=", "acc += undefined_var +")
    with pytest.raises(CompileError) as e:
        nvrtc_compile("\n".join(lines), arch=90)
    err = e.value
    assert err.line == target + 1
    assert "undefined_var" in err.diagnostics[0].message
    assert "undefined_var" in err.diagnostics[0].source_line
    assert f"line {target + 1}" in str(err)


def test_missing_semicolon_line_and_hint():
    src = 'extern "C" __global__ void k(float* x)\n{\n    float y = 1.0f\n    x[0] = y;\n}\n'
    with pytest.raises(CompileError) as e:
        nvrtc_compile(src, arch=80)
    assert e.value.line in (3, 4)  # NVRTC reports the line where it noticed
    assert e.value.hint


def test_log_from_other_files_keeps_file_name():
    log = ('/x/include/mma.h(54): catastrophic error: cannot open source file "crt/mma.h"\n'
           'kernel.cu(2): warning #177-D: variable "q" was declared but never referenced\n')
    d = parse_log(log, "a\nfloat q;\n")
    assert d[0].line is None and "mma.h:54" in d[0].message and d[0].severity == "error"
    assert d[1].line == 2 and d[1].severity == "warning" and d[1].source_line == "float q;"


def test_line_offset_for_wrapped_sources():
    d = parse_log("kernel.cu(12): error: oops", "l1\nl2\nl3\n", line_offset=10)
    assert d[0].line == 2 and d[0].source_line == "l2"


def test_bf16_and_f64_need_sm80():
    src = ('#include <mma.h>\nusing namespace nvcuda;\n'
           'extern "C" __global__ void k(const double* a, double* c) {\n'
           '  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> f;\n'
           '  wmma::load_matrix_sync(f, a, 4);\n'
           '  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> g;\n'
           '  wmma::load_matrix_sync(g, a, 8);\n'
           '  wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;\n'
           '  wmma::fill_fragment(acc, 0.0);\n  wmma::mma_sync(acc, f, g, acc);\n'
           '  wmma::store_matrix_sync(c, acc, 8, wmma::mem_row_major);\n}\n')
    with pytest.raises(CompileError) as e:
        nvrtc_compile(src, arch=75)
    assert e.value.line == 4 and "sm_80" in e.value.hint
    ops = nvrtc_compile(src, arch=80).instructions
    assert [(o.shape, o.types) for o in ops] == [("m8n8k4", ("f64", "f64", "f64", "f64"))]


def test_ptx_scanner_kinds():
    text = """
    wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1}, {%r1}, {%r2}, {%f2};
    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f2};
    wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, 0, 1;
    wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r2}, [%rd8], %r1;
    // mma_sync is mentioned in a comment
    """
    ops = ptx.matrix_instructions(text)
    assert {(o.op, o.shape) for o in ops} == {
        ("wmma.mma", "m16n16k16"), ("mma", "m16n8k16"), ("wgmma.mma_async", "m64n128k16")}
    assert not ptx.uses_tensor_cores("ld.global.f32 %f1, [%rd1];\nfma.rn.f32 %f2, %f1, %f1, %f2;")


def test_parse_resources():
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
           "ptxas info    : Function properties for k\n"
           "ptxas         .     256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem\n")
    r = parse_resources(log)["k"]
    assert (r.registers, r.shared_bytes, r.stack_bytes, r.spill_stores, r.spill_loads) == (40, 8192, 256, 8, 12)


def test_nvrtc12_leaves_the_text_encoding_alone(nvrtc_of):
    """NVRTC 12 switches the thread to the "C" locale; left so, every later open() in the process
    would read ASCII (it broke half the suite once)."""
    import locale

    nvrtc_of("cuda12")
    before = locale.getpreferredencoding(False)
    nvrtc_compile(kernels.source("sgemm_naive"), arch=70, stack="cuda12")
    assert locale.getpreferredencoding(False) == before


def test_sm70_without_nvrtc12_says_how_to_get_it(monkeypatch):
    """A CUDA 13 machine without NVRTC 12: one message naming the extra, not a crash."""
    from grader.runtime import compile as C

    only13 = [nv for nv in C.nvrtc_lib.available() if nv.stack.name == "cuda13"]
    monkeypatch.setattr(C.nvrtc_lib, "available", lambda: list(only13))
    with pytest.raises(C.NoCompiler) as e:
        nvrtc_compile(kernels.source("wmma_gemm_naive"), arch=70)
    assert "NVRTC 12" in str(e.value) and ".[nvrtc12]" in e.value.hint


def test_tc_nvrtc_puts_a_stack_first(monkeypatch, nvrtc_of):
    from grader.runtime.compile import compiler_for

    nvrtc_of("cuda12")
    monkeypatch.setenv("TC_NVRTC", "cuda12")
    assert compiler_for(80).version[0] == 12
    monkeypatch.setenv("TC_NVRTC", "cuda13")
    assert compiler_for(80).version[0] == 13
    assert compiler_for(70).version[0] == 12  # only NVRTC 12 reaches Volta


def test_inspect_arch_70_on_a_cpu_machine(nvrtc_of, capsys):
    from grader.__main__ import main

    nvrtc_of("cuda12")
    assert main(["inspect", str(kernels.path("wmma_gemm_naive")), "--arch", "70"]) == 0
    out = capsys.readouterr().out
    assert "compiled for sm_70 by NVRTC 12.4" in out and "wmma.mma m16n16k16" in out
