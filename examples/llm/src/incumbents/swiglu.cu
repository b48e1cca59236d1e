// SwiGLU as a CUDA engine writes it by hand: one thread a value, `g / (1 + expf(-g)) * u` with
// the toolkit's `expf`.
// Buffers: gate_up (gate then up, n each), a (n), params { n } (u32). Launch: ceil(n / 256)
// blocks of 256.
extern "C" __global__ void __launch_bounds__(256)
swiglu_f32(const float* __restrict__ gate_up, float* __restrict__ a, const unsigned int* __restrict__ params) {
    const unsigned int n = params[0];
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float g = gate_up[i];
        a[i] = g / (1.0f + expf(-g)) * gate_up[n + i];
    }
}
