"""bench: measuring on a GPU.

`reference` (reference kernels vs cuBLAS; `python -m grader.bench`), `wmma` (the WMMA ladder),
`mma` (the mma.sync ladder), `fp8` (notebook 11's FP8 and 2:4-sparse GEMMs vs cuBLASLt and
cuSPARSELt, through PyTorch when it is installed), `ladders` (which ladder an exercise is graded against),
`conv` (convolutions vs cuDNN), `conv_tma` (the Hopper convolution, wgmma fed by the TMA in im2col mode,
vs cuDNN), `calibrate` (the grader's thresholds), `crosscheck` (the CPU
emulator vs the GPU, every kernels/*.cu), `emu_speed` (the emulator's own speed) and `verdicts`
(every emulator verdict of every exercise and kernel, to compare before and after a change).
May import grader.checking and everything below it.
"""
