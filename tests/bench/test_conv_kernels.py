"""Transpose, fragment probes, im2col, direct and tensor-core convolution.

CPU: every kernel compiles with NVRTC for sm_80 and sm_90 without spills, the WMMA ones hold
tensor-core instructions; the references in grader.conv agree with each other (direct ==
Toeplitz == im2col GEMM); the expected fragment maps cover each element exactly as FACTS.md
says. GPU (marked gpu): each kernel correct at several sizes, the measured fragment maps equal
the expected ones, the tensor-core convolution beats im2col + cuBLAS.
"""
import secrets

import numpy as np
import pytest

from grader.problems import conv, fragments, numerics
from grader.runtime import kernels
from grader.runtime.compile import nvrtc_compile

FILES = ["transpose_naive", "transpose_tiled", "fragment_probe", "im2col",
         "conv2d_direct_tiled", "conv2d_implicit_wmma"]
WMMA_FILES = {"fragment_probe", "conv2d_implicit_wmma"}
# Configurations of the tensor-core convolution that must compile without spills.
CONFIGS = [conv.WmmaConfig(),
           conv.WmmaConfig(block_n=64, threads=128, stages=4),
           conv.WmmaConfig(threads=256, block_k=64, stages=3),
           conv.WmmaConfig(block_n=256, threads=256, stages=3),
           conv.WmmaConfig(block_m=256, threads=256, warps_m=4, stages=3)]


# ----------------------------------------------------------------------------- compile (CPU)

@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("name", FILES)
def test_compiles_without_spills(name, arch):
    src = kernels.source(name)
    out = nvrtc_compile(src, arch=arch)
    assert out.kernels
    for k, r in out.resources.items():
        assert r.spill_stores == 0 and r.spill_loads == 0, f"{k} spills on sm_{arch}"
    assert out.uses_tensor_cores == (name in WMMA_FILES)


@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_conv_wmma_configs_compile(cfg):
    out = nvrtc_compile(kernels.source("conv2d_implicit_wmma"), arch=90, options=cfg.options)
    r = out.resources["conv2d"]
    assert r.spill_stores == 0 and r.stack_bytes == 0
    assert any(op.shape == "m16n16k16" for op in out.instructions)


def test_headers_state_the_contracts():
    for name in FILES:
        head = kernels.source(name).split("*/")[0]
        assert "Launch:" in head and "Check:" in head, name
    assert "Requires: sm_80" in kernels.source("fragment_probe")
    params = [p.ctype for p in nvrtc_compile(kernels.source("conv2d_implicit_wmma"), arch=90,
                                             resources=False).kernels["conv2d"]]
    assert params == ["const half*", "const half*", "float*"] + ["int"] * 8


def test_probe_kernel_names_match_kinds():
    names = set(nvrtc_compile(kernels.source("fragment_probe"), arch=80,
                              resources=False).kernels)
    assert {k.kernel for k in fragments.KINDS.values()} == names


# ----------------------------------------------------------------------------- references (CPU)

