// RMSNorm over rows as a CUDA engine writes it by hand: one block of 256 threads per row,
// 16-byte loads, each thread's sum of squares over its strided vectors, a warp shuffle
// reduction, the eight warp sums through shared memory, then `rsqrtf`.
//
// Buffers, in launch order: x (rows × cols f32), w (cols f32), y (rows × cols f32), and
// `shape` = { cols, eps as bits, rows } (u32). Launch: one block a row.

extern "C" __global__ void __launch_bounds__(256)
rmsnorm_rows(const float4* __restrict__ x, const float4* __restrict__ w, float4* __restrict__ y,
             const unsigned int* __restrict__ shape) {
    const unsigned int cols = shape[0];
    const float eps = __uint_as_float(shape[1]);
    const unsigned int vectors = cols / 4;
    const float4* row = x + (size_t)blockIdx.x * vectors;
    float4* out = y + (size_t)blockIdx.x * vectors;

    float sum = 0.0f;
    for (unsigned int v = threadIdx.x; v < vectors; v += blockDim.x) {
        const float4 a = row[v];
        sum += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    }
    __shared__ float warp_sums[8];
    const unsigned int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        warp_sums[warp] = sum;
    }
    __syncthreads();
    if (warp == 0) {
        sum = lane < 8 ? warp_sums[lane] : 0.0f;
        for (int offset = 4; offset > 0; offset >>= 1) {
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        }
        if (lane == 0) {
            warp_sums[0] = sum;
        }
    }
    __syncthreads();
    const float scale = rsqrtf(warp_sums[0] / (float)cols + eps);
    for (unsigned int v = threadIdx.x; v < vectors; v += blockDim.x) {
        const float4 a = row[v], g = w[v];
        out[v] = make_float4(a.x * scale * g.x, a.y * scale * g.y, a.z * scale * g.z, a.w * scale * g.w);
    }
}

// The same with one warp per row and four rows a block: no shared memory, no block barrier, the
// kind of variant an engine tunes to for rows of a few thousand values.
//
// Buffers as above. Launch: ceil(rows / 4) blocks.
extern "C" __global__ void __launch_bounds__(128)
rmsnorm_rows_warp(const float4* __restrict__ x, const float4* __restrict__ w, float4* __restrict__ y,
                  const unsigned int* __restrict__ shape) {
    const unsigned int cols = shape[0], rows = shape[2];
    const float eps = __uint_as_float(shape[1]);
    const unsigned int vectors = cols / 4;
    const unsigned int r = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) {
        return;
    }
    const float4* row = x + (size_t)r * vectors;
    float4* out = y + (size_t)r * vectors;
    float sum = 0.0f;
    for (unsigned int v = lane; v < vectors; v += 32) {
        const float4 a = row[v];
        sum += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    }
    const float scale = rsqrtf(sum / (float)cols + eps);
    for (unsigned int v = lane; v < vectors; v += 32) {
        const float4 a = row[v], g = w[v];
        out[v] = make_float4(a.x * scale * g.x, a.y * scale * g.y, a.z * scale * g.z, a.w * scale * g.w);
    }
}
