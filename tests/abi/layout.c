/* layout: prints what a host compiles in from the public headers: each struct's size, alignment and
 * member offsets, each enumerator's value, the #defines a host's code depends on. The ctest
 * abi.layout compares the output with tests/abi/layout.txt, so that a layout change (a major version:
 * docs/abi.md, "The library's ABI") is never an accident.
 */
#include <stddef.h>
#include <stdio.h>

#include "tilec_jit.h"

#define STRUCT(T) printf("%s size %zu align %zu\n", #T, sizeof(T), _Alignof(T))
#define AT(T, m) printf("  %s.%s %zu\n", #T, #m, offsetof(T, m))
#define VALUE(e) printf("%s %lld\n", #e, (long long)(e))

int main(void)
{
  STRUCT(tilec_define), AT(tilec_define, name), AT(tilec_define, value);
  STRUCT(tilec_bucket), AT(tilec_bucket, sizes), AT(tilec_bucket, nsizes);
  STRUCT(tilec_options), AT(tilec_options, filename), AT(tilec_options, arch), AT(tilec_options, opt_level),
      AT(tilec_options, defines), AT(tilec_options, ndefines), AT(tilec_options, kernel),
      AT(tilec_options, emit), AT(tilec_options, dump_after), AT(tilec_options, sizes),
      AT(tilec_options, nsizes), AT(tilec_options, buckets), AT(tilec_options, nbuckets),
      AT(tilec_options, line_info);
  STRUCT(tilec_diagnostic), AT(tilec_diagnostic, severity), AT(tilec_diagnostic, file),
      AT(tilec_diagnostic, line), AT(tilec_diagnostic, column), AT(tilec_diagnostic, message);
  STRUCT(tilec_param), AT(tilec_param, kind), AT(tilec_param, name), AT(tilec_param, dtype),
      AT(tilec_param, rank), AT(tilec_param, dims);
  STRUCT(tilec_kernel), AT(tilec_kernel, name), AT(tilec_kernel, threads), AT(tilec_kernel, smem),
      AT(tilec_kernel, nparams), AT(tilec_kernel, nargs), AT(tilec_kernel, params), AT(tilec_kernel, grid);
  STRUCT(tilec_kernel_report), AT(tilec_kernel_report, name), AT(tilec_kernel_report, known),
      AT(tilec_kernel_report, blocks), AT(tilec_kernel_report, read_bytes),
      AT(tilec_kernel_report, write_bytes), AT(tilec_kernel_report, mma_flops),
      AT(tilec_kernel_report, other_flops), AT(tilec_kernel_report, threads),
      AT(tilec_kernel_report, smem_bytes);

  STRUCT(tl_tmap_info), AT(tl_tmap_info, tensor), AT(tl_tmap_info, rank), AT(tl_tmap_info, box),
      AT(tl_tmap_info, swizzle);
  STRUCT(tl_dim), AT(tl_dim, size_param), AT(tl_dim, extent);
  STRUCT(tl_param), AT(tl_param, kind), AT(tl_param, name), AT(tl_param, dtype), AT(tl_param, rank),
      AT(tl_param, dims), AT(tl_param, tmap);
  STRUCT(tl_launch_const), AT(tl_launch_const, name), AT(tl_launch_const, value), AT(tl_launch_const, text),
      AT(tl_launch_const, program);
  STRUCT(tl_kernel_info), AT(tl_kernel_info, name), AT(tl_kernel_info, line), AT(tl_kernel_info, threads),
      AT(tl_kernel_info, smem), AT(tl_kernel_info, nparams), AT(tl_kernel_info, nargs),
      AT(tl_kernel_info, nsizes), AT(tl_kernel_info, ntmaps), AT(tl_kernel_info, params),
      AT(tl_kernel_info, grid_text), AT(tl_kernel_info, grid), AT(tl_kernel_info, uses_num_sms),
      AT(tl_kernel_info, nconsts), AT(tl_kernel_info, consts), AT(tl_kernel_info, strides),
      AT(tl_kernel_info, tma_required);
  STRUCT(tl_arg), AT(tl_arg, kind), AT(tl_arg, dtype), AT(tl_arg, ptr), AT(tl_arg, rank), AT(tl_arg, shape),
      AT(tl_arg, value);
  STRUCT(tl_launch_plan), AT(tl_launch_plan, grid), AT(tl_launch_plan, block), AT(tl_launch_plan, smem),
      AT(tl_launch_plan, empty), AT(tl_launch_plan, nparams), AT(tl_launch_plan, params),
      AT(tl_launch_plan, nconsts), AT(tl_launch_plan, consts), AT(tl_launch_plan, variant),
      AT(tl_launch_plan, heap_), AT(tl_launch_plan, tmap_heap_), AT(tl_launch_plan, inline_params_),
      AT(tl_launch_plan, inline_slots_), AT(tl_launch_plan, inline_tmaps_);
  STRUCT(tl_tmap_encoding), AT(tl_tmap_encoding, data_type), AT(tl_tmap_encoding, rank),
      AT(tl_tmap_encoding, address), AT(tl_tmap_encoding, global_dim), AT(tl_tmap_encoding, global_strides),
      AT(tl_tmap_encoding, box_dim), AT(tl_tmap_encoding, element_strides), AT(tl_tmap_encoding, interleave),
      AT(tl_tmap_encoding, swizzle), AT(tl_tmap_encoding, l2_promotion), AT(tl_tmap_encoding, oob_fill);
  STRUCT(tl_device_info), AT(tl_device_info, ordinal), AT(tl_device_info, name), AT(tl_device_info, cc_major),
      AT(tl_device_info, cc_minor), AT(tl_device_info, sm_count), AT(tl_device_info, max_smem_per_block),
      AT(tl_device_info, total_memory), AT(tl_device_info, driver_version);

  STRUCT(tl_jit_options), AT(tl_jit_options, filename), AT(tl_jit_options, arch),
      AT(tl_jit_options, opt_level), AT(tl_jit_options, defines), AT(tl_jit_options, ndefines),
      AT(tl_jit_options, kernel), AT(tl_jit_options, flags), AT(tl_jit_options, on_diagnostic),
      AT(tl_jit_options, user);
  STRUCT(tl_jit_stats), AT(tl_jit_stats, compiles), AT(tl_jit_stats, memory_hits),
      AT(tl_jit_stats, disk_hits), AT(tl_jit_stats, disk_rejected), AT(tl_jit_stats, disk_writes),
      AT(tl_jit_stats, disk_write_failures), AT(tl_jit_stats, links), AT(tl_jit_stats, binary_loads),
      AT(tl_jit_stats, memory_evictions), AT(tl_jit_stats, memory_bytes), AT(tl_jit_stats, disk_untrusted),
      AT(tl_jit_stats, disk_evictions), AT(tl_jit_stats, disk_temporaries_removed);

  VALUE(TILEC_ERR_IO), VALUE(TILEC_EMIT_HEADER), VALUE(TILEC_EMIT_REPORT), VALUE(TILEC_PARAM_TMAP_OK),
      VALUE(TILEC_MAX_BUCKETS);
  VALUE(TILEC_MAX_SOURCE_BYTES);
  VALUE(TL_ERR_NO_DRIVER), VALUE(TL_ERR_BAD_ARGUMENT), VALUE(TL_ERR_COMPILE), VALUE(TL_ERR_KERNEL_FAILED);
  VALUE(TL_BOOL), VALUE(TL_F16), VALUE(TL_BF16), VALUE(TL_F32), VALUE(TL_F64), VALUE(TL_E4M3), VALUE(TL_E5M2);
  VALUE(TL_PARAM_TENSOR), VALUE(TL_PARAM_TMAP_OK), VALUE(TL_ARG_TENSOR), VALUE(TL_ARG_SCALAR);
  VALUE(TL_SWIZZLE_128B), VALUE(TL_TMAP_BYTES), VALUE(TL_TMAP_ALIGN), VALUE(TL_TMAP_MAX_RANK);
  VALUE(TL_MAX_LAUNCH_CONSTS), VALUE(TL_PLAN_INLINE_PARAMS), VALUE(TL_PLAN_INLINE_TMAPS),
      VALUE(TL_DEVICE_CPU);
  VALUE(TL_JIT_NO_CACHE), VALUE(TL_JIT_NO_DISK_CACHE), VALUE(TL_JIT_LINE_INFO), VALUE(TL_JIT_TMA_ONLY);
  VALUE(TL_JIT_CACHE_NO_DISK), VALUE(TL_JIT_CACHE_NO_MEMORY), VALUE(TL_JIT_CACHE_DIR_MAX);
  return 0;
}
