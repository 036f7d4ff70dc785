#include "sim/paper.h"

namespace hyperfed::sim {

const std::vector<PaperEntry>& Papers() {
  static const std::vector<PaperEntry>* papers = new std::vector<PaperEntry>{};
  return *papers;
}

}  // namespace hyperfed::sim
