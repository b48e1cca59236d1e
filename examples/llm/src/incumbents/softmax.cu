// The attention softmax as a CUDA engine writes it by hand: one warp per head, lanes striding
// over the positions, the maximum and the sum by shuffles, `expf`, and one reciprocal of the
// sum multiplied in. In place on the engine's scores.
//
// Buffers: s (f32, heads × context, the first n of each head in use), params { heads, context,
// n } (u32). Launch: ceil(heads / 4) blocks of 128.
extern "C" __global__ void __launch_bounds__(128)
softmax_warp(float* __restrict__ s, const unsigned int* __restrict__ params) {
    const unsigned int heads = params[0], context = params[1], n = params[2];
    const unsigned int head = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (head >= heads) {
        return;
    }
    float* row = s + (size_t)head * context;
    float m = __uint_as_float(0xff800000u);  // −∞
    for (unsigned int j = lane; j < n; j += 32) {
        m = fmaxf(m, row[j]);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    }
    float sum = 0.0f;
    for (unsigned int j = lane; j < n; j += 32) {
        const float e = expf(row[j] - m);
        row[j] = e;
        sum += e;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    }
    const float inv = 1.0f / sum;
    for (unsigned int j = lane; j < n; j += 32) {
        row[j] *= inv;
    }
}
