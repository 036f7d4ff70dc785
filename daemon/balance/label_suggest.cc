#include "daemon/balance/label_suggest.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hyperfed::balance {
namespace {

constexpr int kMaxLabel = 1 << kMaxLabelBits;

// The dimension of the smallest subcube holding labels a and b (0 if equal).
int Level(int a, int b) { return std::bit_width(static_cast<unsigned>(a ^ b)); }

// A token from the costs file, escaped and bounded, for an error message.
std::string Quote(absl::string_view s) {
  constexpr size_t kShown = 64;
  return absl::StrCat("\"", absl::CHexEscape(s.substr(0, kShown)), s.size() > kShown ? "...\"" : "\"");
}

absl::Status CheckLabels(const std::vector<int>& labels, int n, const char* what) {
  if (static_cast<int>(labels.size()) != n)
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", labels.size(), " labels for ", n, " sites"));
  absl::flat_hash_set<int> seen;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= kMaxLabel)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": site ", i, " has label ", labels[i], ", outside 0..", kMaxLabel - 1));
    if (!seen.insert(labels[i]).second)
      return absl::InvalidArgumentError(absl::StrCat(what, ": label ", labels[i], " is given twice"));
  }
  return absl::OkStatus();
}

absl::Status CheckCosts(const CostMatrix& c) {
  for (int i = 0; i < c.size(); ++i)
    for (int j = 0; j < c.size(); ++j)
      if (!(c(i, j) >= 0) || !std::isfinite(c(i, j)))
        return absl::InvalidArgumentError(absl::StrCat("cost of sites ", i, " and ", j, " is ", c(i, j)));
  return absl::OkStatus();
}

double LargestCost(const CostMatrix& c) {
  double top = 0;
  for (int i = 0; i < c.size(); ++i)
    for (int j = 0; j < c.size(); ++j) top = std::max(top, c(i, j));
  return top;
}

// LabelCost's weights: the largest cost minus each pair's.
CostMatrix Affinities(const CostMatrix& c) {
  const double top = LargestCost(c);
  CostMatrix a(c.size(), 0);
  for (int i = 0; i < c.size(); ++i)
    for (int j = i + 1; j < c.size(); ++j) a.Set(i, j, top - c(i, j));
  return a;
}

// The smallest dimension holding every label (as config's Roster::Dimension).
int CubeDimension(const std::vector<int>& labels) {
  int top = 0;
  for (int l : labels) top = std::max(top, l);
  return top == 0 ? 0 : std::bit_width(static_cast<unsigned>(top));
}

// Splits `s` (site numbers, ascending; more than `cap`) into two sides of at
// most `cap` sites each with a low affinity `c` across the cut. Returns the
// side of each member (false: the lower half).
std::vector<bool> Bisect(const CostMatrix& c, const std::vector<int>& s, int cap) {
  const int n = static_cast<int>(s.size());
  const int lo = n - cap, hi = cap;  // bounds on the lower side's size
  std::vector<double> local(static_cast<size_t>(n) * n);  // the set's own matrix, for the cache
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) local[static_cast<size_t>(a) * n + b] = c(s[a], s[b]);
  auto w = [&](int a, int b) { return local[static_cast<size_t>(a) * n + b]; };
  double total = 0;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) total += w(a, b);
  // Below this a cut "improvement" is rounding.
  const double tol = 1e-10 * total;

  // Greedy growth of the lower side from the first site: add the site tied
  // most to it and least to the rest.
  std::vector<bool> side(n, true);
  std::vector<double> to_low(n, 0), to_all(n, 0);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) to_all[a] += w(a, b);
  const int target = (n + 1) / 2;
  for (int size = 0, pick = 0; size < target; ++size) {
    if (size > 0) {
      pick = -1;
      for (int a = 0; a < n; ++a)
        if (side[a] && (pick < 0 || 2 * to_low[a] - to_all[a] > 2 * to_low[pick] - to_all[pick])) pick = a;
    }
    side[pick] = false;
    for (int a = 0; a < n; ++a) to_low[a] += w(a, pick);
  }

  // Fiduccia-Mattheyses passes. gain[a]: how much the cut falls if a changes
  // sides. The lower side may leave [lo, hi] by one inside a pass, so that
  // when both halves are full the pass alternates sides (a move and its
  // answer are a swap); only prefixes inside the bounds are kept.
  std::vector<double> gain(n);
  auto recompute = [&] {
    for (int a = 0; a < n; ++a) {
      gain[a] = 0;
      for (int b = 0; b < n; ++b) gain[a] += side[a] != side[b] ? w(a, b) : -w(a, b);
    }
  };
  constexpr int kMaxPasses = 16;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    recompute();
    int low = 0;
    for (int a = 0; a < n; ++a) low += !side[a];
    std::vector<bool> locked(n, false);
    std::vector<int> moves;
    double cut = 0, best = 0;
    size_t best_prefix = 0;
    for (int step = 0; step < n; ++step) {
      int pick = -1;
      for (int a = 0; a < n; ++a) {
        if (locked[a]) continue;
        const int next = side[a] ? low + 1 : low - 1;
        if (next < lo - 1 || next > hi + 1) continue;
        if (pick < 0 || gain[a] > gain[pick]) pick = a;
      }
      if (pick < 0) break;
      cut -= gain[pick];
      low += side[pick] ? 1 : -1;
      side[pick] = !side[pick];
      locked[pick] = true;
      moves.push_back(pick);
      for (int b = 0; b < n; ++b) {
        if (b == pick) continue;
        gain[b] += side[b] == side[pick] ? -2 * w(b, pick) : 2 * w(b, pick);
      }
      gain[pick] = -gain[pick];
      if (low >= lo && low <= hi && cut < best - tol) {
        best = cut;
        best_prefix = moves.size();
      }
    }
    for (size_t k = best_prefix; k < moves.size(); ++k) side[moves[k]] = !side[moves[k]];
    if (best_prefix == 0) break;
  }
  return side;
}

