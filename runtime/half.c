/* half.c: f16, bf16 and the 8-bit floats e4m3 and e5m2 on the host, bit-exact and without libm or
 * _Float16.
 *
 * All four are "small floats" that differ in field widths and in what the all-ones exponent means:
 *
 *        sign | exponent | mantissa    bias   all-ones exponent        too large
 *   f16    1  |    5     |    10        15    inf, NaN                 inf
 *   bf16   1  |    8     |     7       127    inf, NaN                 inf
 *   e5m2   1  |    5     |     2        15    inf, NaN                 largest finite (57344)
 *   e4m3   1  |    4     |     3         7    numbers; S.1111.111 NaN  largest finite (448)
 *
 * so one rounding routine, parametrised by the widths and the last two columns, serves them all. It
 * rounds from double: a float converts to double exactly, and rounding a double once avoids the double
 * rounding of going double -> float -> half. The 8-bit formats saturate as PTX's cvt.rn.satfinite
 * does (the GPU's conversion), infinity included.
 */
#include <string.h>

#include "tilec_runtime.h"

/* What a format does at the top of its range: the last two columns of the table above. */
typedef enum {
  TOP_IEEE,         /* f16, bf16: the all-ones exponent is inf and NaN; too large rounds to inf */
  TOP_SATFINITE,    /* e5m2: IEEE's layout, but too large (inf included) gives the largest finite */
  TOP_FN_SATFINITE, /* e4m3 ("FN": finite and NaN): the all-ones exponent is one more binade whose
                       all-ones mantissa is the only NaN; saturates as TOP_SATFINITE */
} Top;

/* Round x to the nearest value with `ebits` exponent and `mbits` mantissa bits, ties to even, and
 * return its bit pattern; what is too large, and NaN, as `top` says. */
static uint16_t round_to_small_float(double x, int ebits, int mbits, Top top)
{
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  const uint16_t sign = (uint16_t)((b >> 63) << (ebits + mbits));
  const int dexp = (int)((b >> 52) & 0x7FF);
  const uint64_t dmant = b & ((UINT64_C(1) << 52) - 1);
  const int max_biased = (1 << ebits) - 1; /* the all-ones exponent */
  const uint32_t mant_mask = (1u << mbits) - 1;
  const uint32_t inf = (uint32_t)max_biased << mbits;
  const uint32_t max_finite = top == TOP_FN_SATFINITE ? inf | (mant_mask - 1) : inf - 1;
  const uint32_t too_large = top == TOP_IEEE ? inf : max_finite;

  /* NaN: made quiet (top mantissa bit) so that it stays a NaN; in the 8-bit formats 0x7F, sign
   * dropped, what the GPU's cvt gives (a NaN in both) */
  if (dexp == 0x7FF && dmant)
    return top == TOP_IEEE ? (uint16_t)(sign | inf | (1u << (mbits - 1))) : 0x7F;
  if (dexp == 0x7FF)
    return (uint16_t)(sign | too_large);
  if (dexp == 0) /* zero, or a double subnormal (< 2^-1022): far below every format's range */
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
  /* rounded as if the exponent had no limit, then compared: e4m3's 464 ties down to 448, finite */
  if (biased > max_biased || (((uint32_t)biased << mbits) | (uint32_t)(q & mant_mask)) > max_finite)
    return (uint16_t)(sign | too_large);
  return (uint16_t)(sign | ((uint32_t)biased << mbits) | (uint32_t)(q & mant_mask));
}

uint16_t tl_f16_from_double(double x) { return round_to_small_float(x, 5, 10, TOP_IEEE); }
uint16_t tl_f16_from_float(float x) { return round_to_small_float((double)x, 5, 10, TOP_IEEE); }
uint16_t tl_bf16_from_double(double x) { return round_to_small_float(x, 8, 7, TOP_IEEE); }
uint16_t tl_bf16_from_float(float x) { return round_to_small_float((double)x, 8, 7, TOP_IEEE); }
uint8_t tl_e4m3_from_double(double x) { return (uint8_t)round_to_small_float(x, 4, 3, TOP_FN_SATFINITE); }
uint8_t tl_e4m3_from_float(float x) { return tl_e4m3_from_double(x); }
uint8_t tl_e5m2_from_double(double x) { return (uint8_t)round_to_small_float(x, 5, 2, TOP_SATFINITE); }
uint8_t tl_e5m2_from_float(float x) { return tl_e5m2_from_double(x); }

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

/* e4m3 without its sign, shifted left by 7, is an f16 whose exponent's bias is 8 too large: widened
 * through f16 and scaled by 2^8, exactly (subnormals included). Exponent 15 is a binade of numbers
 * but for S.1111.111, the only NaN. */
float tl_e4m3_to_float(uint8_t h)
{
  float f;
  if ((h & 0x7F) == 0x7F) {
    const uint32_t bits = (uint32_t)(h >> 7) << 31 | 0x7FC00000u;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  f = tl_f16_to_float((uint16_t)((h & 0x7F) << 7)) * 256.0f;
  return h & 0x80 ? -f : f;
}

/* e5m2 is the top half of an f16, inf and NaNs included. */
float tl_e5m2_to_float(uint8_t h) { return tl_f16_to_float((uint16_t)(h << 8)); }