@pytest.mark.parametrize("H,W,R", [(5, 7, 3), (8, 8, 5), (1, 6, 3), (4, 3, 1)])
def test_toeplitz_equals_direct(H, W, R):
    rng = np.random.default_rng(H * 100 + W * 10 + R)
    img, mask = rng.standard_normal((H, W)), rng.standard_normal((R, R))
    out = conv.conv2d_same(img, mask)
    np.testing.assert_allclose(conv.toeplitz_matrix(H, W, mask) @ img.ravel(), out.ravel(),
                               rtol=1e-12, atol=1e-12)
    # and the same as the multi-channel direct convolution with N = C = K = 1
    y = conv.conv2d_nchw_direct(img[None, None], mask[None, None], pad=R // 2)
    np.testing.assert_allclose(y[0, 0], out, rtol=1e-12, atol=1e-12)


def test_conv2d_same_by_hand():
    img = np.arange(9.0).reshape(3, 3)
    mask = np.zeros((3, 3))
    mask[0, 0] = 1.0  # reads the upper-left neighbour
    expect = np.array([[0, 0, 0], [0, 0, 1], [0, 3, 4]], dtype=float)
    np.testing.assert_array_equal(conv.conv2d_same(img, mask), expect)


@pytest.mark.parametrize("N,C,H,W,K,R,S,pad,stride", [
    (2, 3, 5, 7, 4, 3, 3, 1, 1), (1, 2, 6, 6, 3, 3, 3, 0, 2), (3, 1, 4, 5, 2, 1, 3, 1, 1),
    (1, 4, 7, 5, 2, 5, 3, 2, 2)])
def test_im2col_gemm_equals_direct(N, C, H, W, K, R, S, pad, stride):
    rng = np.random.default_rng(N + C + H + W + K)
    x, w = rng.standard_normal((N, C, H, W)), rng.standard_normal((K, C, R, S))
    y = conv.conv2d_nchw_direct(x, w, pad, stride)
    P, Q = conv.out_size(H, R, pad, stride), conv.out_size(W, S, pad, stride)
    col = conv.im2col_nchw(x, R, S, pad, stride)
    assert col.shape == (N * P * Q, C * R * S)
    gemm = (col @ w.reshape(K, -1).T).reshape(N, P, Q, K).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(gemm, y, rtol=1e-12, atol=1e-12)


def test_im2col_element_by_contract():
    rng = np.random.default_rng(5)
    N, C, H, W, R, S, pad, stride = 2, 3, 5, 4, 3, 2, 1, 2
    x = rng.standard_normal((N, C, H, W))
    col = conv.im2col_nchw(x, R, S, pad, stride)
    P, Q = conv.out_size(H, R, pad, stride), conv.out_size(W, S, pad, stride)
    for n, p, q, c, r, s in [(1, 2, 1, 2, 2, 1), (0, 0, 0, 0, 0, 0), (1, P - 1, Q - 1, 1, 1, 0)]:
        h, w_ = p * stride - pad + r, q * stride - pad + s
        expect = x[n, c, h, w_] if 0 <= h < H and 0 <= w_ < W else 0.0
        assert col[(n * P + p) * Q + q, (c * R + r) * S + s] == expect


@pytest.mark.parametrize("N,C,H,W,K,R,S,pad", [(2, 3, 5, 7, 4, 3, 3, 1), (1, 8, 4, 4, 2, 1, 1, 0),
                                               (2, 2, 6, 3, 3, 3, 2, 2)])
def test_nhwc_reference_equals_direct(N, C, H, W, K, R, S, pad):
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((N, H, W, C)), rng.standard_normal((K, R, S, C))
    ref, abs_ref = conv.conv2d_nhwc_reference(x, w, pad, rows_per_chunk=7)
    y = conv.conv2d_nchw_direct(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), pad)
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    np.testing.assert_allclose(ref, y.transpose(0, 2, 3, 1).reshape(N * P * Q, K),
                               rtol=1e-12, atol=1e-12)
    assert (abs_ref >= np.abs(ref) - 1e-12).all()


def test_wmma_config_launch_rule():
    cfg = conv.WmmaConfig()
    assert cfg.grid(256, 14, 14, 512, 3, 3, 1) == (4, 392, 1)
    assert cfg.grid(3, 7, 9, 128, 3, 3, 1) == (1, 2, 1)  # M = 189 -> 2 blocks of 128 rows
    assert cfg.shared_bytes == 4 * 256 * 40 * 2
    assert cfg.supports(256, 512) and not cfg.supports(48, 512) and not cfg.supports(64, 192)


# ----------------------------------------------------------------------------- fragments (CPU)

@pytest.mark.parametrize("kind", [k for k in fragments.KINDS if fragments.has_expected(k)])
def test_expected_map_covers_each_element_once(kind):
    k = fragments.KINDS[kind]
    m = fragments.expected_map(kind)
    d = fragments.distinct_elements(kind)
    assert sorted(m[:, :d].ravel().tolist()) == list(range(k.rows * k.cols))
    for rep in range(d, m.shape[1], d):  # half A/B: x[i + d] repeats x[i]
        assert (m[:, rep:rep + d] == m[:, :d]).all()
    for r in range(k.rows):
        for c in range(k.cols):
            owners = fragments.expected_owner(kind, r, c)
            assert len(owners) == m.shape[1] // d
            assert all(m[lane, i] == r * k.cols + c for lane, i in owners)


def test_expected_map_facts_formulas():
    # FACTS.md: each lane holds one adjacent pair per 8x8 quadrant of a 16x16 tile.
    assert fragments.expected_element("a_f16_row", 0, 0) == (0, 0)
    assert fragments.expected_element("a_f16_row", 5, 1) == (1, 3)
    assert fragments.expected_element("a_f16_row", 5, 2) == (9, 2)
    assert fragments.expected_element("a_f16_row", 5, 4) == (1, 10)
    assert fragments.expected_element("b_f16_row", 6, 2) == (8 + 4, 1)
    assert fragments.expected_element("a_tf32", 7, 3) == (9, 7)
    assert fragments.expected_element("acc_f64", 7, 1) == (1, 7)
    assert fragments.expected_owner("acc_f32", 15, 15) == [(31, 7)]


