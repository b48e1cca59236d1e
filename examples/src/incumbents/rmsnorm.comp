#version 450
// RMSNorm over rows as a Vulkan engine writes it by hand: one workgroup of 32 invocations per
// row, each summing the squares of its strided values, a shared-memory tree, then
// `inversesqrt`. 32 invocations, not more: the GLSL front end this runs through (naga, in wgpu)
// makes `barrier()` a subgroup-scope barrier (`island_runtime::glsl_kernel`), so the exchange
// must stay within one subgroup of NVIDIA's 32 lanes.
//
// Bindings: x (rows × cols f32), w (cols f32), y (rows × cols f32), and `shape` = { cols, eps as
// bits, rows } (u32). Dispatch: one workgroup a row.

layout(local_size_x = 32) in;

layout(set = 0, binding = 0) buffer X { float x[]; };
layout(set = 0, binding = 1) buffer W { float w[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };
layout(set = 0, binding = 3) buffer Shape { uint shape[]; };

shared float partial[32];

void main() {
    uint cols = shape[0];
    float eps = uintBitsToFloat(shape[1]);
    uint t = gl_LocalInvocationID.x;
    uint base = gl_WorkGroupID.x * cols;
    float sum = 0.0;
    for (uint i = t; i < cols; i += 32u) {
        float v = x[base + i];
        sum += v * v;
    }
    partial[t] = sum;
    barrier();
    for (uint offset = 16u; offset > 0u; offset >>= 1u) {
        if (t < offset) {
            partial[t] += partial[t + offset];
        }
        barrier();
    }
    float scale = inversesqrt(partial[0] / float(cols) + eps);
    for (uint i = t; i < cols; i += 32u) {
        y[base + i] = x[base + i] * scale * w[i];
    }
}