// Places `s` (ascending) in the 2^level positions from `base`, `c` the
// affinities.
void Place(const CostMatrix& c, const std::vector<int>& s, int level, int base, std::vector<int>* labels) {
  const int n = static_cast<int>(s.size());
  if (n == 0) return;
  while (level > 0 && n <= (1 << (level - 1))) --level;  // fits in one half: no pair crosses this level
  if (level == 0) {
    (*labels)[s[0]] = base;
    return;
  }
  const std::vector<bool> side = Bisect(c, s, 1 << (level - 1));
  std::vector<int> low, high;
  for (int a = 0; a < n; ++a) (side[a] ? high : low).push_back(s[a]);
  Place(c, low, level - 1, base, labels);
  Place(c, high, level - 1, base + (1 << (level - 1)), labels);
}

// Bottom-up: in level 1 the sites are paired, in level 2 the pairs, and so
// on up to level m (2^m >= n), each time the two groups with the most
// affinity between them first (ties to the groups with the lowest sites), so
// that the dearest links wait longest. A group left without a partner goes
// up alone. `c` the affinities.
std::vector<int> Merge(const CostMatrix& c, int m) {
  const int n = c.size();
  std::vector<int> labels(n, 0);
  std::vector<std::vector<int>> groups(n);
  for (int i = 0; i < n; ++i) groups[i] = {i};
  std::vector<double> g(static_cast<size_t>(n) * n);  // affinity between groups
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) g[static_cast<size_t>(a) * n + b] = c(a, b);
  for (int level = 1; level <= m && groups.size() > 1; ++level) {
    const size_t k = groups.size();
    // Groups stay ordered by their lowest site, so index order is site order.
    struct Pair {
      double affinity;
      uint32_t a, b;
    };
    std::vector<Pair> pairs;
    pairs.reserve(k * (k - 1) / 2);
    for (size_t a = 0; a < k; ++a)
      for (size_t b = a + 1; b < k; ++b)
        pairs.push_back({g[a * k + b], static_cast<uint32_t>(a), static_cast<uint32_t>(b)});
    std::sort(pairs.begin(), pairs.end(), [](const Pair& x, const Pair& y) {
      return x.affinity != y.affinity ? x.affinity > y.affinity : std::tie(x.a, x.b) < std::tie(y.a, y.b);
    });
    std::vector<int> partner(k, -1);
    for (const auto& [affinity, a, b] : pairs) {
      if (partner[a] >= 0 || partner[b] >= 0) continue;
      partner[a] = static_cast<int>(b);
      partner[b] = static_cast<int>(a);
    }
    // The merged groups, each the lower of a pair (or a group alone) first.
    std::vector<std::vector<size_t>> parts;
    for (size_t a = 0; a < k; ++a) {
      if (partner[a] >= 0 && static_cast<size_t>(partner[a]) < a) continue;
      parts.push_back({a});
      if (partner[a] >= 0) parts.back().push_back(partner[a]);
    }
    std::vector<std::vector<int>> next(parts.size());
    for (size_t x = 0; x < parts.size(); ++x) {
      next[x] = groups[parts[x][0]];
      if (parts[x].size() == 2) {
        for (int i : groups[parts[x][1]]) {
          labels[i] += 1 << (level - 1);
          next[x].push_back(i);
        }
      }
    }
    const size_t k2 = parts.size();
    std::vector<double> g2(k2 * k2, 0);
    for (size_t x = 0; x < k2; ++x)
      for (size_t y = 0; y < k2; ++y)
        if (x != y)
          for (size_t a : parts[x])
            for (size_t b : parts[y]) g2[x * k2 + y] += g[a * k + b];
    groups = std::move(next);
    g = std::move(g2);
  }
  return labels;
}