def test_probe_inputs_hold_row_major_indices():
    for kind, k in fragments.KINDS.items():
        M = fragments.probe_input(kind)
        if k.memory == "uint16":
            vals = (M.astype(np.uint32) << 16).view(np.float32)
        else:
            vals = M.astype(np.float64)
        logical = vals[:k.rows * k.cols].reshape((k.cols, k.rows) if k.layout == "col"
                                                 else (k.rows, k.cols))
        if k.layout == "col":
            logical = logical.T
        assert (logical.ravel() == np.arange(k.rows * k.cols)).all(), kind


def test_measured_maps_file_if_recorded():
    if not fragments.MEASURED_JSON.exists():
        pytest.skip("kernels/fragment_maps_sm90.json not recorded yet")
    measured = fragments.measured_maps()
    assert set(measured) == set(fragments.KINDS)
    for kind, held in measured.items():
        assert fragments.has_expected(kind), kind
        assert (held == fragments.expected_map(kind)).all(), kind


# ----------------------------------------------------------------------------- GPU

def _module(name, options=()):
    from grader.runtime.gpu import GpuModule

    return GpuModule(kernels.source(name), options)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["transpose_naive", "transpose_tiled"])
def test_transpose_gpu(name):
    mod = _module(name)
    for rows, cols in [(1, 1), (33, 17), (1000, 1), (1, 1000), (257, 513), (1024, 768)]:
        cmp = conv.check_transpose(mod, rows, cols, secrets.randbits(32))
        assert cmp.ok, f"{rows}x{cols}: {cmp}"


@pytest.mark.gpu
def test_im2col_gpu():
    mod = _module("im2col")
    for shape in [(2, 3, 5, 7, 3, 3, 1, 1), (1, 4, 8, 8, 3, 3, 0, 2), (3, 2, 7, 5, 5, 3, 2, 2),
                  (2, 16, 14, 14, 3, 3, 1, 1)]:
        cmp = conv.check_im2col(mod, *shape, secrets.randbits(32))
        assert cmp.ok, f"{shape}: {cmp}"


@pytest.mark.gpu
def test_direct_conv_gpu():
    mod = _module("conv2d_direct_tiled")
    for H, W, R in [(1, 1, 3), (17, 33, 3), (64, 50, 5), (31, 16, 7), (100, 3, 15)]:
        cmp = conv.check_direct(mod, H, W, R, secrets.randbits(32))
        assert cmp.ok, f"{H}x{W} R={R}: {cmp}"


CONV_SHAPES = [  # N, C, H, W, K, R, S, pad
    (1, 32, 5, 7, 128, 3, 3, 1),  # M = 35 < BLOCK_M
    (3, 64, 7, 9, 128, 3, 3, 1),  # M = 189, not a multiple of 128
    (2, 32, 13, 11, 256, 3, 3, 0),  # no padding, odd H, W
    (2, 96, 9, 9, 128, 1, 1, 0),  # 1x1
    (1, 32, 6, 8, 128, 5, 3, 2),  # R != S, pad 2
    (8, 256, 14, 14, 512, 3, 3, 1),  # the TVM layer with batch 8
]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", CONFIGS[:3], ids=str)
def test_conv_wmma_gpu(cfg):
    mod = _module("conv2d_implicit_wmma", cfg.options)
    for shape in CONV_SHAPES:
        N, C, H, W, K, R, S, pad = shape
        if not cfg.supports(C, K):
            continue
        cmp = conv.check_conv_wmma(mod, cfg, *shape, secrets.randbits(32))
        assert cmp.ok, f"{shape}: {cmp}"


@pytest.mark.gpu
def test_conv_wmma_wrong_kernel_fails():
    """The check can fail: a kernel that drops the last K step is caught."""
    from grader.runtime.gpu import GpuModule

    src = kernels.source("conv2d_implicit_wmma")
    assert "const int KT = Kg / BLOCK_K;" in src
    mod = GpuModule(src.replace("const int KT = Kg / BLOCK_K;", "const int KT = Kg / BLOCK_K - 1;"))
    cmp = conv.check_conv_wmma(mod, conv.WmmaConfig(), 2, 64, 7, 7, 128, 3, 3, 1, 3)
    assert not cmp.ok


