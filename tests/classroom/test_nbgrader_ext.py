"""Kernel solution regions become compilable C++ stubs in the student copy."""
import nbformat

from grader.classroom.nbgrader_ext import CudaClearSolutions
from grader.runtime.compile import nvrtc_compile


def cell(source, solution=True):
    c = nbformat.v4.new_code_cell(source)
    c.metadata["nbgrader"] = {"solution": solution, "grade": False, "locked": False,
                              "grade_id": "k", "schema_version": 3}
    return c


def clear(*cells):
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb, _ = CudaClearSolutions().preprocess(nb, {})
    return nb.cells


SRC = '''SRC = r"""
extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K)
{
    // BEGIN SOLUTION (about 6 lines)
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
    // END SOLUTION
}
"""'''


def test_cuda_region_becomes_a_cpp_stub_that_compiles():
    (c,) = clear(cell(SRC))
    assert "raise NotImplementedError" not in c.source
    assert "    // YOUR CODE HERE (about 6 lines)" in c.source
    assert "acc +=" not in c.source
    kernel = c.source.split('r"""')[1].rsplit('"""', 1)[0]
    out = nvrtc_compile(kernel, arch=80, resources=False)  # the stub compiles
    assert "sgemm" in out.kernels


def test_python_regions_keep_nbgraders_stub():
    (c,) = clear(cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"))
    assert "raise NotImplementedError()" in c.source and "return x" not in c.source


def test_the_grader_recognises_the_stub_it_leaves():
    """grader.checking.stubs looks for the very marker this preprocessor writes."""
    from grader.checking.stubs import unfilled

    (c,) = clear(cell(SRC))
    kernel = c.source.split('r"""')[1].rsplit('"""', 1)[0]
    (stub,) = unfilled(kernel)
    assert stub.part == "the body of sgemm" and stub.note == "(about 6 lines)"
    assert kernel.splitlines()[stub.line - 1].strip() == "// YOUR CODE HERE (about 6 lines)"
