/* turnip/turnip.h - everything public: include this one. */
#ifndef TURNIP_TURNIP_H
#define TURNIP_TURNIP_H
#include "turnip/error.h"
#include "turnip/dtype.h"
#include "turnip/io.h"
#include "turnip/safetensors.h"
#include "turnip/graph.h"
#include "turnip/plan.h"
#include "turnip/offload.h"
#include "turnip/models.h"
#include "turnip/exec.h"
#include "turnip/cache.h"
#include "turnip/backend.h"
#include "turnip/app.h"
#define TP_VERSION "0.1.0"
#endif
