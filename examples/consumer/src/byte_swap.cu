// The byte swap as an engine writes it by hand in CUDA C++: one thread a word, `__byte_perm`.
// Buffers: words, out, n = { word count } (u32). Launch: ceil(n / 256) blocks of 256.
extern "C" __global__ void __launch_bounds__(256)
byte_swap_words(const unsigned int* __restrict__ words, unsigned int* __restrict__ out,
                const unsigned int* __restrict__ n) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n[0]) {
        out[i] = __byte_perm(words[i], 0, 0x0123);
    }
}