// Moves of a site to an empty position and swaps of two sites in the 2^m
// positions from 0, the best for each site in turn, while one lowers
// LabelCost (`c` the affinities). pay(i, z) = sum over sites k of
// c(i, k) x Level(z, label k), what site i would pay at z, prices a move or
// swap in O(1); after one only the positions of the smallest subcube holding
// both ends are repriced. pay is kept by site (a site's row is read for
// every position) and by position (a position's row is read for every site
// at another position), so that both reads are sequential.
void ImproveBySwaps(const CostMatrix& c, int m, std::vector<int>* labels) {
  const int n = c.size();
  const int size = 1 << m;
  std::vector<int>& pos = *labels;
  std::vector<int> at(size, -1);
  for (int i = 0; i < n; ++i) at[pos[i]] = i;
  double total = 0;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) total += c(i, j);
  const double tol = 1e-10 * total * std::max(m, 1);

  std::vector<double> by_site(static_cast<size_t>(n) * size, 0), by_pos(static_cast<size_t>(size) * n, 0);
  auto site_row = [&](int i) { return by_site.data() + static_cast<size_t>(i) * size; };
  auto pos_row = [&](int z) { return by_pos.data() + static_cast<size_t>(z) * n; };
  std::vector<std::vector<double>> sums(m + 1);  // sums[h][b]: i's affinity to the sites in block b of size 2^h
  for (int i = 0; i < n; ++i) {
    sums[0].assign(size, 0);
    for (int z = 0; z < size; ++z)
      if (at[z] >= 0) sums[0][z] = c(i, at[z]);
    for (int h = 1; h <= m; ++h) {
      sums[h].assign(size >> h, 0);
      for (int b = 0; b < (size >> h); ++b) sums[h][b] = sums[h - 1][2 * b] + sums[h - 1][2 * b + 1];
    }
    double* p = site_row(i);
    for (int z = 0; z < size; ++z)
      for (int h = 1; h <= m; ++h) p[z] += h * sums[h - 1][(z >> (h - 1)) ^ 1];
    for (int z = 0; z < size; ++z) pos_row(z)[i] = p[z];
  }
  std::vector<double> own(size, 0);  // pay(site at z, z)
  for (int z = 0; z < size; ++z)
    if (at[z] >= 0) own[z] = site_row(at[z])[z];

  std::vector<double> coef(n), diff;
  constexpr int kMaxSweeps = 64;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool moved = false;
    for (int i = 0; i < n; ++i) {
      const int x = pos[i];
      const double* pi = site_row(i);
      const double* px = pos_row(x);  // px[j]: what j would pay at x
      double best = -tol;
      int best_z = -1;
      for (int z = 0; z < size; ++z) {
        if (z == x) continue;
        const int j = at[z];
        double d = pi[z] - pi[x];
        if (j >= 0) d += px[j] - own[z] + 2 * c(i, j) * Level(x, z);
        if (d < best) {
          best = d;
          best_z = z;
        }
      }
      if (best_z < 0) continue;
      // i moves x -> z, j (if any) z -> x: pay(k, v) changes by
      // (c(k, i) - c(k, j)) x (Level(v, z) - Level(v, x)), zero outside the
      // smallest subcube holding x and z.
      const int z = best_z, j = at[z];
      const int h = Level(x, z);
      const int first = x & ~((1 << h) - 1);
      diff.resize(1 << h);
      for (int v = 0; v < (1 << h); ++v) diff[v] = Level(first + v, z) - Level(first + v, x);
      for (int k = 0; k < n; ++k) coef[k] = c(k, i) - (j >= 0 ? c(k, j) : 0);
      for (int k = 0; k < n; ++k) {
        double* p = site_row(k) + first;
        const double a = coef[k];
        for (int v = 0; v < (1 << h); ++v) p[v] += a * diff[v];
      }
      for (int v = 0; v < (1 << h); ++v) {
        double* p = pos_row(first + v);
        const double a = diff[v];
        if (a == 0) continue;
        for (int k = 0; k < n; ++k) p[k] += a * coef[k];
      }
      pos[i] = z;
      at[z] = i;
      at[x] = j;
      if (j >= 0) pos[j] = x;
      for (int v = first; v < first + (1 << h); ++v) own[v] = at[v] >= 0 ? site_row(at[v])[v] : 0;
      moved = true;
    }
    if (!moved) break;
  }
}

