#pragma once

// The registry of round modes (docs/design.md §5). A mode is what a
// balancing round computes; the round protocol around it (who talks to whom,
// when, with what deadline) lives in the federation layer. Config checking,
// the services, the status text, the round runner, the dry run and the
// simulator all look modes up here, so the dry run is the round: the same
// planning code on the same inputs.
//
// Two kinds of mode:
//  - gathering (`exact`, `mcwa`): every site of a component gathers the
//    component's whole load table (up the MCWA trees, across the balancing
//    subcube, back down) and derives the same plan with PlanComponent; each
//    site then carries out its own transfers.
//  - pairwise (`improved-dem`): in dimension k each site exchanges (load,
//    capacity) with its partner and keeps PairShare of the pair's sum.
// Drained sites have capacity 0: every mode gives them quota 0, and a
// component (or pair) with no capacity at all keeps its loads. Positions in
// the fault set (failed sites, empty positions) hold no load and take no
// part; gathering modes then run over MCWA's balancing subcubes and trees
// (nam §4), the pairwise mode skips the dimensions whose partner is missing
// (nam §6).

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/plan.h"
#include "daemon/balance/topology.h"

namespace hyperfed::balance {

// A round's cube: its dimension and the positions that take no part.
struct RoundShape {
  int dimension = 0;
  std::vector<NodeId> faults;  // sorted, no label twice
};

class RoundMode {
 public:
  virtual ~RoundMode() = default;
  virtual std::string_view name() const = 0;
  virtual bool gathers() const = 0;
  // What a round of this mode does on `shape`, in words.
  virtual std::string Describe(const RoundShape& shape) const = 0;
  // The papers' sequential step count for this shape, in words, to print
  // beside the round's own.
  virtual std::string PaperSteps(const RoundShape& shape) const = 0;

  // Gathering modes: every transfer inside one component, from its table
  // (rows sorted by label, one per live member). Transfers are numbered by
  // phase from 1; a site sends phase by phase. `topo` is the round's cube.
  virtual absl::StatusOr<Plan> PlanComponent(const Topology& topo, const LoadTable& component) const;
  // Pairwise modes: u's load after the exchange with its partner across
  // dimension k of an n-cube. Symmetric: u's and v's shares sum to w_u + w_v.
  virtual Load PairShare(NodeId u, int k, int n, Load w_u, Load w_v, double p_u, double p_v) const;
};

// The mode registered under `name`, or nullptr.
const RoundMode* FindRoundMode(std::string_view name);
// Every registered name, in the order the documentation lists them (the
// default first).
std::vector<std::string> RoundModeNames();
// InvalidArgument naming the known modes when `name` is not one.
absl::Status CheckRoundMode(std::string_view name);
inline constexpr std::string_view kDefaultRoundMode = "exact";

// The sequential depth a round on `shape` is sized by: the dimension n, or
// more where faults make an MCWA balancing subcube's tree depth T plus its
// dimension k deeper than n (a tree that detours around failed positions).
// A gather takes at most 3 x this many sequential steps, and a gathering
// mode's moves at most as many phases.
int RoundDepth(const RoundShape& shape);

// The live members of each component of `topo` (ascending labels): the
// whole live cube without faults, else one per MCWA balancing subcube.
absl::StatusOr<std::vector<std::vector<NodeId>>> RoundComponents(const Topology& topo);

// The whole round from the rows of every live site: what all the sites'
// parts do together. Loads and capacities of positions without a row count
// as 0; a row for a position in the fault set is an error. initial_loads and
// final_loads are indexed by label.
absl::StatusOr<Plan> PlanRound(const RoundMode& mode, const RoundShape& shape, const LoadTable& live);

}  // namespace hyperfed::balance
