// Shared by every WAI compute shader: the spec's conventions (rshr, the activation clamp), the
// buffer bindings and the push constants. One invocation computes one output element (leaky
// ReLU) or 4 output channels of one position (conv, convT, IGDN); a dispatch is a 2D grid of
// 64-wide workgroups read as one linear index (1D grids are limited to 65535 groups on many
// devices).
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

// Every pipeline uses the same five bindings; unused ones get a small dummy buffer.
layout(std430, set = 0, binding = 0) readonly buffer In { int x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { int y[]; };
layout(std430, set = 0, binding = 2) readonly buffer Weights { int w[]; };    // conv: w[o][i][ky][kx]; IGDN: gamma[i][j]
layout(std430, set = 0, binding = 3) readonly buffer Bias { int64_t b[]; };   // conv: bias[o]; IGDN: beta[i]
layout(std430, set = 0, binding = 4) readonly buffer Shift { uint e[]; };     // conv: shift[o]

// Mirrors WaiVkPush in vk.c: 13 int32, std430 (no padding).
layout(push_constant) uniform Params {
    int cin, cout, ih, iw, oh, ow, kh, kw, stride, pad;
    int n;          // invocations (output elements; convT: see convt.comp)
    int slope;      // leaky ReLU slope_q16
    int shift;      // IGDN: 6 + gamma_shift / 2
} p;

const int64_t ACT_MIN = -8388608l;
const int64_t ACT_MAX = 8388607l;

int clamp_act(int64_t v)
{
    return int(v < ACT_MIN ? ACT_MIN : v > ACT_MAX ? ACT_MAX : v);
}

// rshr(v, s) = v if s == 0, else (v + 2^(s-1)) >> s; >> on a signed value is arithmetic.
int64_t rshr(int64_t v, uint s)
{
    return s == 0u ? v : (v + (int64_t(1) << (s - 1u))) >> s;
}

// The linear index of this invocation, or -1 past the end.
int element_index()
{
    uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * 64u);
    return g < uint(p.n) ? int(g) : -1;
}

// Conv and convT compute 4 output channels per invocation (o0 .. o0 + 3: each input value is
// loaded once for all four); the host pads the weights, biases and shifts to a multiple of 4
// output channels with zeros, so no read goes past a buffer.
//
// dot4: for each of the 4 channels, the sum over i in [0, cin) of x[xi + i plane] * w[wi + i taps
// + t ws] (the channel sum of one tap; ws = cin taps, one output channel of weights).
// Exact with 32-bit multiplies: x = xh 2^16 + xl with xl in [0, 2^16) and |xh| <= 2^15, so for
// |w| <= 2^11 (spec 4.1; the host checks) each of xl w, xh w is below 2^27 and 8 of them sum
// below 2^31 in int32; the int64 accumulators take (sum_h << 16) + sum_l per 8 channels.
// Unrolled by 8 also because lavapipe (gallivm) caps the loop iterations of one invocation,
// all loops together, at 65535 and silently ends the loops beyond that; with cin kh kw <= 2^16
// (spec 4.1; the host checks it) a conv invocation stays below 9000 iterations.
#define DOT_TERM(k) { const int v = x[xi + (k) * plane]; const int wk = wi + (k) * taps; \
    const ivec4 c = ivec4(w[wk], w[wk + ws], w[wk + 2 * ws], w[wk + 3 * ws]); \
    sh += (v >> 16) * c; sl += (v & 0xFFFF) * c; }
i64vec4 dot4(int xi, int wi, int plane, int taps, int ws)
{
    i64vec4 acc = i64vec4(0l);
    int i = 0;
    for (; i + 8 <= p.cin; i += 8, xi += 8 * plane, wi += 8 * taps) {
        ivec4 sh = ivec4(0), sl = ivec4(0);
        DOT_TERM(0) DOT_TERM(1) DOT_TERM(2) DOT_TERM(3)
        DOT_TERM(4) DOT_TERM(5) DOT_TERM(6) DOT_TERM(7)
        acc += (i64vec4(sh) << 16) + i64vec4(sl);
    }
    ivec4 sh = ivec4(0), sl = ivec4(0);
    for (; i < p.cin; i++, xi += plane, wi += taps) DOT_TERM(0)
    return acc + (i64vec4(sh) << 16) + i64vec4(sl);
}

// The last step of conv and convT for the 4 channels of a tile: the valid ones are stored.
void store4(int o0, int pos, int plane_out, i64vec4 acc)
{
    for (int t = 0; t < 4 && o0 + t < p.cout; t++) {
        const int64_t bt = b[o0 + t];
        y[(o0 + t) * plane_out + pos] = clamp_act(rshr(acc[t] + bt, e[o0 + t]));
    }
}