// Mirroring the two halves of any subcube changes no pair's level. Chooses
// the mirrorings: the coordinator (the site with the lowest current label)
// at label 0, and the most sites at their current labels.
class Orientation {
 public:
  Orientation(const std::vector<int>& suggested, const std::vector<int>& current)
      : suggested_(suggested), current_(current) {
    coordinator_ = static_cast<int>(std::min_element(current.begin(), current.end()) - current.begin());
  }

  // Labels for the sites, whose suggested labels are below 2^level.
  std::vector<int> Labels(int level) {
    std::vector<int> all(suggested_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    std::vector<int> out(suggested_.size());
    Assign(level, all, 0, &out);
    return out;
  }

 private:
  struct Halves {
    std::vector<int> low, high;
    int forced = -1;  // 0: keep, 1: mirror, -1: free
  };

  Halves Split(int level, const std::vector<int>& sites) const {
    Halves h;
    for (int s : sites) {
      const bool high = (suggested_[s] >> (level - 1)) & 1;
      (high ? h.high : h.low).push_back(s);
      if (s == coordinator_) h.forced = high ? 1 : 0;  // its half goes to the low side
    }
    return h;
  }

  bool Holds(const std::vector<int>& sites, int level, int base) const {
    for (int s : sites)
      if (s == coordinator_ || (current_[s] >= base && current_[s] < base + (1 << level))) return true;
    return false;
  }

  // The most sites of `sites` (a subcube of suggested labels) that can keep
  // their current labels when the subcube is placed at `base`.
  int Best(int level, const std::vector<int>& sites, int base) const {
    if (sites.empty() || !Holds(sites, level, base)) return 0;
    if (level == 0) return current_[sites[0]] == base ? 1 : 0;
    const Halves h = Split(level, sites);
    const int half = 1 << (level - 1);
    const int keep = h.forced == 1 ? -1 : Best(level - 1, h.low, base) + Best(level - 1, h.high, base + half);
    const int mirror = h.forced == 0 ? -1 : Best(level - 1, h.high, base) + Best(level - 1, h.low, base + half);
    return std::max(keep, mirror);
  }

  void Assign(int level, const std::vector<int>& sites, int base, std::vector<int>* out) const {
    if (sites.empty()) return;
    if (level == 0) {
      (*out)[sites[0]] = base;
      return;
    }
    const Halves h = Split(level, sites);
    const int half = 1 << (level - 1);
    bool mirror = h.forced == 1;
    if (h.forced < 0 && Holds(sites, level, base)) {
      const int keep = Best(level - 1, h.low, base) + Best(level - 1, h.high, base + half);
      mirror = Best(level - 1, h.high, base) + Best(level - 1, h.low, base + half) > keep;
    }
    Assign(level - 1, mirror ? h.high : h.low, base, out);
    Assign(level - 1, mirror ? h.low : h.high, base + half, out);
  }

  const std::vector<int>& suggested_;
  const std::vector<int>& current_;
  int coordinator_ = 0;
};

absl::StatusOr<std::vector<Transfer>> PlanUnder(const RoundMode& mode, const LoadTable& before,
                                                const std::vector<int>& site_of_row, const std::vector<int>& labels,
                                                RoundShape* shape) {
  LoadTable table = before;
  for (size_t r = 0; r < table.size(); ++r) table[r].label = labels[site_of_row[r]];
  std::sort(table.begin(), table.end(), [](const LoadRow& a, const LoadRow& b) { return a.label < b.label; });
  shape->dimension = CubeDimension(labels);
  shape->faults.clear();
  size_t r = 0;
  for (NodeId u = 0; u < (NodeId{1} << shape->dimension); ++u) {
    if (r < table.size() && table[r].label == u) {
      ++r;
    } else {
      shape->faults.push_back(u);
    }
  }
  auto plan = PlanRound(mode, *shape, table);
  if (!plan.ok()) return plan.status();
  return std::move(plan->transfers);
}

}  // namespace

