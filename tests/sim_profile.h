/* sim_profile.h - the machine profile every sim test starts from: `devices` devices of 1 GiB
 * with a 1 TFLOP/s peak at `efficiency`, memory bandwidth `mem_bw`, kernel launch `launch_s`,
 * host links of `link_bw` each way and peer links of `peer_bw` (bytes/s); no host bus, no
 * copy latency, no wake-ups. Tests change the fields they are about. */
#ifndef TP_TEST_SIM_PROFILE_H
#define TP_TEST_SIM_PROFILE_H
#include <stdio.h>
#include <string.h>
#include "turnip/turnip.h"

static inline tp_sim_profile test_sim_profile(const char *name, int devices, double efficiency, double mem_bw,
                                              double launch_s, double link_bw, double peer_bw)
{
    tp_sim_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.devices = devices;
    p.device_mem = 1ull << 30;
    p.peak_flops = 1e12;
    p.efficiency = efficiency;
    p.mem_bw = mem_bw;
    p.launch_s = launch_s;
    p.h2d_bw = p.d2h_bw = link_bw;
    p.peer_bw = peer_bw;
    return p;
}
#endif
