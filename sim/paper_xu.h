#pragma once

// xu (Xu, Monien, Lueling, Lau): nearest-neighbour load balancing,
// §6, static synchronous balancing in the all-port model.

#include "absl/status/statusor.h"
#include "sim/paper.h"

namespace hyperfed::sim {

// Ring of 64 with loads uniform in [0, 1000]: communication steps until the
// workload variance is <= 1 for ODE, ADE, ODF, ADF (paper: 98, 1305, 1305,
// 1684), the 64x64 torus ODE figure (about 196), the ring-size curve (Fig.
// 4), the 2-D mesh curve (Fig. 5), the variance decay in a ring of 32
// (Fig. 6), the dynamic experiments (Figs. 7 to 10, sim/xu_dynamic.h) with
// Tables 3 and 4 and Theorem 4.1's orderings, and Lemmas 5.1 and 5.2's
// closed forms against their model.
absl::StatusOr<PaperReport> PaperXu(const PaperOptions& opts);

}  // namespace hyperfed::sim
