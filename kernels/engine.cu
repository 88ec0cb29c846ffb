// The engine's kernels on a CUDA GPU: twins of src/engine/kernels.rs and src/engine/attention.rs
// that compute the CPU's bits. Compiled at run time by NVRTC (src/engine/cuda.rs) with
// --fmad=false --ftz=false --prec-div=true --prec-sqrt=true; on top of that every operation is
// written as a round-to-nearest intrinsic, so no compiler may fuse or reorder one. Constants are
// f32 bit patterns, the CPU's literals as Rust rounds them. Each output element keeps the CPU's
// operation order: matrix products run one k-ascending (or row-ascending) chain per thread,
// reductions use the engine's 16 interleaved partial sums and fixed pairwise tree.

#define ADD(a, b) __fadd_rn((a), (b))
#define SUB(a, b) __fsub_rn((a), (b))
#define MUL(a, b) __fmul_rn((a), (b))
#define DIV(a, b) __fdiv_rn((a), (b))

#define LOG2_E __int_as_float(0x3fb8aa3b)
#define LN2_HI __int_as_float(0x3f317200)
#define LN2_LO __int_as_float(0x35bfbe8e)
#define MAGIC __int_as_float(0x4b400000)
#define P3 __int_as_float(0x3e2aaaab)
#define P4 __int_as_float(0x3d2aaaab)
#define P5 __int_as_float(0x3c088889)
#define P6 __int_as_float(0x3ab60b62)
#define EXP_LO __int_as_float(0xc2ae0000)
#define EXP_HI __int_as_float(0x42b00000)
#define TINY __int_as_float(0x006ce3ee)
#define SQRT_2 __int_as_float(0x3fb504f3)
#define L3 __int_as_float(0x3f2aaaab)
#define L5 __int_as_float(0x3ecccccd)
#define L7 __int_as_float(0x3e924925)
#define L9 __int_as_float(0x3e638e39)
#define LN_2 __int_as_float(0x3f317218)

// The engine's reduction width.
#define LANES 16

__device__ __forceinline__ float bound(float x, float lo, float hi) {
    // fmaxf returns the other operand for NaN, as Rust's f32::max does.
    return fminf(fmaxf(x, lo), hi);
}

__device__ __forceinline__ float exp_fixed(float x) {
    x = bound(x, EXP_LO, EXP_HI);
    float y = MUL(x, LOG2_E);
    float n = SUB(ADD(y, MAGIC), MAGIC);
    float r = SUB(SUB(x, MUL(n, LN2_HI)), MUL(n, LN2_LO));
    float p = ADD(1.0f, MUL(r, ADD(1.0f, MUL(r, ADD(0.5f, MUL(r, ADD(P3, MUL(r, ADD(P4,
        MUL(r, ADD(P5, MUL(r, P6))))))))))));
    int bits = (__float2int_rz(n) + 127) << 23;
    return MUL(p, __int_as_float(bits));
}

__device__ __forceinline__ float sigmoid(float x) {
    return DIV(1.0f, ADD(1.0f, exp_fixed(-x)));
}

__device__ __forceinline__ float ln_fixed(float x) {
    if (x <= TINY || x != x) {
        return -88.0f;
    }
    unsigned bits = __float_as_uint(x);
    int e = (int)((bits >> 23) & 0xff) - 127;
    float m = __uint_as_float((bits & 0x007fffffu) | 0x3f800000u);
    if (m > SQRT_2) {
        m = MUL(m, 0.5f);
        e += 1;
    }
    float s = DIV(SUB(m, 1.0f), ADD(m, 1.0f));
    float s2 = MUL(s, s);
    float t = MUL(s, ADD(2.0f, MUL(s2, ADD(L3, MUL(s2, ADD(L5, MUL(s2, ADD(L7, MUL(s2, L9)))))))));
    return ADD(t, MUL(__int2float_rn(e), LN_2));
}

__device__ __forceinline__ float reduce_fixed(float *acc) {
#pragma unroll
    for (int w = LANES / 2; w > 0; w /= 2) {
#pragma unroll
        for (int i = 0; i < w; i++) {
            acc[i] = ADD(acc[i], acc[i + w]);
        }
    }
    return acc[0];
}

// sum of a[i] * b[i] in the engine's fixed order (a, b strided by 1).
__device__ __forceinline__ float dot_fixed(const float *a, const float *b, int n) {
    float acc[LANES];
#pragma unroll
    for (int i = 0; i < LANES; i++) acc[i] = 0.0f;
    int full = n / LANES * LANES;
    for (int c = 0; c < full; c += LANES) {
#pragma unroll
        for (int i = 0; i < LANES; i++) acc[i] = ADD(acc[i], MUL(a[c + i], b[c + i]));
    }
#pragma unroll
    for (int i = 0; i < LANES; i++) {
        if (full + i < n) acc[i] = ADD(acc[i], MUL(a[full + i], b[full + i]));
    }
    return reduce_fixed(acc);
}

