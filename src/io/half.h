/* half.h - f16 and bf16 storage conversions to and from f32 (io layer, internal).
 *
 * Round to nearest even; NaN stays NaN, overflow goes to infinity, f16 subnormals are exact.
 * Static inline because the kernels convert whole tensors with them in their inner loops;
 * pure functions, usable from any layer above io. */
#ifndef TP__HALF_H
#define TP__HALF_H

#include <stdint.h>
#include <string.h>
#include "turnip/dtype.h"

static inline float tp__f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0) {
        if (m == 0) {
            bits = s;
        } else { /* subnormal: normalize */
            e = 127 - 15 + 1;
            while (!(m & 0x400)) {
                m <<= 1;
                e--;
            }
            bits = s | (e << 23) | ((m & 0x3ff) << 13);
        }
    } else if (e == 31) {
        bits = s | 0x7f800000u | (m << 13);
    } else {
        bits = s | ((e + 127 - 15) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t tp__f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t s = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e == 0xff) return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
    int32_t ee = (int32_t)e - 127 + 15;
    if (ee >= 31) return (uint16_t)(s | 0x7c00);
    if (ee <= 0) {
        if (ee < -10) return (uint16_t)s;
        m |= 0x800000;
        uint32_t shift = (uint32_t)(14 - ee);
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        return (uint16_t)(s | hm);
    }
    uint32_t hm = m >> 13, rem = m & 0x1fff;
    uint32_t out = s | ((uint32_t)ee << 10) | hm;
    if (rem > 0x1000 || (rem == 0x1000 && (hm & 1))) out++; /* may carry into the exponent: fine */
    return (uint16_t)out;
}

static inline float tp__bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t tp__f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffff)) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* Stores f as element i of an f32, f16 or bf16 array at dst (round to nearest even). */
static inline void tp__store_f32(void *dst, tp_dtype t, uint64_t i, float f)
{
    if (t == TP_DT_F32) {
        memcpy((char *)dst + 4 * i, &f, 4);
    } else {
        uint16_t h = t == TP_DT_F16 ? tp__f32_to_f16(f) : tp__f32_to_bf16(f);
        memcpy((char *)dst + 2 * i, &h, 2);
    }
}

#endif
