// The engine's quantized matvec (activations quantized to Q8_1 blocks, then y = W·x for Q4_1 or
// Q8_0 weights) as a CUDA engine writes it by hand, on the engine's buffers and layout:
//
//   w      int4, k-major: vector v of block b of row r at (b·V + v)·rows + r (V = 1 for Q4_1,
//          2 for Q8_0); Q4_1 byte j holds weight j (low nibble) and j + 16 (high).
//   d, m   f32 scale and minimum of block b of row r at b·rows + r (m unused for Q8_0).
//   x      f32 activations, `cols` values.
//   params { rows, cols, accumulate } as u32 (accumulate: y += W·x, the residual add).
//   xq, xd scratch: 8 words and one f32 scale per block of 32 activations.
//   y      f32 output, `rows` values.
//
// The quantizer is the usual one: a warp per block, the absolute maximum by shuffles,
// d = amax / 127, q = roundf(x · (1 / d)). Two matvecs: one thread per row walking its blocks
// (the layout's own design), and one warp per row, lanes over blocks, summed by shuffles.

#define QK 32

extern "C" __global__ void __launch_bounds__(256)
quantize_q8_1_blocks(const float* __restrict__ x, int* __restrict__ xq, float* __restrict__ xd,
                     const unsigned int* __restrict__ params) {
    const unsigned int cols = params[1];
    const unsigned int block = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (block * QK >= cols) {
        return;
    }
    const float v = x[block * QK + lane];
    float amax = fabsf(v);
    for (int offset = 16; offset > 0; offset >>= 1) {
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int q = (int)roundf(v * id);
    // Four lanes' bytes make one word: gather them in lane 4k.
    const unsigned int byte = (unsigned int)(q & 0xff) << (8 * (lane % 4));
    unsigned int word = byte;
    word |= __shfl_down_sync(0xffffffffu, word, 1, 4);
    word |= __shfl_down_sync(0xffffffffu, word, 2, 4);
    if (lane % 4 == 0) {
        xq[block * 8 + lane / 4] = (int)word;
    }
    if (lane == 0) {
        xd[block] = d;
    }
}

template <bool Q4_1>
__device__ __forceinline__ float block_dot(const int4* __restrict__ w, const float* __restrict__ d,
                                           const float* __restrict__ m, const int4* __restrict__ xq,
                                           const float* __restrict__ xd, unsigned int rows, unsigned int row,
                                           unsigned int b) {
    const int4 x0 = xq[2 * b], x1 = xq[2 * b + 1];
    const float dx = xd[b];
    int sumi = 0;
    if (Q4_1) {
        const int4 v = w[b * rows + row];
        const int vs[4] = {v.x, v.y, v.z, v.w};
        const int lo[4] = {x0.x, x0.y, x0.z, x0.w}, hi[4] = {x1.x, x1.y, x1.z, x1.w};
        int sumx = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            sumi = __dp4a(vs[j] & 0x0f0f0f0f, lo[j], sumi);
            sumi = __dp4a((vs[j] >> 4) & 0x0f0f0f0f, hi[j], sumi);
            sumx = __dp4a(0x01010101, lo[j], sumx);
            sumx = __dp4a(0x01010101, hi[j], sumx);
        }
        const unsigned int at = b * rows + row;
        return d[at] * dx * (float)sumi + m[at] * dx * (float)sumx;
    } else {
        const int4 w0 = w[2 * b * rows + row], w1 = w[(2 * b + 1) * rows + row];
        sumi = __dp4a(w0.x, x0.x, sumi);
        sumi = __dp4a(w0.y, x0.y, sumi);
        sumi = __dp4a(w0.z, x0.z, sumi);
        sumi = __dp4a(w0.w, x0.w, sumi);
        sumi = __dp4a(w1.x, x1.x, sumi);
        sumi = __dp4a(w1.y, x1.y, sumi);
        sumi = __dp4a(w1.z, x1.z, sumi);
        sumi = __dp4a(w1.w, x1.w, sumi);
        return d[b * rows + row] * dx * (float)sumi;
    }
}

// One thread per row, blocks in order. Launch: ceil(rows / 128) blocks of 128.
template <bool Q4_1>
__device__ void matvec_rows(const int4* __restrict__ w, const float* __restrict__ d, const float* __restrict__ m,
                            const int4* __restrict__ xq, const float* __restrict__ xd,
                            const unsigned int* __restrict__ params, float* __restrict__ y) {
    const unsigned int rows = params[0], blocks = params[1] / QK;
    const unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) {
        return;
    }
    float acc = 0.0f;
    for (unsigned int b = 0; b < blocks; ++b) {
        acc += block_dot<Q4_1>(w, d, m, xq, xd, rows, row, b);
    }
    y[row] = params[2] ? y[row] + acc : acc;
}

// One warp per row, lane l over blocks l, l + 32, …, a shuffle sum. Launch: ceil(rows / 4)
// blocks of 128.
template <bool Q4_1>
__device__ void matvec_warp(const int4* __restrict__ w, const float* __restrict__ d, const float* __restrict__ m,
                            const int4* __restrict__ xq, const float* __restrict__ xd,
                            const unsigned int* __restrict__ params, float* __restrict__ y) {
    const unsigned int rows = params[0], blocks = params[1] / QK;
    const unsigned int row = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) {
        return;
    }
    float acc = 0.0f;
    for (unsigned int b = lane; b < blocks; b += 32) {
        acc += block_dot<Q4_1>(w, d, m, xq, xd, rows, row, b);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    }
    if (lane == 0) {
        y[row] = params[2] ? y[row] + acc : acc;
    }
}

extern "C" __global__ void __launch_bounds__(128)
matvec_q4_1_rows(const int4* __restrict__ w, const float* __restrict__ d, const float* __restrict__ m,
                 const int4* __restrict__ xq, const float* __restrict__ xd, const unsigned int* __restrict__ params,
                 float* __restrict__ y) {
    matvec_rows<true>(w, d, m, xq, xd, params, y);
}

extern "C" __global__ void __launch_bounds__(128)
matvec_q8_0_rows(const int4* __restrict__ w, const float* __restrict__ d, const float* __restrict__ m,
                 const int4* __restrict__ xq, const float* __restrict__ xd, const unsigned int* __restrict__ params,
                 float* __restrict__ y) {
    matvec_rows<false>(w, d, m, xq, xd, params, y);
}

extern "C" __global__ void __launch_bounds__(128)
matvec_q4_1_warp(const int4* __restrict__ w, const float* __restrict__ d, const float* __restrict__ m,
                 const int4* __restrict__ xq, const float* __restrict__ xd, const unsigned int* __restrict__ params,
                 float* __restrict__ y) {
    matvec_warp<true>(w, d, m, xq, xd, params, y);
}

extern "C" __global__ void __launch_bounds__(128)
matvec_q8_0_warp(const int4* __restrict__ w, const float* __restrict__ d, const float* __restrict__ m,
                 const int4* __restrict__ xq, const float* __restrict__ xd, const unsigned int* __restrict__ params,
                 float* __restrict__ y) {
    matvec_warp<false>(w, d, m, xq, xd, params, y);
}
