#pragma once

// Time-stepped driver for xu's dynamic experiments (Xu, Monien,
// Lueling, Lau; §6, Figs. 7 to 10) and the closed forms of its
// Lemmas 5.1 and 5.2.
//
// One time step is one diffusion operation, the paper's basic time step in
// the all-port model ("a dimension-exchange balancing operation takes 2n
// diffusion operations in an n-D mesh or torus"): in a step a DE method
// visits one colour class (the sweep of EdgeColoring, in turn), a diffusion
// method does one iteration. Loads are real-valued (infinitely divisible).
// In each step, first the balancing operation acts on the loads at the
// step's start, then every node adds its generation phi ~ Normal(mean,
// variance) and removes the constant consumption (never below zero).
//
// Invocation (§2): synchronous, every node every step. Asynchronous,
// node i is an invoker when its load is outside [low, high]; a diffusion
// step moves alpha (w_i - w_j) along every edge with an invoker at either
// end (the union of the invokers' balancing domains, all from the loads at
// the step's start); a DE step moves lambda (w_i - w_j) along every edge of
// the current colour class with an invoker at either end.

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/balance/topology.h"

namespace hyperfed::sim {

enum class XuAlgo { kOde = 0, kAde = 1, kOdf = 2, kAdf = 3 };
const char* XuAlgoName(XuAlgo a);

struct XuDynamicConfig {
  bool synchronous = true;
  double low = 200, high = 800;  // asynchronous invocation bounds (range 600)
  int steps = 200;
  double gen_mean = 100, gen_variance = 30, consumption = 100;
  double initial_max = 1000;  // initial loads uniform in [0, initial_max]
  // false: loads may go negative and the generation is the only change
  // (the linear model of Lemmas 5.1 and 5.2).
  bool clamp_at_zero = true;
  uint64_t seed = 1;
};

// Workload variance sum_i (w_i - mean)^2 after 0, 1, ..., steps time steps.
absl::StatusOr<std::vector<double>> XuDynamicRun(const balance::Topology& topo, XuAlgo algo,
                                                 const XuDynamicConfig& config);

// Lemma 5.1, Eq. (27): E[nu_df^t] for a synchronous diffusion with
// parameter alpha on a d-regular network of N nodes, as printed.
double XuLemma51(int t, int n_nodes, int degree, double alpha, double sigma0_sq, double sigma_sq);
// Lemma 5.2, Eq. (29): E[nu_de^t] after t+1 rounds of d pairwise steps
// with parameter lambda, as printed (s multiplies the sigma0^2 term too).
double XuLemma52(int t, int n_nodes, int degree, double lambda, double sigma0_sq, double sigma_sq);
// The same with the sigma0^2 term as the lemma's proof derives it,
// (b^{td+d} N - 1) sigma0^2, without the factor s.
double XuLemma52FromProof(int t, int n_nodes, int degree, double lambda, double sigma0_sq, double sigma_sq);

// Lemma 5.1's model run: W <- D W + Phi, t+1 times, from W^0 (no
// consumption, no clamping): the mean of nu over `runs` runs, for t = 0..T.
// Likewise for Lemma 5.2: W <- M_c W + Phi for each of the d colour
// classes, a round per t.
absl::StatusOr<std::vector<double>> XuLemmaMeasured(const balance::Topology& topo, bool diffusion, double parameter,
                                                    int max_t, int runs, uint64_t seed);

// Theorem 4.1, case 1 (a singular balancing domain: one invoker and its d
// neighbours, static loads i.i.d. with variance sigma0^2, N nodes): the
// expected variance X of the domain after one operation, sum over the
// domain of (w_i - global mean)^2, as the proof derives it.
// Eq. (9): diffusion with parameter alpha.
double XuTheorem41Df(int degree, double alpha, int n_nodes, double sigma0_sq);
// The proof's X_de, one-port: the invoker balances with its d neighbours in
// turn (Eq. 12); Eq. (13) is its value at lambda = 1/2.
double XuTheorem41DeOnePort(int degree, double lambda, int n_nodes, double sigma0_sq);
// All-port: in one time step the invoker balances with one neighbour.
double XuTheorem41DeAllPort(int degree, double lambda, int n_nodes, double sigma0_sq);

// The same three, measured: mean X over `runs` draws of loads uniform in
// [0, 1000], node 0 the invoker. {diffusion, DE one-port, DE all-port}.
std::array<double, 3> XuTheorem41Measured(const balance::Topology& topo, double alpha, double lambda, int runs,
                                          uint64_t seed);

}  // namespace hyperfed::sim