@pytest.mark.gpu
def test_fragment_maps_gpu():
    from grader.runtime.gpu import GpuModule

    mod = GpuModule(kernels.source("fragment_probe"))
    for kind in fragments.KINDS:
        held = fragments.measure(kind, mod)
        k = fragments.KINDS[kind]
        # every element of the matrix is held by some lane
        assert set(held.ravel().tolist()) == set(range(k.rows * k.cols)), kind
        if fragments.has_expected(kind):
            assert held.shape == fragments.expected_map(kind).shape, kind
            assert (held == fragments.expected_map(kind)).all(), kind


@pytest.mark.gpu
def test_conv_wmma_beats_im2col_cublas_at_tvm_shape():
    from grader.bench import conv as bench_conv

    r = bench_conv.time_conv(bench_conv.TVM_SHAPE, max_seconds=3.0, cudnn=False)
    assert r["speedup_vs_im2col_cublas"] >= bench_conv.SPEEDUP_TARGET, r


# ----------------------------------------------------------------------------- CPU emulator

needs_gxx = pytest.mark.skipif(__import__("shutil").which("g++") is None,
                               reason="the CPU emulator needs g++")


def _emu(name, options=()):
    from grader.runtime.backend import EmuModule

    return EmuModule(kernels.source(name), options)


@needs_gxx
@pytest.mark.parametrize("name", ["transpose_naive", "transpose_tiled"])
def test_transpose_emu(name):
    mod = _emu(name)
    for rows, cols in [(1, 1), (33, 17), (70, 1), (65, 97)]:
        a = conv.random_uniform((rows, cols), np.float32, rows * cols)
        out = np.full((cols, rows), np.nan, np.float32)
        grid, block = conv.transpose_launch(rows, cols)
        mod.launch("transpose", grid, block, [a, out, rows, cols])
        assert (out == a.T).all(), (rows, cols)


@needs_gxx
def test_im2col_and_direct_emu():
    mod = _emu("im2col")
    for N, C, H, W, R, S, pad, st in [(2, 3, 5, 7, 3, 3, 1, 1), (3, 2, 7, 5, 5, 3, 2, 2)]:
        x = conv.random_uniform((N, C, H, W), np.float16, 3)
        P, Q = conv.out_size(H, R, pad, st), conv.out_size(W, S, pad, st)
        col = np.full((N * P * Q, C * R * S), np.nan, np.float16)
        grid, block = conv.im2col_launch(N, C, H, W, R, S, pad, st)
        mod.launch("im2col", grid, block, [x, col, N, C, H, W, R, S, pad, st])
        assert (col == conv.im2col_nchw(x, R, S, pad, st)).all()
    mod = _emu("conv2d_direct_tiled")
    for H, W, R in [(17, 33, 3), (31, 16, 7)]:
        img = conv.random_uniform((H, W), np.float32, 1)
        m = conv.random_uniform((R, R), np.float32, 2)
        out = np.full((H, W), np.nan, np.float32)
        grid, block = conv.direct_launch(H, W)
        mod.launch("conv2d_direct", grid, block, [img, m, out, H, W, R])
        bound = numerics.gemm_bound(conv.conv2d_same(np.abs(img), np.abs(m)), R * R)
        assert numerics.compare(out, conv.conv2d_same(img, m), bound).ok


@needs_gxx
@pytest.mark.parametrize("cfg,shape", [
    (conv.WmmaConfig(), (3, 64, 7, 9, 128, 3, 3, 1)),
    (conv.WmmaConfig(block_n=64, threads=128), (1, 32, 6, 8, 64, 5, 3, 2)),
    (conv.WmmaConfig(threads=256, block_k=64, stages=3), (2, 64, 9, 9, 128, 1, 1, 0))], ids=str)
def test_conv_wmma_emu(cfg, shape):
    N, C, H, W, K, R, S, pad = shape
    x, w = conv.conv_inputs(N, C, H, W, K, R, S, 5, np)
    P, Q = conv.out_size(H, R, pad), conv.out_size(W, S, pad)
    y = np.full((N, P, Q, K), np.nan, np.float32)
    _emu("conv2d_implicit_wmma", cfg.options).launch(
        "conv2d", cfg.grid(N, H, W, K, R, S, pad), (cfg.threads, 1, 1),
        [x, w, y, N, C, H, W, K, R, S, pad], shared_mem=cfg.shared_bytes)
    ref, abs_ref = conv.conv2d_nhwc_reference(x, w, pad)
    cmp = numerics.compare(y.reshape(-1, K), ref, numerics.gemm_bound(abs_ref, R * S * C))
    assert cmp.ok, str(cmp)
