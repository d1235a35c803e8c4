"""Launch checking: every bad input is refused with a message naming the argument."""
import numpy as np
import pytest

from grader.runtime.errors import LaunchArgumentError
from grader.runtime.launch import Limits, check_geometry, prepare
from grader.runtime.signature import parse_kernels

SRC = 'extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K) {}'
PARAMS = parse_kernels(SRC)["wmma_gemm"]


def good():
    return [np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float16),
            np.zeros((16, 16), np.float32), 16, 16, 16]


def refused(args, argument, *words, module="numpy"):
    with pytest.raises(LaunchArgumentError) as e:
        prepare("wmma_gemm", PARAMS, args, array_module=module)
    assert e.value.argument == argument
    for w in words:
        assert w in str(e.value), str(e.value)
    return e.value


def test_good_arguments_are_converted_to_c_types():
    out = prepare("wmma_gemm", PARAMS, good(), array_module="numpy")
    assert [type(x) for x in out[3:]] == [np.int32] * 3


def test_wrong_dtype_names_argument_and_type():
    args = good()
    args[0] = args[0].astype(np.float32)
    refused(args, "A", "float32", "const half* A", "float16")


def test_non_contiguous():
    args = good()
    args[1] = np.zeros((16, 16), np.float16).T
    refused(args, "B", "not C-contiguous")


def test_wrong_count_lists_parameters():
    e = refused(good()[:5], None, "takes 6 arguments", "A, B, C, M, N, K", "got 5")
    assert e.hint


def test_host_array_on_gpu():
    refused(good(), "A", "NumPy array in host memory", module="cupy")


def test_float_for_int():
    args = good()
    args[5] = 16.5
    refused(args, "K", "integer")


def test_int_out_of_range():
    args = good()
    args[3] = 2**40
    refused(args, "M", "does not fit")


def test_array_for_scalar():
    args = good()
    args[4] = np.zeros(3, np.int32)
    refused(args, "N", "single value")


def test_scalar_for_pointer():
    args = good()
    args[2] = 3.0
    refused(args, "C", "must be an array")


@pytest.mark.parametrize("grid, block, smem, argument, words", [
    ((1, 1), (33, 33), 0, "block", "1089 threads"),
    ((1, 1), (2048,), 0, "block", "above the limit 1024"),
    ((1, 1), (1, 1, 65), 0, "block", "dimension z"),
    ((0, 4), (32,), 0, "grid", "below 1"),
    ((1, 70000), (32,), 0, "grid", "dimension y"),
    ((1,), (32,), 300 * 1024, "shared_mem", "bytes"),
    ((1,), (32,), -1, "shared_mem", ">= 0"),
    ("big", (32,), 0, "grid", "tuple of 1 to 3 ints"),
])
def test_geometry(grid, block, smem, argument, words):
    with pytest.raises(LaunchArgumentError) as e:
        check_geometry(grid, block, smem, Limits())
    assert e.value.argument == argument and words in str(e.value), str(e.value)


def test_geometry_normalises():
    assert check_geometry(4, (32, 2), 0) == ((4, 1, 1), (32, 2, 1))


def test_signature_parsing():
    src = ('// extern "C" __global__ void commented(int x) {}\n'
           'extern "C" __global__ void __launch_bounds__(256) k(const float* __restrict__ a, '
           'double *b, unsigned int n, __nv_bfloat16* h) {}\n'
           'extern "C" __global__ void empty() {}\n')
    ks = parse_kernels(src)
    assert list(ks) == ["k", "empty"] and ks["empty"] == []
    a, b, n, h = ks["k"]
    assert (a.name, a.is_pointer, a.is_const, a.dtype) == ("a", True, True, np.float32)
    assert (b.name, b.is_const, b.dtype) == ("b", False, np.float64)
    assert (n.base, n.is_pointer, n.dtype) == ("unsigned int", False, np.uint32)
    assert h.dtype == np.uint16


def test_fp8_arrays_are_byte_codes():
    """cuda_fp8.h types have no NumPy dtype: their codes travel as uint8, and anything else is refused
    before launch (an fp32 array there would be read as four codes per value)."""
    src = 'extern "C" __global__ void f(const __nv_fp8_storage_t* A, __nv_fp8_e5m2* B, float s) {}'
    params = parse_kernels(src)["f"]
    codes = np.zeros(4, np.uint8)
    prepare("f", params, [codes, codes, 1.0], array_module="numpy")
    with pytest.raises(LaunchArgumentError, match="uint8"):
        prepare("f", params, [codes, np.zeros(4, np.float32), 1.0], array_module="numpy")