__device__ __forceinline__ float sum_fixed(const float *a, int n) {
    float acc[LANES];
#pragma unroll
    for (int i = 0; i < LANES; i++) acc[i] = 0.0f;
    int full = n / LANES * LANES;
    for (int c = 0; c < full; c += LANES) {
#pragma unroll
        for (int i = 0; i < LANES; i++) acc[i] = ADD(acc[i], a[c + i]);
    }
#pragma unroll
    for (int i = 0; i < LANES; i++) {
        if (full + i < n) acc[i] = ADD(acc[i], a[full + i]);
    }
    return reduce_fixed(acc);
}

__device__ __forceinline__ int index() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}

// out[b][j] += sum_k x[b][k] * w[k][j], k ascending, zero inputs skipped; one output per thread.
extern "C" __global__ void matmul_acc(const float *x, const float *w, float *out, int rows,
                                      int k, int n) {
    int t = index();
    if (t >= rows * n) return;
    int b = t / n, j = t % n;
    float acc = out[t];
    const float *xr = x + (size_t)b * k;
    for (int kk = 0; kk < k; kk++) {
        float a = xr[kk];
        if (a == 0.0f) continue;
        acc = ADD(acc, MUL(a, w[(size_t)kk * n + j]));
    }
    out[t] = acc;
}

// dw[kk][j] += sum_b x[b][kk] * dy[b][j], b ascending, zero inputs skipped.
extern "C" __global__ void outer_acc(const float *x, const float *dy, float *dw, int rows, int k,
                                     int n) {
    int t = index();
    if (t >= k * n) return;
    int kk = t / n, j = t % n;
    float acc = dw[t];
    for (int b = 0; b < rows; b++) {
        float a = x[(size_t)b * k + kk];
        if (a == 0.0f) continue;
        acc = ADD(acc, MUL(a, dy[(size_t)b * n + j]));
    }
    dw[t] = acc;
}

// out (n x k) = transpose of w (k x n).
extern "C" __global__ void transpose(const float *w, float *out, int k, int n) {
    int t = index();
    if (t >= k * n) return;
    int kk = t / n, j = t % n;
    out[(size_t)j * k + kk] = w[t];
}

// In-place softmax of each row (rows x n), one row per thread.
extern "C" __global__ void softmax_rows(float *z, int rows, int n) {
    int b = index();
    if (b >= rows) return;
    float *row = z + (size_t)b * n;
    float m = __int_as_float(0xff800000);  // -inf
    for (int i = 0; i < n; i++) m = fmaxf(m, row[i]);
    for (int i = 0; i < n; i++) row[i] = exp_fixed(SUB(row[i], m));
    float inv = DIV(1.0f, sum_fixed(row, n));
    for (int i = 0; i < n; i++) row[i] = MUL(row[i], inv);
}

// ReLU in place (NaN and -0 become +0, as Rust's max(0) gives).
extern "C" __global__ void relu(float *x, int len) {
    int t = index();
    if (t >= len) return;
    float v = x[t];
    x[t] = v > 0.0f ? v : 0.0f;
}

extern "C" __global__ void relu_backward(const float *out, float *grad, int len) {
    int t = index();
    if (t >= len) return;
    if (out[t] <= 0.0f) grad[t] = 0.0f;
}

// One Adam step; zeroes the gradient.
extern "C" __global__ void adam(float *p, float *g, float *m, float *v, int len, float lr,
                                float b1, float b2, float eps) {
    int t = index();
    if (t >= len) return;
    float c1 = SUB(1.0f, b1), c2 = SUB(1.0f, b2);
    float gv = g[t];
    float mv = ADD(MUL(b1, m[t]), MUL(c1, gv));
    float vv = ADD(MUL(b2, v[t]), MUL(c2, MUL(gv, gv)));
    m[t] = mv;
    v[t] = vv;
    p[t] = SUB(p[t], DIV(MUL(lr, mv), ADD(__fsqrt_rn(vv), eps)));
    g[t] = 0.0f;
}

// The engine's scalar functions over an array, for checking them value by value:
// which 0 = exp, 1 = sigmoid, 2 = ln.
extern "C" __global__ void scalar_fn(const float *x, float *out, int len, int which) {
    int t = index();
    if (t >= len) return;
    float v = x[t];
    out[t] = which == 0 ? exp_fixed(v) : which == 1 ? sigmoid(v) : ln_fixed(v);
}

// Cross-entropy gradient w.r.t. the logits, in place over softmax outputs: z[b][y[b]] -= 1.
extern "C" __global__ void cross_entropy_grad(float *z, const int *y, int rows, int n) {
    int b = index();
    if (b >= rows) return;
    int c = y[b];
    if (c < 0 || c >= n) return;
    float *e = z + (size_t)b * n + c;
    *e = SUB(*e, 1.0f);
}
