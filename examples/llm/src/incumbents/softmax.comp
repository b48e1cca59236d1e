#version 450
// The attention softmax as a Vulkan engine writes it by hand, in GLSL: one invocation per head
// walking its positions (the maximum, `exp` and the sum, then a division), in place on the
// engine's scores.
//
// Bindings: s (f32, heads × context, the first n of each head in use), params { heads, context,
// n }. Dispatch: ceil(heads / 64) workgroups.

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) buffer S { float s[]; };
layout(set = 0, binding = 1) buffer Params { uint params[]; };

void main() {
    uint heads = params[0];
    uint context = params[1];
    uint n = params[2];
    uint head = gl_GlobalInvocationID.x;
    if (head >= heads) {
        return;
    }
    uint row = head * context;
    float m = s[row];
    for (uint j = 1u; j < n; ++j) {
        m = max(m, s[row + j]);
    }
    float sum = 0.0;
    for (uint j = 0u; j < n; ++j) {
        float e = exp(s[row + j] - m);
        s[row + j] = e;
        sum += e;
    }
    for (uint j = 0u; j < n; ++j) {
        s[row + j] = s[row + j] / sum;
    }
}
