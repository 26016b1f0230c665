/* roofline.c: peak figures of a few GPUs and the roofline bound of a kernel on them.
 *
 * The bound is the larger of the time the kernel's global traffic takes at the peak bandwidth
 * and the time its FLOPs take at the peak rates (gemm's on the tensor cores, the rest on the
 * FP32 units): a kernel can be no faster, whatever it overlaps. */
#include "roofline.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Vendor figures, dense (without structured sparsity), for the part named:
 *   h200     NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): GPU memory bandwidth 4.8 TB/s,
 *            FP16/BF16 Tensor Core 1,979 TFLOPS with sparsity (989.5 dense), FP32 67 TFLOPS;
 *            132 SMs (the H100 SXM5's GH100 configuration, which the H200 keeps).
 *   h100     NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): 3.35 TB/s, FP16/BF16 Tensor Core
 *            1,979 TFLOPS with sparsity (989.5 dense), FP32 67 TFLOPS; 132 SMs (NVIDIA H100 Tensor
 *            Core GPU Architecture whitepaper).
 *   a100     NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM): 2,039 GB/s, FP16/BF16 Tensor
 *            Core 312 TFLOPS (624 with sparsity), FP32 19.5 TFLOPS; 108 SMs (NVIDIA A100 Tensor
 *            Core GPU Architecture whitepaper).
 *   l40s     NVIDIA L40S datasheet: 864 GB/s, FP16/BF16 Tensor Core 362.05 TFLOPS (733 with
 *            sparsity), FP32 91.6 TFLOPS; 142 SMs.
 *   rtx4090  NVIDIA Ada GPU Architecture whitepaper (GeForce RTX 4090): 1,008 GB/s, peak FP16
 *            Tensor TFLOPS with FP32 accumulate 165.2 (330.3 with sparsity), FP32 82.6 TFLOPS;
 *            128 SMs.
 * tilec's gemm accumulates in f32, hence the f32-accumulate tensor rate; 8-bit inputs (i8, e4m3)
 * have twice these rates on the parts that support them, which this table does not model. */
static const Gpu gpus[] = {
    {"h200", "NVIDIA H200 SXM", 132, 4.8e12, 989.5e12, 67e12},
    {"h100", "NVIDIA H100 SXM", 132, 3.35e12, 989.5e12, 67e12},
    {"a100", "NVIDIA A100 SXM 80GB", 108, 2.039e12, 312e12, 19.5e12},
    {"l40s", "NVIDIA L40S", 142, 864e9, 362.05e12, 91.6e12},
    {"rtx4090", "NVIDIA GeForce RTX 4090", 128, 1008e9, 165.2e12, 82.6e12},
};
enum { NGPUS = sizeof gpus / sizeof gpus[0] };

const Gpu *gpu_find(const char *name)
{
  for (int i = 0; name && i < NGPUS; i++)
    if (!strcmp(gpus[i].name, name))
      return &gpus[i];
  return NULL;
}

const char *gpu_names(void) { return "h200, h100, a100, l40s or rtx4090"; }

typedef struct {
  char *data;
  size_t len;
} Text;

__attribute__((format(printf, 2, 3))) static void put(Text *t, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *d = n >= 0 ? realloc(t->data, t->len + (size_t)n + 1) : NULL;
  if (!d)
    return;
  t->data = d;
  va_start(ap, fmt);
  vsnprintf(d + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

char *roofline_text(const tilec_kernel_report *r, const Gpu *g, double time_us)
{
  Text t = {0};
  put(&t,
      "\nroofline of %s on the %s (%s): DRAM %.4g TB/s, tensor (f16/bf16, f32 accumulate) %.4g TFLOP/s, "
      "FP32 %.4g TFLOP/s, %d SMs\n",
      r->name, g->product, g->name, g->bytes_per_s / 1e12, g->tensor_flops / 1e12, g->fp32_flops / 1e12,
      g->sms);
  if (!r->known) {
    put(&t, "  not known: give every size with --size\n");
    return t.data;
  }
  double bytes = r->read_bytes + r->write_bytes;
  double mem_us = bytes / g->bytes_per_s * 1e6;
  double cmp_us = (r->mma_flops / g->tensor_flops + r->other_flops / g->fp32_flops) * 1e6;
  double bound = mem_us > cmp_us ? mem_us : cmp_us;
  put(&t, "  memory:  %.0f bytes / %.4g TB/s = %.4g us\n", bytes, g->bytes_per_s / 1e12, mem_us);
  put(&t, "  compute: %.0f gemm FLOPs on the tensor cores + %.0f other FLOPs on FP32 = %.4g us\n",
      r->mma_flops, r->other_flops, cmp_us);
  put(&t, "  bound: %.4g us, %s-bound (arithmetic intensity %.3g FLOP/byte; the ridge is at %.3g)\n", bound,
      mem_us >= cmp_us ? "memory" : "compute", bytes > 0 ? (r->mma_flops + r->other_flops) / bytes : 0.0,
      (r->mma_flops > 0 ? g->tensor_flops : g->fp32_flops) / g->bytes_per_s);
  if (time_us > 0)
    put(&t, "  measured %.4g us: %.3g of the bound (%.4g TB/s, %.4g TFLOP/s achieved)\n", time_us,
        bound / time_us, bytes / (time_us * 1e-6) / 1e12,
        (r->mma_flops + r->other_flops) / (time_us * 1e-6) / 1e12);
  return t.data;
}
