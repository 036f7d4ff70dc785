#include "sim/paper.h"
#include "sim/paper_chau_fu.h"

namespace hyperfed::sim {

const std::vector<PaperEntry>& Papers() {
  static const std::vector<PaperEntry>* papers = new std::vector<PaperEntry>{
      {"chau-fu", "003", "improved DEM Tables 1 and 2, the weighted 640/960 example", PaperChauFu},
  };
  return *papers;
}

}  // namespace hyperfed::sim
