// Stand-in for tilec's examples/vector_add.tl: the same kernel ABI and metadata (docs/abi.md), in
// CUDA C++, so that gpu_suite, gpu_bench and the runtime can be checked on the GPU machine before
// (or independently of) the compiler. Built by make_ptx.sh with nvcc; never part of tilec.
//
// A block of 256 threads covers 4096 elements, 4 float4 per thread (grid: N 4096 ceildiv).
extern "C" __global__ void __launch_bounds__(256)
vector_add(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
           unsigned N)
{
  const size_t base = (size_t)blockIdx.x * 4096;
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const size_t i = base + ((size_t)j * 256 + threadIdx.x) * 4;
    if (i + 3 < N) { // cuMemAlloc'd buffers are 256-byte aligned, so float4 is safe here
      const float4 a = *(const float4 *)(A + i), b = *(const float4 *)(B + i);
      *(float4 *)(C + i) = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    } else {
      for (size_t k = i; k < N && k < i + 4; k++)
        C[k] = A[k] + B[k];
    }
  }
}