CostMatrix::CostMatrix(int n, double fill) : n_(n), cost_(static_cast<size_t>(n) * n, fill) {
  for (int i = 0; i < n; ++i) cost_[static_cast<size_t>(i) * n + i] = 0;
}

void CostMatrix::Set(int i, int j, double cost) {
  cost_[static_cast<size_t>(i) * n_ + j] = cost;
  cost_[static_cast<size_t>(j) * n_ + i] = cost;
}

absl::StatusOr<CostMatrix> ParseLinkCosts(std::string_view text, const std::vector<std::string>& sites) {
  if (sites.size() > static_cast<size_t>(kMaxSuggestSites))
    return absl::InvalidArgumentError(absl::StrCat(sites.size(), " sites; at most ", kMaxSuggestSites));
  absl::flat_hash_map<std::string_view, int> index;
  for (size_t i = 0; i < sites.size(); ++i)
    if (!index.emplace(sites[i], static_cast<int>(i)).second)
      return absl::InvalidArgumentError(absl::StrCat("site ", Quote(sites[i]), " is listed twice"));

  struct Given {
    double cost;
    int line;
  };
  absl::flat_hash_map<std::pair<int, int>, Given> given;
  std::vector<std::pair<std::pair<int, int>, double>> order;  // as listed, for the matrix
  int line = 0;
  // This Abseil's string_view is its own type, not std::string_view.
  for (absl::string_view text_line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line;
    text_line = text_line.substr(0, text_line.find('#'));
    std::vector<absl::string_view> f = absl::StrSplit(text_line, absl::ByAnyChar(" \t\r\f\v"), absl::SkipEmpty());
    if (f.empty()) continue;
    auto error = [&](auto&&... what) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line, ": ", what...));
    };
    if (f.size() != 3) return error("expected SITE SITE COST, got ", f.size(), " fields");
    int ends[2];
    for (int k = 0; k < 2; ++k) {
      auto it = index.find(std::string_view(f[k].data(), f[k].size()));
      if (it == index.end()) return error("unknown site ", Quote(f[k]), " (not in the roster)");
      ends[k] = it->second;
    }
    if (ends[0] == ends[1]) return error("site ", Quote(f[0]), " is paired with itself");
    double cost = 0;
    if (!absl::SimpleAtod(f[2], &cost)) return error("cost ", Quote(f[2]), " is not a number");
    if (!std::isfinite(cost) || cost < 0) return error("cost must be a finite number >= 0, got ", Quote(f[2]));
    cost += 0.0;  // -0 is 0
    const std::pair<int, int> key = std::minmax(ends[0], ends[1]);
    auto [it, fresh] = given.emplace(key, Given{cost, line});
    if (!fresh) {
      if (it->second.cost != cost)
        return error("pair ", Quote(f[0]), " ", Quote(f[1]), " costs ", cost, " here but ", it->second.cost,
                     " on line ", it->second.line);
      continue;
    }
    order.emplace_back(key, cost);
  }
  // An unlisted pair is taken to be as slow as the slowest listed link.
  double fill = order.empty() ? 1 : 0;
  for (const auto& [key, cost] : order) fill = std::max(fill, cost);
  CostMatrix out(static_cast<int>(sites.size()), fill);
  for (const auto& [key, cost] : order) out.Set(key.first, key.second, cost);
  return out;
}

double LabelCost(const CostMatrix& costs, const std::vector<int>& labels) {
  const double top = LargestCost(costs);
  double sum = 0;
  for (int i = 0; i < costs.size(); ++i)
    for (int j = i + 1; j < costs.size(); ++j) sum += (top - costs(i, j)) * Level(labels[i], labels[j]);
  return sum;
}

