// The engine's quantized matvec as a Vulkan engine writes it by hand, in GLSL (the first lines,
// `#version` and `Q4_1`, are prepended per quant type): the buffers and layout of `qmatvec.cu`,
// the same quantizer in a shader of its own (`quantize_q8_1.comp`), and one invocation per row
// walking its blocks in order, the byte products unpacked by hand (no integer dot product).
//
// Bindings: w (words), d, m (f32), xq (words), xd (f32), params { rows, cols, accumulate }, y (f32).
// Dispatch: ceil(rows / 64) workgroups.

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) buffer W { int w[]; };
layout(set = 0, binding = 1) buffer D { float d[]; };
layout(set = 0, binding = 2) buffer M { float m[]; };
layout(set = 0, binding = 3) buffer XQ { int xq[]; };
layout(set = 0, binding = 4) buffer XD { float xd[]; };
layout(set = 0, binding = 5) buffer Params { uint params[]; };
layout(set = 0, binding = 6) buffer Y { float y[]; };

int byte_at(int word, int k) {
    return (word << (24 - 8 * k)) >> 24;
}

int dot4(int a, int b, int acc) {
    for (int k = 0; k < 4; ++k) {
        acc += byte_at(a, k) * byte_at(b, k);
    }
    return acc;
}

void main() {
    uint rows = params[0];
    uint blocks = params[1] / 32u;
    uint row = gl_GlobalInvocationID.x;
    if (row >= rows) {
        return;
    }
    float acc = 0.0;
    for (uint b = 0u; b < blocks; ++b) {
        float dx = xd[b];
        int sumi = 0;
        if (Q4_1) {
            uint at = (b * rows + row) * 4u;
            int sumx = 0;
            for (uint j = 0u; j < 4u; ++j) {
                int word = w[at + j];
                sumi = dot4(word & 0x0f0f0f0f, xq[b * 8u + j], sumi);
                sumi = dot4((word >> 4) & 0x0f0f0f0f, xq[b * 8u + 4u + j], sumi);
                sumx = dot4(0x01010101, xq[b * 8u + j], sumx);
                sumx = dot4(0x01010101, xq[b * 8u + 4u + j], sumx);
            }
            acc += d[b * rows + row] * dx * float(sumi) + m[b * rows + row] * dx * float(sumx);
        } else {
            for (uint v = 0u; v < 2u; ++v) {
                uint at = ((2u * b + v) * rows + row) * 4u;
                for (uint j = 0u; j < 4u; ++j) {
                    sumi = dot4(w[at + j], xq[b * 8u + 4u * v + j], sumi);
                }
            }
            acc += d[b * rows + row] * dx * float(sumi);
        }
    }
    y[row] = params[2] != 0u ? y[row] + acc : acc;
}
