// Stand-in for tilec's examples/gelu.tl (see vector_add.cu): Y = gelu(X) with the tanh
// approximation, computed in f32. A block of 256 threads covers 2048 elements (grid: N 2048
// ceildiv), 8 per thread, strided so that each warp's accesses are contiguous.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float gelu(float x)
{
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

extern "C" __global__ void __launch_bounds__(256)
gelu_f16(const __half *__restrict__ X, __half *__restrict__ Y, unsigned N)
{
  const size_t base = (size_t)blockIdx.x * 2048;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const size_t i = base + (size_t)j * 256 + threadIdx.x;
    if (i < N)
      Y[i] = __float2half_rn(gelu(__half2float(X[i])));
  }
}

extern "C" __global__ void __launch_bounds__(256)
gelu_bf16(const __nv_bfloat16 *__restrict__ X, __nv_bfloat16 *__restrict__ Y, unsigned N)
{
  const size_t base = (size_t)blockIdx.x * 2048;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const size_t i = base + (size_t)j * 256 + threadIdx.x;
    if (i < N)
      Y[i] = __float2bfloat16_rn(gelu(__bfloat162float(X[i])));
  }
}
