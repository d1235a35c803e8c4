"""cuDNN through PyTorch: the library the course's convolution kernels are paired with (bench only;
torch is the GPU machine's own, not a course dependency)."""
from __future__ import annotations


def torch_or_none():
    """PyTorch where it is installed and sees a GPU, else None (the cuDNN rows then say so)."""
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - any broken install reads as "not here"
        return None


def conv(torch, x, w, pad: int):
    """cuDNN's convolution of NHWC x and KRSC w, warmed up, as a no-argument call: torch's conv2d in
    fp16 on NCHW views of the NHWC memory (channels_last)."""
    torch.backends.cudnn.benchmark = True
    xt = torch.from_dlpack(x).permute(0, 3, 1, 2)
    wt = torch.from_dlpack(w).permute(0, 3, 1, 2)
    conv_fn = lambda: torch.nn.functional.conv2d(xt, wt, padding=pad)  # noqa: E731
    for _ in range(3):
        conv_fn()
    torch.cuda.synchronize()
    return conv_fn
