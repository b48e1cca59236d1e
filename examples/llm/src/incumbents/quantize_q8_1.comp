#version 450
// The activation quantizer of the engine's matvec, as a Vulkan engine writes it by hand: one
// invocation per block of 32 values, d = amax / 127, q = round(x · (1 / d)) rounded half away
// from zero as sign(v) · floor(|v| + 0.5).
//
// Bindings: x (f32), xq (8 words a block), xd (f32 a block), params { rows, cols }.
// Dispatch: ceil(cols / 32 / 64) workgroups.

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) buffer X { float x[]; };
layout(set = 0, binding = 1) buffer XQ { int xq[]; };
layout(set = 0, binding = 2) buffer XD { float xd[]; };
layout(set = 0, binding = 3) buffer Params { uint params[]; };

void main() {
    uint block = gl_GlobalInvocationID.x;
    if (block >= params[1] / 32u) {
        return;
    }
    float amax = 0.0;
    for (uint i = 0u; i < 32u; ++i) {
        amax = max(amax, abs(x[block * 32u + i]));
    }
    float d = amax / 127.0;
    float id = d != 0.0 ? 1.0 / d : 0.0;
    for (uint j = 0u; j < 8u; ++j) {
        int word = 0;
        for (uint k = 0u; k < 4u; ++k) {
            float v = x[block * 32u + 4u * j + k] * id;
            int q = int(sign(v) * floor(abs(v) + 0.5));
            word |= (q & 0xff) << (8u * k);
        }
        xq[block * 8u + j] = word;
    }
    xd[block] = d;
}