absl::StatusOr<std::vector<int>> SuggestLabels(const CostMatrix& costs, const std::vector<int>& current_labels,
                                               int dimension) {
  const int n = costs.size();
  if (dimension < 0 || dimension > kMaxLabelBits)
    return absl::InvalidArgumentError(absl::StrCat("dimension ", dimension, " outside 0..", kMaxLabelBits));
  if (n > kMaxSuggestSites)
    return absl::InvalidArgumentError(absl::StrCat(n, " sites; at most ", kMaxSuggestSites));
  if (n > (1 << dimension))
    return absl::InvalidArgumentError(absl::StrCat(n, " sites do not fit a ", dimension, "-cube"));
  if (auto st = CheckLabels(current_labels, n, "current labels"); !st.ok()) return st;
  if (auto st = CheckCosts(costs); !st.ok()) return st;
  if (n == 0) return std::vector<int>{};

  std::vector<int> all(n);
  for (int i = 0; i < n; ++i) all[i] = i;
  // Two starts, top-down and bottom-up. Bisection charges a cheap pair it
  // cuts one level, though the pair ends up several levels apart, so in a
  // large cube it splits clusters to save a little on the many dear pairs;
  // merging keeps clusters whole but pairs greedily (docs/algorithms.md,
  // "Labels that follow the links"). The cheaper start is improved by swaps.
  const CostMatrix affinity = Affinities(costs);
  std::vector<int> labels(n, 0);
  Place(affinity, all, dimension, 0, &labels);
  const int m = CubeDimension(labels);  // Place packs the sites into the lowest 2^m positions
  std::vector<int> merged = Merge(affinity, m);
  if (LabelCost(costs, merged) < LabelCost(costs, labels)) labels = std::move(merged);
  ImproveBySwaps(affinity, m, &labels);
  labels = Orientation(labels, current_labels).Labels(m);

  bool current_fits = true;
  for (int l : current_labels) current_fits = current_fits && l < (1 << dimension);
  if (current_fits && LabelCost(costs, current_labels) <= LabelCost(costs, labels)) return current_labels;
  return labels;
}

absl::StatusOr<double> TransferCost(const CostMatrix& costs, const std::vector<int>& labels,
                                    const std::vector<Transfer>& transfers) {
  if (auto st = CheckLabels(labels, costs.size(), "labels"); !st.ok()) return st;
  absl::flat_hash_map<int, int> site;
  for (size_t i = 0; i < labels.size(); ++i) site[labels[i]] = static_cast<int>(i);
  double sum = 0;
  for (const Transfer& t : transfers) {
    auto from = site.find(t.from), to = site.find(t.to);
    if (from == site.end() || to == site.end())
      return absl::InvalidArgumentError(
          absl::StrCat("transfer ", t.from, " -> ", t.to, " names a label no site holds"));
    sum += static_cast<double>(t.count) * costs(from->second, to->second);
  }
  return sum;
}

absl::StatusOr<RelabelGain> CompareTransfers(const RoundMode& mode, const LoadTable& before,
                                             const std::vector<int>& old_labels, const std::vector<int>& new_labels,
                                             const CostMatrix& costs) {
  const int n = costs.size();
  if (auto st = CheckLabels(old_labels, n, "old labels"); !st.ok()) return st;
  if (auto st = CheckLabels(new_labels, n, "new labels"); !st.ok()) return st;
  absl::flat_hash_map<int, int> site;
  for (int i = 0; i < n; ++i) site[old_labels[i]] = i;
  std::vector<int> site_of_row;
  absl::flat_hash_set<int> seen;
  for (const LoadRow& r : before) {
    auto it = site.find(r.label);
    if (it == site.end())
      return absl::InvalidArgumentError(absl::StrCat("a row for label ", r.label, ", which no site holds"));
    if (!seen.insert(r.label).second)
      return absl::InvalidArgumentError(absl::StrCat("two rows for label ", r.label));
    if (r.load < 0) return absl::InvalidArgumentError(absl::StrCat("negative load at label ", r.label));
    if (!(r.capacity >= 0) || !std::isfinite(r.capacity))
      return absl::InvalidArgumentError(absl::StrCat("capacity ", r.capacity, " at label ", r.label));
    site_of_row.push_back(it->second);
  }

  RelabelGain g;
  auto old_transfers = PlanUnder(mode, before, site_of_row, old_labels, &g.old_shape);
  if (!old_transfers.ok()) return old_transfers.status();
  auto new_transfers = PlanUnder(mode, before, site_of_row, new_labels, &g.new_shape);
  if (!new_transfers.ok()) return new_transfers.status();
  g.old_transfers = std::move(*old_transfers);
  g.new_transfers = std::move(*new_transfers);
  auto old_cost = TransferCost(costs, old_labels, g.old_transfers);
  if (!old_cost.ok()) return old_cost.status();
  auto new_cost = TransferCost(costs, new_labels, g.new_transfers);
  if (!new_cost.ok()) return new_cost.status();
  g.old_cost = *old_cost;
  g.new_cost = *new_cost;
  return g;
}

}  // namespace hyperfed::balance
