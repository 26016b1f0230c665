/* roofline.h: the GPUs `tilec --emit=report --gpu=NAME` knows, and the roofline bound of the
 * numbers a report gives (tilec_kernel_report), as text (roofline.c). */
#ifndef TILEC_ROOFLINE_H
#define TILEC_ROOFLINE_H

#include "tilec.h"

typedef struct {
  const char *name;    /* --gpu=NAME */
  const char *product; /* the part the figures are for */
  int sms;             /* multiprocessors: num_sms for grid(...) */
  double bytes_per_s;  /* peak DRAM bandwidth */
  double tensor_flops; /* dense f16/bf16 tensor-core peak, f32 accumulate */
  double fp32_flops;   /* FP32 (non-tensor) peak */
} Gpu;

/* The row named name; NULL if none. */
const Gpu *gpu_find(const char *name);
/* "h200, h100, a100, l40s or rtx4090" */
const char *gpu_names(void);

/* The roofline of one kernel's report on gpu, and with time_us > 0 the fraction of the bound a
 * measured time reaches: a malloc'd string. */
char *roofline_text(const tilec_kernel_report *r, const Gpu *gpu, double time_us);

#endif
