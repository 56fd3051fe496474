/* rng.c - the counter-based random numbers every layer uses (copy jitter, simulated jitter,
 * random weights and inputs): a value is a pure function of its key, so results depend on
 * seeds and indices only, never on the order in which threads ask. */
#include <math.h>
#include "io/util.h"

uint64_t tp__mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tp__normal(uint64_t key)
{
    uint64_t a = tp__mix64(key), b = tp__mix64(a ^ 0x632be59bd9b4e019ull);
    double u1 = ((double)(a >> 11) + 0.5) / 9007199254740992.0, u2 = ((double)(b >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
