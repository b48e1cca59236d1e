// RMSNorm of one vector as a CUDA engine writes it by hand: one block of 1024 threads, each
// summing the squares of a stride of the values, a warp shuffle then a shared-memory sum across
// the warps, `rsqrtf`, and the scale applied per value.
//
// Buffers: x, w, y (f32, n each), params { n, eps's bits } (u32). Launch: one block of 1024.
extern "C" __global__ void __launch_bounds__(1024)
rmsnorm_vector(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
               const unsigned int* __restrict__ params) {
    __shared__ float partial[32];
    const unsigned int n = params[0];
    const float eps = __uint_as_float(params[1]);
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float ss = 0.0f;
    for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) {
        ss += x[i] * x[i];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        ss += __shfl_xor_sync(0xffffffffu, ss, offset);
    }
    if (lane == 0) {
        partial[warp] = ss;
    }
    __syncthreads();
    ss = lane < blockDim.x / 32 ? partial[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) {
        ss += __shfl_xor_sync(0xffffffffu, ss, offset);
    }
    const float scale = rsqrtf(ss / (float)n + eps);
    for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) {
        y[i] = x[i] * scale * w[i];
    }
}
