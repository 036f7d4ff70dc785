#include "sim/paper.h"
#include "sim/paper_chau_fu.h"
#include "sim/paper_nam.h"
#include "sim/paper_sharcnet.h"
#include "sim/paper_unit_flow.h"
#include "sim/paper_wu_shu.h"
#include "sim/paper_xu.h"

namespace hyperfed::sim {

const std::vector<PaperEntry>& Papers() {
  static const std::vector<PaperEntry>* papers = new std::vector<PaperEntry>{
      {"chau-fu", "003", "improved DEM Tables 1 and 2, the weighted 640/960 example", PaperChauFu},
      {"nam", "004", "CWA Example 1, MCWA Example 2, speedup of MCWA vs DEM vs RID against faults (Figs. 6-9)",
       PaperNam},
      {"wu-shu", "000", "DDE: Example 1, ring 19 -> 17, 4x4 torus, DDE vs GDE (Table I, Figs. 12-16)", PaperWuShu},
      {"xu", "002",
       "GDE and diffusion: ring of 64 (ODE 98, ADE/ODF ~1305, ADF 1684), Figs. 4-10, Tables 3-4, Lemmas 5.1-5.2",
       PaperXu},
      {"unit-flow", "001", "integer balancing flows from unit flows on any connected graph; l2 norm against Hu et al.",
       PaperUnitFlow},
      {"sharcnet", "003",
       "the SHARCNET study chau-fu promised: lublin_256 replayed at loads 0.7 and 0.85, three origins, every policy",
       PaperSharcnet},
  };
  return *papers;
}

}  // namespace hyperfed::sim
