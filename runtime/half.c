/* half.c: f16 and bf16 on the host, bit-exact and without libm or _Float16.
 *
 * Both formats are "small IEEE floats" that differ only in field widths:
 *
 *        sign | exponent | mantissa          bias
 *   f16    1  |    5     |    10              15
 *   bf16   1  |    8     |     7             127
 *
 * so one rounding routine, parametrised by the widths, serves both. It rounds from double: a float
 * converts to double exactly, and rounding a double once avoids the double rounding of going
 * double -> float -> half.
 */
#include <string.h>

#include "tilec_runtime.h"

/* Round x to the nearest value with `ebits` exponent and `mbits` mantissa bits, ties to even, and
 * return its bit pattern. */
static uint16_t round_to_small_float(double x, int ebits, int mbits)
{
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  const uint16_t sign = (uint16_t)((b >> 63) << (ebits + mbits));
  const int dexp = (int)((b >> 52) & 0x7FF);
  const uint64_t dmant = b & ((UINT64_C(1) << 52) - 1);
  const int max_biased = (1 << ebits) - 1; /* the all-ones exponent: inf and NaN */
  const uint16_t inf = (uint16_t)(max_biased << mbits);

  if (dexp == 0x7FF) /* inf, or NaN made quiet (top mantissa bit) so that it stays a NaN */
    return (uint16_t)(sign | inf | (dmant ? (1u << (mbits - 1)) : 0));
  if (dexp == 0)     /* zero, or a double subnormal (< 2^-1022): far below either format's range */
    return sign;

  /* x = sig * 2^(exp - 52), with sig having its implicit leading 1 (53 bits). */
  const uint64_t sig = dmant | (UINT64_C(1) << 52);
  const int exp = dexp - 1023;
  const int bias = (1 << (ebits - 1)) - 1;
  int biased = exp + bias; /* the target exponent field if x is normal there */

  /* Bits of sig to drop: keep mbits+1 for a normal; for a subnormal (biased < 1) the value is
   * q * 2^(1 - bias - mbits), so drop 1 - biased more. */
  int shift = 52 - mbits + (biased < 1 ? 1 - biased : 0);
  if (shift > 53) /* x < half the smallest subnormal: rounds to zero (sig < 2^53 <= half of 2^shift) */
    return sign;
  uint64_t q = sig >> shift;
  const uint64_t rem = sig & ((UINT64_C(1) << shift) - 1);
  const uint64_t half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    q++;

  if (biased < 1)         /* subnormal; q == 2^mbits is the smallest normal, whose bits q already are */
    return (uint16_t)(sign | q);
  if (q >> (mbits + 1)) { /* rounding carried into a new binade */
    q >>= 1;
    biased++;
  }
  if (biased >= max_biased)
    return (uint16_t)(sign | inf);
  return (uint16_t)(sign | ((uint16_t)biased << mbits) | (q & ((1u << mbits) - 1)));
}

uint16_t tl_f16_from_double(double x) { return round_to_small_float(x, 5, 10); }
uint16_t tl_f16_from_float(float x) { return round_to_small_float((double)x, 5, 10); }
uint16_t tl_bf16_from_double(double x) { return round_to_small_float(x, 8, 7); }
uint16_t tl_bf16_from_float(float x) { return round_to_small_float((double)x, 8, 7); }

float tl_f16_to_float(uint16_t h)
{
  const uint32_t sign = (uint32_t)(h >> 15) << 31;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp == 0) {
    /* zero or subnormal: mant * 2^-24, exact in float (the product is a power-of-two scaling) */
    float f = (float)mant * (1.0f / 16777216.0f);
    return sign ? -f : f;
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

float tl_bf16_to_float(uint16_t h)
{
  /* bf16 is the top half of an f32. */
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
