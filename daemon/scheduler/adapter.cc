#include "daemon/scheduler/adapter.h"

namespace hyperfed::scheduler {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "pending";
    case JobState::kHeld:
      return "held";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kCancelled:
      return "cancelled";
  }
  // Reached only for a value cast from an out-of-range integer.
  return "unknown";
}

}  // namespace hyperfed::scheduler
