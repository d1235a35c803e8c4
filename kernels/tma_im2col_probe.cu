/*
 * tma_im2col_probe (Hopper: what one im2col copy of the Tensor Memory Accelerator gathers). Needs
 * sm_90 (cp.async.bulk.tensor, mbarrier complete_tx): never on the CPU emulator nor an older GPU.
 * One block issues ONE cp.async.bulk.tensor.4d ... .im2col copy (PTX ISA 9.7.9.25), exactly as
 * conv2d_wgmma_tma.cu's producer does (same tensor map: 128-byte swizzle, 64 channels per pixel),
 * waits on its mbarrier, and writes shared memory back to `out` un-swizzled: row i (one pixel) of
 * 64 fp16, its 16-byte chunk j read from j ^ (i % 8). The bench compares `out` with its model of
 * the copy (grader.bench.conv_tma.im2col_box): if the convolution is wrong and this is right, the
 * tensor maps, coordinates, offsets and the swizzle are not the cause; if this is wrong, they are.
 * Measured (kernels/RESULTS-conv.md, two H200s 2026-11-28: python -m grader.bench.conv_tma runs it before
 * the convolution's checks): every copy equal to the CPU model (134 of 134 copies at 4 shapes, both tile heights).
 * Signature: tma_im2col_probe(const void* tmap_x, unsigned short* out, int c0, int w0, int h0,
 *   int n0, int off_w, int off_h, int pixels): tmap_x as conv2d_wgmma_tma's (pixelsPerColumn =
 *   pixels, 64 or 128); out: pixels x 64 fp16 (as raw 16-bit words).
 * Launch: block (128, 1, 1), grid (1, 1, 1), dynamic shared memory pixels * 128 + 1024 + 8 bytes.
 * Requires: sm_90
 * Check:  python -m grader.bench.conv_tma
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "tma_im2col_probe needs sm_90 (cp.async.bulk.tensor with an mbarrier): an H100/H200"
#endif

extern "C" __global__ void tma_im2col_probe(const void* tmap_x, unsigned short* out, int c0, int w0, int h0, int n0,
                                            int off_w, int off_h, int pixels)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    const unsigned tile = (raw + 1023) & ~1023u;  // the 128-byte swizzle repeats every 1024 bytes
    const unsigned bar = tile + pixels * 128;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(pixels * 128) : "memory");
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n"
                     :: "r"(tile), "l"(tmap_x), "r"(c0), "r"(w0), "r"(h0), "r"(n0), "r"(bar),
                        "h"((unsigned short)off_w), "h"((unsigned short)off_h)
                     : "memory");
    }
    unsigned done = 0;
    while (!done) {  // every thread waits for phase 0 to complete (all bytes landed)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar) : "memory");
    }
    for (int i = threadIdx.x; i < pixels * 8; i += blockDim.x) {  // 8 chunks of 16 bytes per pixel
        const int row = i / 8, chunk = i % 8;
        const unsigned src = tile + row * 128 + ((chunk ^ (row % 8)) * 16);
        unsigned a, b, c, d;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(src));
        *reinterpret_cast<uint4*>(out + row * 64 + chunk * 8) = make_uint4(a, b, c, d);
    }
}
