// Stand-in for tilec's examples/saxpy.tl (see vector_add.cu): Z = a*X + Y, grid N 4096 ceildiv.
extern "C" __global__ void __launch_bounds__(256)
saxpy(const float *__restrict__ X, const float *__restrict__ Y, float *__restrict__ Z, float a,
      unsigned N)
{
  const size_t base = (size_t)blockIdx.x * 4096;
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const size_t i = base + ((size_t)j * 256 + threadIdx.x) * 4;
    if (i + 3 < N) {
      const float4 x = *(const float4 *)(X + i), y = *(const float4 *)(Y + i);
      *(float4 *)(Z + i) = make_float4(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y), fmaf(a, x.z, y.z),
                                       fmaf(a, x.w, y.w));
    } else {
      for (size_t k = i; k < N && k < i + 4; k++)
        Z[k] = fmaf(a, X[k], Y[k]);
    }
  }
}
