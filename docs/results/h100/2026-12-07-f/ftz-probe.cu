// The probe as it ran on the H100 (2026-12-07): nvcc -arch=sm_90 -O2 ftz-probe.cu && ./a.out (ftz-rules.txt).
// Its third rule ("tiny after unbounded rounding") compared the scaled result with 2^-64, not 2^-62:
// that line of ftz-rules.txt is void. counts.py gives the two others' counts under the unbounded rule.
// Which tininess rule does the H100's FTZ take? Compare mul.rn.ftz / fma.rn.ftz with three rules.
#include <cstdio>
#include <cstdint>
#include <cmath>
__device__ float ftz_mul(float a, float b){ float d; asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d; }
__device__ float ftz_fma(float a, float b, float c){ float d; asm("fma.rn.ftz.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c)); return d; }
__device__ float flushf(float x){ return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }
__device__ unsigned long long cnt[3][4];
__device__ unsigned int ex[3][4][4];
// exact = s + t (double-double). rule 0: IEEE gradual result, flushed if subnormal.
// rule 1: tiny before rounding. rule 2: tiny after rounding to 24 bits, unbounded exponent.
__device__ void rules(double s, double t, float ieee, float hw, int fam, float a, float b, float c){
  const double m = 1.1754943508222875e-38; // 2^-126
  float r0 = flushf(ieee);
  bool below = fabs(s) < m || (fabs(s) == m && t != 0.0 && ((t < 0) != (s < 0)));
  float r1 = below ? copysignf(0.0f, ieee) : ieee;
  // rounding with an unbounded exponent: scale by 2^64 (exact), round to float there.
  double ss = s * 18446744073709551616.0, tt = t * 18446744073709551616.0;
  float sc = __double2float_rn(ss); // s carries 53 bits; t only matters at ties
  // correct rounding of ss+tt: fix a tie decided by t
  double back = (double)sc; double rem = (ss - back) + tt; // exact enough near the window
  float up = nextafterf(sc, INFINITY), dn = nextafterf(sc, -INFINITY);
  if (rem != 0.0) { double h = rem > 0 ? ((double)up - back) / 2 : ((double)dn - back) / 2;
    if (fabs(rem) > fabs(h)) sc = rem > 0 ? up : dn; }
  bool tiny2 = fabsf(sc) < 5.421010862427522e-20f; // 2^-64
  float r2 = tiny2 ? copysignf(0.0f, ieee) : ieee;
  float r[3] = {r0, r1, r2};
  for (int k = 0; k < 3; k++) if (__float_as_uint(r[k]) != __float_as_uint(hw)) {
    unsigned long long n = atomicAdd(&cnt[k][fam], 1ull);
    if (n == 0) { ex[k][fam][0] = __float_as_uint(a); ex[k][fam][1] = __float_as_uint(b); ex[k][fam][2] = __float_as_uint(c); ex[k][fam][3] = __float_as_uint(hw); }
  }
}
__global__ void go(int fam){
  unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; // 2^24 threads
  unsigned k = idx & 4095, j = (idx >> 12) & 4095;
  float a, b, c = 0.0f;
  if (fam == 0 || fam == 2) { a = __uint_as_float(0x00800000u + k); b = __uint_as_float(0x3f800000u - j); }
  else if (fam == 1) { a = __uint_as_float(0x01000000u - (k & 63)); b = __uint_as_float(0x3f000000u - (j & 63)); if (k >= 64 || j >= 64) return; }
  else { a = __uint_as_float(0x01800000u + k); b = __uint_as_float(0x3f800000u - j); c = -__uint_as_float(0x01400000u); }
  if (idx & 1u<<24) {} // unused
  double p = (double)a * (double)b; // exact
  if (fam < 2) { float hw = ftz_mul(a, b); float ieee = __fmul_rn(a, b); rules(p, 0.0, ieee, hw, fam, a, b, c);
                 float hw2 = ftz_mul(-a, b); rules(-p, 0.0, -ieee, hw2, fam, -a, b, c); }
  else { double s = p + (double)c; double bb = s - p; double t = (p - (s - bb)) + ((double)c - bb);
         float ieee = __fmaf_rn(a, b, c); float hw = ftz_fma(a, b, c); rules(s, t, ieee, hw, fam, a, b, c);
         float hw2 = ftz_fma(-a, b, -c); rules(-s, -t, -ieee, hw2, fam, -a, b, -c); }
}
int main(){
  for (int f = 0; f < 4; f++) go<<<1 << 16, 256>>>(f);
  cudaDeviceSynchronize();
  unsigned long long h[3][4]; unsigned int e[3][4][4];
  cudaMemcpyFromSymbol(h, cnt, sizeof h); cudaMemcpyFromSymbol(e, ex, sizeof e);
  const char* names[3] = {"IEEE-rounded then flushed", "tiny before rounding", "tiny after unbounded rounding"};
  const char* fams[4] = {"mul 2^-126(1+k2^-23)(1-j2^-24)", "mul ties 2^-125(1-k2^-24)*0.5(1-j2^-24)", "fma same, c=0", "fma 2^-124(..)(..) - 3*2^-126"};
  for (int k = 0; k < 3; k++) for (int f = 0; f < 4; f++)
    printf("rule %-30s family %-42s mismatches %llu  first a=%08x b=%08x c=%08x hw=%08x\n", names[k], fams[f], h[k][f], e[k][f][0], e[k][f][1], e[k][f][2], e[k][f][3]);
  printf("err: %s\n", cudaGetErrorString(cudaGetLastError()));
}
