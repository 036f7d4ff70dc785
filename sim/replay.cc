#include "sim/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <limits>
#include <map>
#include <queue>
#include <random>
#include <sstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/balance/choice.h"
#include "daemon/balance/easy.h"
#include "daemon/balance/modes.h"
#include "daemon/balance/placement.h"

namespace hyperfed::sim {

namespace bal = ::hyperfed::balance;

// ---------------------------------------------------------------- trace

absl::StatusOr<SwfTrace> ParseSwf(std::string_view text_in, std::string_view name_in) {
  const absl::string_view text(text_in.data(), text_in.size());
  const std::string name(name_in);
  SwfTrace t;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == ';') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() != 18)
      return absl::InvalidArgumentError(
          absl::StrCat(name, ":", line_no, ": a data line has 18 fields, this one has ", f.size()));
    int64_t v[18];
    for (int i = 0; i < 18; ++i) {
      if (!absl::SimpleAtoi(f[i], &v[i])) {
        // Some archive traces write whole numbers as decimals (field 6).
        double d;
        if (!absl::SimpleAtod(f[i], &d) || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15)
          return absl::InvalidArgumentError(absl::StrCat(name, ":", line_no, ": field ", i + 1, " '", f[i],
                                                         "' is not an integer"));
        v[i] = static_cast<int64_t>(d);
      }
    }
    SwfJob j;
    j.id = v[0];
    j.submit = v[1];
    j.run = v[3];
    j.cores = v[7] > 0 ? v[7] : v[4];
    j.user = v[11];
    j.line = line_no;
    if (j.run < 0 || j.cores <= 0) {
      ++t.skipped;
      continue;
    }
    if (j.submit < 0)
      return absl::InvalidArgumentError(absl::StrCat(name, ":", line_no, ": submit time ", j.submit, " is negative"));
    j.limit = v[8] > 0 ? std::max(v[8], j.run) : j.run;
    t.jobs.push_back(j);
  }
  return t;
}

absl::StatusOr<SwfTrace> ReadSwf(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read trace ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSwf(ss.str(), path);
}

double OfferedLoad(const std::vector<SwfJob>& jobs, int64_t total_cores) {
  if (jobs.empty() || total_cores <= 0) return 0;
  int64_t first = jobs[0].submit, last = jobs[0].submit;
  double work = 0;
  for (const SwfJob& j : jobs) {
    first = std::min(first, j.submit);
    last = std::max(last, j.submit);
    work += static_cast<double>(j.cores) * static_cast<double>(j.run);
  }
  if (last <= first) return 0;
  return work / (static_cast<double>(total_cores) * static_cast<double>(last - first));
}

void CompressToLoad(std::vector<SwfJob>* jobs, int64_t total_cores, double load) {
  const double now = OfferedLoad(*jobs, total_cores);
  if (now <= 0 || load <= 0) return;
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const SwfJob& j : *jobs) first = std::min(first, j.submit);
  const double factor = now / load;
  for (SwfJob& j : *jobs)
    j.submit = first + static_cast<int64_t>(std::llround(static_cast<double>(j.submit - first) * factor));
}

// ---------------------------------------------------------------- origins

absl::StatusOr<OriginSpec> ParseOrigin(std::string_view s_in, const std::vector<int64_t>& sites) {
  const absl::string_view s(s_in.data(), s_in.size());
  OriginSpec o;
  if (s == "proportional") return o;
  if (s == "uniform") {
    o.kind = OriginSpec::kUniform;
    return o;
  }
  if (s == "hot" || absl::StartsWith(s, "hot:")) {
    o.kind = OriginSpec::kHot;
    if (s == "hot") {
      o.hot_site = 0;
      for (size_t i = 1; i < sites.size(); ++i)
        if (sites[i] > sites[o.hot_site]) o.hot_site = static_cast<int>(i);
      return o;
    }
    int site;
    if (!absl::SimpleAtoi(s.substr(4), &site) || site < 0 || site >= static_cast<int>(sites.size()))
      return absl::InvalidArgumentError(absl::StrCat("bad --origin '", s, "': SITE is an index from 0 to ",
                                                     static_cast<int>(sites.size()) - 1));
    o.hot_site = site;
    return o;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("bad --origin '", s, "': expected proportional, uniform, hot or hot:SITE"));
}

std::string OriginName(const OriginSpec& o) {
  switch (o.kind) {
    case OriginSpec::kProportional:
      return "proportional";
    case OriginSpec::kUniform:
      return "uniform";
    case OriginSpec::kHot:
      return absl::StrCat("hot:", o.hot_site);
  }
  return "";
}

double Unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

namespace {

int PickWeighted(std::mt19937_64& rng, const std::vector<int>& among, const std::vector<double>& weight) {
  double total = 0;
  for (int s : among) total += weight[s];
  double x = Unit(rng) * total;
  for (int s : among) {
    if (x < weight[s]) return s;
    x -= weight[s];
  }
  return among.back();
}

}  // namespace

std::vector<int> AssignOrigins(const std::vector<SwfJob>& jobs, const std::vector<int64_t>& sites,
                               const OriginSpec& spec, uint64_t seed) {
  // Users in order of first appearance; a job with user -1 is its own user.
  std::map<int64_t, int> user_index;
  std::vector<int> user_of(jobs.size());
  std::vector<int64_t> widest, count;
  for (size_t i = 0; i < jobs.size(); ++i) {
    int u;
    if (jobs[i].user < 0) {
      u = static_cast<int>(widest.size());
      widest.push_back(0);
      count.push_back(0);
    } else {
      auto [it, fresh] = user_index.try_emplace(jobs[i].user, static_cast<int>(widest.size()));
      if (fresh) {
        widest.push_back(0);
        count.push_back(0);
      }
      u = it->second;
    }
    user_of[i] = u;
    widest[u] = std::max(widest[u], jobs[i].cores);
    ++count[u];
  }
  const int users = static_cast<int>(widest.size());
  std::mt19937_64 rng(seed);
  std::vector<double> weight(sites.size());
  for (size_t s = 0; s < sites.size(); ++s)
    weight[s] = spec.kind == OriginSpec::kProportional ? static_cast<double>(sites[s]) : 1.0;
  std::vector<int> origin_of_user(users, 0);
  std::vector<bool> placed(users, false);
  if (spec.kind == OriginSpec::kHot) {
    std::vector<int> order(users);
    for (int u = 0; u < users; ++u) order[u] = u;
    for (int i = users - 1; i > 0; --i) std::swap(order[i], order[static_cast<int>(rng() % (i + 1))]);
    const double half = static_cast<double>(jobs.size()) / 2;
    double hot = 0;
    for (int u : order) {
      if (widest[u] > sites[spec.hot_site]) continue;
      if (std::fabs(hot + count[u] - half) < std::fabs(hot - half)) {
        hot += count[u];
        origin_of_user[u] = spec.hot_site;
        placed[u] = true;
      }
    }
  }
  for (int u = 0; u < users; ++u) {
    if (placed[u]) continue;
    std::vector<int> fit;
    for (size_t s = 0; s < sites.size(); ++s)
      if (sites[s] >= widest[u] && !(spec.kind == OriginSpec::kHot && static_cast<int>(s) == spec.hot_site))
        fit.push_back(static_cast<int>(s));
    if (fit.empty()) {  // only the hot site (or none) fits
      for (size_t s = 0; s < sites.size(); ++s)
        if (sites[s] >= widest[u]) fit.push_back(static_cast<int>(s));
    }
    if (fit.empty()) fit.push_back(0);  // wider than every site: MakeWorkload drops such jobs first
    origin_of_user[u] = PickWeighted(rng, fit, weight);
  }
  std::vector<int> origin(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) origin[i] = origin_of_user[user_of[i]];
  return origin;
}

absl::StatusOr<Workload> MakeWorkload(const SwfTrace& trace, const std::vector<int64_t>& sites,
                                      const WorkloadOptions& o) {
  if (sites.empty()) return absl::InvalidArgumentError("no sites");
  int64_t widest = 0, total = 0;
  for (int64_t c : sites) {
    if (c <= 0) return absl::InvalidArgumentError(absl::StrCat("a site with ", c, " cores"));
    widest = std::max(widest, c);
    total += c;
  }
  Workload w;
  w.sites = sites;
  w.skipped = trace.skipped;
  for (const SwfJob& j : trace.jobs) {
    if (o.max_jobs > 0 && static_cast<int64_t>(w.jobs.size()) + w.dropped_wide >= o.max_jobs) break;
    if (j.cores > widest) {
      ++w.dropped_wide;
      continue;
    }
    w.jobs.push_back(j);
  }
  if (w.jobs.empty()) return absl::InvalidArgumentError("no job of the trace fits a site");
  std::stable_sort(w.jobs.begin(), w.jobs.end(), [](const SwfJob& a, const SwfJob& b) { return a.submit < b.submit; });
  w.load_before = OfferedLoad(w.jobs, total);
  if (o.load > 0) CompressToLoad(&w.jobs, total, o.load);
  w.load = OfferedLoad(w.jobs, total);
  w.origin = AssignOrigins(w.jobs, sites, o.origin, o.seed);
  ApplyEstimates(o.estimates, o.seed, &w.jobs);
  return w;
}

// ---------------------------------------------------------------- policies

std::vector<std::string> ReplayPolicyNames() {
  std::vector<std::string> out = {"none", "pooled", "earliest-start", "siblings"};
  std::vector<std::string> rounds;
  for (const std::string& m : bal::RoundModeNames())
    for (const char* c : {"newest", "gain"}) rounds.push_back(absl::StrCat(m, "/", c));
  out.insert(out.end(), rounds.begin(), rounds.end());
  for (const char* a : {"arrival", "arrival+queue"}) {
    out.push_back(a);
    for (const std::string& r : rounds) out.push_back(absl::StrCat(a, "+", r));
  }
  // Placement by best fit among near-ties (balance::FitRule).
  for (const char* f : {"fit", "fit+queue", "fit+queue+exact/gain"}) out.push_back(f);
  return out;
}

absl::Status CheckReplayPolicy(std::string_view name) {
  for (const std::string& p : ReplayPolicyNames())
    if (p == name) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("unknown policy '", std::string(name),
                                                 "'; known: ", absl::StrJoin(ReplayPolicyNames(), ", ")));
}

namespace {

enum class Kind { kNone, kPooled, kEarliest, kSiblings, kRound };

struct Site {
  int64_t cores = 0;
  std::vector<int> queue;    // pending jobs, queue order
  std::vector<int> running;  // running jobs
  uint64_t version = 0;      // bumped on every change
  // The last forecast, valid for (forecast_version, forecast_now).
  uint64_t forecast_version = std::numeric_limits<uint64_t>::max();
  int64_t forecast_now = -1;
  bal::EasyForecast forecast;
};

class Replayer {
 public:
  Replayer(const Workload& w, Kind kind, bool arrival, bool requeue, bool fit, const bal::RoundMode* mode,
           bal::JobChoice choice, const ReplayOptions& o)
      : w_(w), kind_(kind), arrival_(arrival), requeue_(requeue), mode_(mode), choice_(choice), o_(o) {
    const size_t n = w.jobs.size();
    if (kind == Kind::kPooled) {
      int64_t total = 0;
      for (int64_t c : w.sites) total += c;
      sites_.resize(1);
      sites_[0].cores = total;
    } else {
      sites_.resize(w.sites.size());
      for (size_t s = 0; s < w.sites.size(); ++s) sites_[s].cores = w.sites[s];
    }
    site_of_.assign(n, -1);
    start_.assign(n, -1);
    end_.assign(n, -1);
    moves_.assign(n, 0);
    last_move_.assign(n, std::numeric_limits<int64_t>::min());
    if (o.keep_records) move_times_.resize(n);
    dirty_.assign(sites_.size(), false);
    if (arrival_) {
      for (const Site& site : sites_) {
        bal::FitRule rule;
        if (fit) {
          rule.alpha = o.fit_alpha;
          rule.exponent = o.fit_exponent;
          rule.home_first = o.fit_home_first;
          rule.home_widest = site.cores;
        }
        placers_.push_back(bal::Placer(o.margin, rule));
      }
      published_.assign(sites_.size(), std::numeric_limits<uint64_t>::max());
    }
    // The round's cube: the smallest holding the sites, the rest empty.
    while ((size_t{1} << shape_.dimension) < sites_.size()) ++shape_.dimension;
    for (size_t p = sites_.size(); p < (size_t{1} << shape_.dimension); ++p)
      shape_.faults.push_back(static_cast<bal::NodeId>(p));
  }

  absl::Status Run() {
    const size_t n = w_.jobs.size();
    const int64_t t0 = n ? w_.jobs[0].submit : 0;
    const int64_t interval = std::max<int64_t>(o_.interval, 1);
    auto grid_ceil = [&](int64_t t) { return t0 + (t - t0 + interval - 1) / interval * interval; };
    int64_t next_round = t0;
    size_t next_sub = 0;
    constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
    // Heartbeats: a site publishes its profile at the first heartbeat (a
    // multiple of o_.heartbeat from t0) at or after it changed.
    const int64_t beat = std::max<int64_t>(o_.heartbeat, 1);
    auto beat_ceil = [&](int64_t t) { return t0 + (t - t0 + beat - 1) / beat * beat; };
    const bool beats = arrival_ && o_.heartbeat > 0;
    const bool fresh = arrival_ && o_.heartbeat == 0;
    const bool on_end = beats && requeue_ && o_.publish_on_end;
    ended_at_.assign(sites_.size(), false);
    int64_t next_beat = kInf;
    while (true) {
      int64_t t = kInf;
      if (next_sub < n) t = w_.jobs[next_sub].submit;
      if (!ends_.empty()) t = std::min(t, ends_.top().first);
      t = std::min(t, next_beat);
      if (kind_ == Kind::kRound) {
        if (pending_ > 0) {
          t = std::min(t, next_round);
        } else if (t != kInf) {
          next_round = std::max(next_round, grid_ceil(t));
        }
      }
      if (t == kInf) {
        if (pending_ > 0) return absl::InternalError("jobs left pending with nothing running");
        break;
      }
      bool ended = false;
      if (on_end) std::fill(ended_at_.begin(), ended_at_.end(), false);
      while (!ends_.empty() && ends_.top().first == t) {
        const int j = ends_.top().second;
        ends_.pop();
        Site& s = sites_[site_of_[j]];
        s.running.erase(std::find(s.running.begin(), s.running.end(), j));
        // The site sees what the job ran of its limit (FitRule's accuracy).
        if (arrival_) placers_[site_of_[j]].Finished(w_.jobs[j].run, w_.jobs[j].limit);
        Touch(site_of_[j]);
        if (on_end) ended_at_[site_of_[j]] = true;
        ended = true;
      }
      if (fresh && version_ != published_version_) {
        // Always fresh: every change is published at once, and waiting
        // jobs are placed again at every instant something changed.
        Publish(t);
        if (requeue_) RePlace(t);
      }
      if (on_end && ended) {
        // Event-driven publication: the sites where a job ended speak now,
        // and every site places its waiting jobs again on what it knows.
        for (size_t s = 0; s < sites_.size(); ++s)
          if (ended_at_[s]) PublishSite(static_cast<int>(s), t);
        RePlace(t);
      }
      if (beats) {
        if (next_beat == kInf && version_ != published_version_) next_beat = beat_ceil(t);
        if (next_beat <= t) {
          Publish(t);
          if (requeue_) RePlace(t);
          next_beat = kInf;
        }
      }
      while (next_sub < n && w_.jobs[next_sub].submit == t) {
        const int j = static_cast<int>(next_sub++);
        ++pending_;
        if (kind_ == Kind::kSiblings) {
          for (int s = 0; s < static_cast<int>(sites_.size()); ++s)
            if (w_.jobs[j].cores <= sites_[s].cores) Enqueue(j, s);
          continue;
        }
        const int s = Place(j, t);
        site_of_[j] = s;
        Enqueue(j, s);
      }
      if (kind_ == Kind::kSiblings) {
        ScheduleSiblings(t);
      } else {
        ScheduleDirty(t);
      }
      if (kind_ == Kind::kRound && t == next_round) {
        if (absl::Status st = Round(t); !st.ok()) return st;
        ScheduleDirty(t);
        next_round += interval;
      }
      if (beats && next_beat == kInf && version_ != published_version_) next_beat = beat_ceil(t + 1);
    }
    return absl::OkStatus();
  }

  PolicyResult Result(std::string_view policy) const {
    const size_t n = w_.jobs.size();
    std::vector<double> submit(n), start(n), end(n);
    for (size_t j = 0; j < n; ++j) {
      submit[j] = static_cast<double>(w_.jobs[j].submit);
      start[j] = static_cast<double>(start_[j]);
      end[j] = static_cast<double>(end_[j]);
    }
    PolicyResult r = JobMetrics(w_, submit, start, end, moves_);
    r.policy = std::string(policy);
    r.rounds = rounds_;
    r.queue_entries = queue_entries_;
    r.peak_queued = peak_queued_;
    if (o_.keep_records) {
      r.records.resize(n);
      for (size_t j = 0; j < n; ++j) r.records[j] = {site_of_[j], start_[j], end_[j], moves_[j], move_times_[j]};
    }
    return r;
  }

 private:
  void Touch(int s) {
    ++sites_[s].version;
    ++version_;
    dirty_[s] = true;
  }

  void Enqueue(int j, int s) {
    sites_[s].queue.push_back(j);
    ++queue_entries_;
    peak_queued_ = std::max(peak_queued_, ++queued_);
    Touch(s);
  }

  // Every site whose queue changed since it last published tells the
  // others its profile as of t.
  void Publish(int64_t t) {
    for (size_t s = 0; s < sites_.size(); ++s) PublishSite(static_cast<int>(s), t);
    published_version_ = version_;
  }
  // Site s tells the others its profile as of t, if its queue changed since
  // it last did.
  void PublishSite(int s, int64_t t) {
    if (published_[s] == sites_[s].version) return;
    published_[s] = sites_[s].version;
    const bal::StartProfile p = bal::ProfileFromForecast(Forecast(s, t));
    for (size_t o = 0; o < sites_.size(); ++o)
      if (static_cast<int>(o) != s) placers_[o].Publish(s, t, p);
  }

  std::vector<bal::RunningJob> RunningOf(const Site& s) const {
    std::vector<bal::RunningJob> r;
    r.reserve(s.running.size());
    for (int j : s.running) r.push_back({w_.jobs[j].cores, start_[j] + std::max<int64_t>(w_.jobs[j].limit, 1)});
    return r;
  }
  std::vector<bal::QueuedJob> QueueOf(const Site& s) const {
    std::vector<bal::QueuedJob> q;
    q.reserve(s.queue.size() + 1);
    for (int j : s.queue) q.push_back({w_.jobs[j].cores, w_.jobs[j].limit});
    return q;
  }

  // The site a job submitted at t joins.
  int Place(int j, int64_t t) {
    if (kind_ == Kind::kPooled) return 0;
    const int origin = w_.origin[j];
    if (arrival_) return PlaceAtArrival(j, t);
    if (kind_ != Kind::kEarliest) return origin;
    // earliest-start: the site where, appended to the tail, EASY starts it
    // first; ties to the origin, then to the lower index.
    int best = origin;
    int64_t best_start = StartIfAppended(origin, j, t);
    for (int s = 0; s < static_cast<int>(sites_.size()) && best_start > t; ++s) {
      if (s == origin) continue;
      const int64_t st = StartIfAppended(s, j, t);
      if (st < best_start) {
        best_start = st;
        best = s;
      }
    }
    if (best != origin) {
      ++moves_[j];
      if (o_.keep_records) move_times_[j].push_back(t);
    }
    return best;
  }

  // When EASY at site s starts job j, appended to its queue at t.
  int64_t StartIfAppended(int s, int j, int64_t t) const {
    const Site& site = sites_[s];
    if (w_.jobs[j].cores > site.cores) return bal::kNeverStarts;
    std::vector<bal::QueuedJob> q = QueueOf(site);
    q.push_back({w_.jobs[j].cores, w_.jobs[j].limit});
    return bal::EasyForecastStarts(site.cores, t, RunningOf(site), q).starts.back();
  }

  // The origin's Placer decides, on its own forecast and its peers'
  // published profiles (fresh ones when o_.heartbeat is 0).
  int PlaceAtArrival(int j, int64_t t) {
    const int origin = w_.origin[j];
    if (o_.heartbeat == 0) Publish(t);
    const int64_t home = StartIfAppended(origin, j, t);
    const bal::Placement p = placers_[origin].Place(
        t, {.cores = w_.jobs[j].cores,
            .limit = w_.jobs[j].limit,
            .wait_here = home == bal::kNeverStarts ? bal::kNeverStarts : home - t});
    if (p.peer < 0) return origin;
    // Placed away: as after a round's move (the destination's journal
    // records its arrival), a round moves it within the hysteresis time
    // only for the margin.
    last_move_[j] = t;
    recent_moves_.push_back(t);
    ++moves_[j];
    if (o_.keep_records) move_times_[j].push_back(t);
    return p.peer;
  }

  // arrival+queue: at each heartbeat every site offers its waiting jobs
  // (queue order) to its Placer as if they had just arrived: a job moves
  // when it would start at least the margin sooner at a peer, also one that
  // moved within the hysteresis time (as a round moves it: for the margin).
  // Waits here are the site's forecast at the beat.
  void RePlace(int64_t t) {
    for (int s = 0; s < static_cast<int>(sites_.size()); ++s) {
      Site& site = sites_[s];
      if (site.queue.empty()) continue;
      const bal::EasyForecast f = Forecast(s, t);
      std::vector<std::pair<size_t, int>> go;  // (queue index, peer)
      for (size_t k = 0; k < site.queue.size(); ++k) {
        const int j = site.queue[k];
        const int64_t wait = f.starts[k] == bal::kNeverStarts ? bal::kNeverStarts : f.starts[k] - t;
        if (wait < o_.margin) continue;
        const bal::Placement p = placers_[s].Place(
            t, {.cores = w_.jobs[j].cores, .limit = w_.jobs[j].limit, .wait_here = wait, .queued = true});
        if (p.peer >= 0) go.push_back({k, p.peer});
      }
      if (!go.empty()) MoveQueued(s, go, t);
    }
  }

  // Moves the queued jobs of site `src` at these queue indices (ascending)
  // to the tail of each one's destination, at t: a move of a round or a
  // placement, counted, recorded and recent from now.
  void MoveQueued(int src, const std::vector<std::pair<size_t, int>>& go, int64_t t) {
    Site& s = sites_[src];
    std::vector<bool> gone(s.queue.size(), false);
    for (const auto& [k, to] : go) {
      const int j = s.queue[k];
      gone[k] = true;
      sites_[to].queue.push_back(j);
      ++queue_entries_;
      site_of_[j] = to;
      ++moves_[j];
      last_move_[j] = t;
      recent_moves_.push_back(t);
      if (o_.keep_records) move_times_[j].push_back(t);
      Touch(to);
    }
    std::vector<int> left;
    for (size_t k = 0; k < s.queue.size(); ++k)
      if (!gone[k]) left.push_back(s.queue[k]);
    s.queue.swap(left);
    Touch(src);
  }

  // Siblings: every site wide enough holds a copy; at each instant the
  // sites' EASY run on their queues, a job whose copy starts somewhere runs
  // there (the origin first, then the lower index, when several would start
  // it at this instant) and its other copies are withdrawn at once. A site
  // that lost a job it would have started, or a copy, plans again, until no
  // site would start anything more now.
  void ScheduleSiblings(int64_t t) {
    const int sites = static_cast<int>(sites_.size());
    while (true) {
      std::vector<std::vector<int>> go(sites);
      std::map<int, int> winner;  // job -> site
      bool any = false;
      for (int s = 0; s < sites; ++s) {
        if (!dirty_[s]) continue;
        dirty_[s] = false;
        Site& site = sites_[s];
        if (site.queue.empty()) continue;
        for (size_t k : bal::EasyStartNow(site.cores, t, RunningOf(site), QueueOf(site))) {
          const int j = site.queue[k];
          go[s].push_back(j);
          auto [it, fresh] = winner.try_emplace(j, s);
          if (!fresh && s == w_.origin[j]) it->second = s;
          any = true;
        }
      }
      if (!any) return;
      for (int s = 0; s < sites; ++s)
        for (int j : go[s])
          if (winner[j] != s) dirty_[s] = true;  // planned with a job another site took
      for (const auto& [j, s] : winner) {
        // Withdraw every copy, then run it at s.
        for (int c = 0; c < sites; ++c) {
          std::vector<int>& q = sites_[c].queue;
          auto it = std::find(q.begin(), q.end(), j);
          if (it == q.end()) continue;
          q.erase(it);
          --queued_;
          Touch(c);
        }
        site_of_[j] = s;
        if (s != w_.origin[j]) {
          moves_[j] = 1;
          if (o_.keep_records) move_times_[j].push_back(t);
        }
        Start(j, s, t);
      }
    }
  }

  void Start(int j, int s, int64_t t) {
    start_[j] = t;
    end_[j] = t + w_.jobs[j].run;
    sites_[s].running.push_back(j);
    ends_.push({end_[j], j});
    --pending_;
  }

  void ScheduleDirty(int64_t t) {
    for (size_t s = 0; s < sites_.size(); ++s) {
      if (!dirty_[s]) continue;
      dirty_[s] = false;
      Site& site = sites_[s];
      if (site.queue.empty()) continue;
      const std::vector<size_t> go = bal::EasyStartNow(site.cores, t, RunningOf(site), QueueOf(site));
      if (go.empty()) continue;
      std::vector<int> left;
      left.reserve(site.queue.size() - go.size());
      size_t g = 0;
      for (size_t k = 0; k < site.queue.size(); ++k) {
        const int j = site.queue[k];
        if (g < go.size() && go[g] == k) {
          ++g;
          Start(j, static_cast<int>(s), t);
          --queued_;
        } else {
          left.push_back(j);
        }
      }
      site.queue.swap(left);
      ++site.version;
      ++version_;
    }
  }

  const bal::EasyForecast& Forecast(int s, int64_t t) {
    Site& site = sites_[s];
    if (site.forecast_version != site.version || site.forecast_now != t) {
      site.forecast = bal::EasyForecastStarts(site.cores, t, RunningOf(site), QueueOf(site));
      site.forecast_version = site.version;
      site.forecast_now = t;
    }
    return site.forecast;
  }

  absl::Status Round(int64_t t) {
    if (pending_ == 0) return absl::OkStatus();
    bool expired = false;
    while (!recent_moves_.empty() && recent_moves_.front() <= t - o_.hysteresis) {
      recent_moves_.pop_front();
      expired = true;
    }
    // Nothing changed since a round that moved nothing: this round would
    // plan and choose the same (every wait is a difference of forecast times,
    // and no forecast time passed without an event), so it moves nothing.
    if (!expired && !last_round_moved_ && version_ == last_round_version_) return absl::OkStatus();
    last_round_version_ = version_;
    last_round_moved_ = false;
    ++rounds_;
    const int sites = static_cast<int>(sites_.size());
    bal::LoadTable rows;
    for (int s = 0; s < sites; ++s) {
      int64_t widest_other = 0;
      for (int o = 0; o < sites; ++o)
        if (o != s) widest_other = std::max(widest_other, sites_[o].cores);
      std::vector<int64_t> cores;
      cores.reserve(sites_[s].queue.size());
      for (int j : sites_[s].queue) cores.push_back(w_.jobs[j].cores);
      rows.push_back({s, bal::MovableLoad(cores, widest_other), static_cast<double>(sites_[s].cores)});
    }
    auto plan = bal::PlanRound(*mode_, shape_, rows);
    if (!plan.ok()) return plan.status();
    if (plan->transfers.empty()) return absl::OkStatus();
    // Every destination's profile at round time.
    std::vector<bal::StartProfile> profile(sites);
    std::vector<bool> have(sites, false);
    for (const bal::Transfer& tr : plan->transfers) {
      if (have[tr.to]) continue;
      have[tr.to] = true;
      if (choice_ == bal::JobChoice::kGain) {
        profile[tr.to] = bal::ProfileFromForecast(Forecast(tr.to, t));
      } else {
        profile[tr.to].widest = sites_[tr.to].cores;  // newest reads only the widest width
      }
    }
    // Step by step; in each step every source chooses for all its transfers.
    const auto& trs = plan->transfers;
    for (size_t a = 0; a < trs.size();) {
      size_t b = a;
      while (b < trs.size() && trs[b].step == trs[a].step) ++b;
      std::vector<bal::Transfer> step(trs.begin() + a, trs.begin() + b);
      std::stable_sort(step.begin(), step.end(),
                       [](const bal::Transfer& x, const bal::Transfer& y) { return x.from < y.from; });
      for (size_t c = 0; c < step.size();) {
        size_t d = c;
        while (d < step.size() && step[d].from == step[c].from) ++d;
        MoveFrom(step[c].from, std::vector<bal::Transfer>(step.begin() + c, step.begin() + d), profile, t);
        c = d;
      }
      a = b;
    }
    return absl::OkStatus();
  }

  void MoveFrom(int src, const std::vector<bal::Transfer>& transfers, const std::vector<bal::StartProfile>& profile,
                int64_t t) {
    Site& s = sites_[src];
    if (s.queue.empty()) return;
    std::vector<bal::Outgoing> outs;
    for (const bal::Transfer& tr : transfers) outs.push_back({tr.to, tr.count, profile[tr.to]});
    const bal::EasyForecast* f = choice_ == bal::JobChoice::kGain ? &Forecast(src, t) : nullptr;
    std::vector<bal::Candidate> cands(s.queue.size());
    for (size_t k = 0; k < s.queue.size(); ++k) {
      const int j = s.queue[k];
      cands[k].cores = w_.jobs[j].cores;
      cands[k].limit = w_.jobs[j].limit;
      // Moved in an earlier round within the hysteresis time. A job moved
      // earlier in this round (a pairwise relay) may move on.
      cands[k].recent = last_move_[j] < t && last_move_[j] > t - o_.hysteresis;
      if (f) cands[k].wait_here = f->starts[k] == bal::kNeverStarts ? bal::kNeverStarts / 2 : f->starts[k] - t;
    }
    std::vector<bal::Chosen> chosen = bal::ChooseJobs(choice_, cands, outs, 1, o_.margin);
    if (chosen.empty()) return;
    std::sort(chosen.begin(), chosen.end(), [](const bal::Chosen& x, const bal::Chosen& y) { return x.job < y.job; });
    std::vector<std::pair<size_t, int>> go;
    for (const bal::Chosen& c : chosen) go.push_back({c.job, outs[c.transfer].to});
    MoveQueued(src, go, t);
    last_round_moved_ = true;
  }

  const Workload& w_;
  Kind kind_;
  bool arrival_;
  bool requeue_;
  std::vector<bal::Placer> placers_;  // arrival: each site's
  std::vector<uint64_t> published_;   // arrival: the version each site last published
  std::vector<bool> ended_at_;        // publish_on_end: sites where a job ended at this instant
  uint64_t published_version_ = std::numeric_limits<uint64_t>::max();
  int64_t queue_entries_ = 0, queued_ = 0, peak_queued_ = 0;
  const bal::RoundMode* mode_;
  bal::JobChoice choice_;
  ReplayOptions o_;
  bal::RoundShape shape_;
  std::vector<Site> sites_;
  std::vector<bool> dirty_;
  std::vector<int> site_of_;
  std::vector<int64_t> start_, end_;
  std::vector<int> moves_;
  std::vector<int64_t> last_move_;
  std::vector<std::vector<int64_t>> move_times_;
  std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>, std::greater<>> ends_;
  int64_t pending_ = 0;
  uint64_t version_ = 0;
  uint64_t last_round_version_ = std::numeric_limits<uint64_t>::max();
  bool last_round_moved_ = false;
  std::deque<int64_t> recent_moves_;
  int64_t rounds_ = 0;
};

}  // namespace

PolicyResult JobMetrics(const Workload& w, absl::Span<const double> submit, absl::Span<const double> start,
                        absl::Span<const double> end, absl::Span<const int> moves) {
  PolicyResult r;
  const size_t n = w.jobs.size();
  r.jobs = static_cast<int64_t>(n);
  std::vector<double> waits(n);
  double sum_wait = 0, sum_bsld = 0, work = 0;
  const double first = n ? static_cast<double>(w.jobs[0].submit) : 0;
  double last_end = first;
  for (size_t j = 0; j < n; ++j) {
    const SwfJob& job = w.jobs[j];
    const double wait = start[j] - submit[j];
    waits[j] = wait;
    sum_wait += wait;
    sum_bsld += std::max(1.0, (wait + static_cast<double>(job.run)) /
                                  static_cast<double>(std::max<int64_t>(job.run, kSlowdownTau)));
    work += static_cast<double>(job.cores) * static_cast<double>(job.run);
    last_end = std::max(last_end, end[j]);
    if (moves[j] > 0) ++r.jobs_moved;
    r.moves += moves[j];
  }
  if (n) {
    std::sort(waits.begin(), waits.end());
    r.mean_wait = sum_wait / n;
    r.median_wait = n % 2 ? waits[n / 2] : (waits[n / 2 - 1] + waits[n / 2]) / 2;
    r.p95_wait = waits[static_cast<size_t>(std::ceil(0.95 * n)) - 1];
    r.mean_bounded_slowdown = sum_bsld / n;
    r.jobs_moved_pct = 100.0 * r.jobs_moved / n;
  }
  int64_t total = 0;
  for (int64_t c : w.sites) total += c;
  if (last_end > first) r.utilisation = work / (static_cast<double>(total) * (last_end - first));
  r.moves_per_moved_job = r.jobs_moved ? static_cast<double>(r.moves) / r.jobs_moved : 0;
  return r;
}

absl::StatusOr<PolicyResult> ReplayPolicy(const Workload& w, std::string_view policy, const ReplayOptions& o) {
  if (absl::Status st = CheckReplayPolicy(policy); !st.ok()) return st;
  if (o.interval < 1) return absl::InvalidArgumentError("the balancing interval must be at least 1 s");
  if (o.hysteresis < 0) return absl::InvalidArgumentError("the hysteresis time must not be negative");
  if (o.heartbeat < 0) return absl::InvalidArgumentError("the heartbeat interval must not be negative");
  if (o.margin < 1) return absl::InvalidArgumentError("the placement margin must be at least 1 s");
  Kind kind = Kind::kRound;
  const bal::RoundMode* mode = nullptr;
  bal::JobChoice choice = bal::JobChoice::kGain;
  std::string_view rounds = policy;
  const bool fit = policy.substr(0, 3) == "fit";
  const bool arrival = policy.substr(0, 7) == "arrival" || fit;
  const std::string_view head = fit ? "fit" : "arrival";
  if (arrival) rounds = policy == head ? "none" : policy.substr(head.size() + 1);
  const bool requeue = arrival && rounds.substr(0, 5) == "queue";
  if (requeue) rounds = rounds == "queue" ? "none" : rounds.substr(std::string_view("queue+").size());
  if (rounds == "none") {
    kind = Kind::kNone;
  } else if (rounds == "pooled") {
    kind = Kind::kPooled;
  } else if (rounds == "earliest-start") {
    kind = Kind::kEarliest;
  } else if (rounds == "siblings") {
    kind = Kind::kSiblings;
  } else {
    const size_t slash = rounds.find('/');
    mode = bal::FindRoundMode(rounds.substr(0, slash));
    auto c = bal::ParseJobChoice(rounds.substr(slash + 1));
    if (!mode || !c.ok()) return absl::InvalidArgumentError(absl::StrCat("unknown policy '", std::string(policy), "'"));
    choice = *c;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Replayer r(w, kind, arrival, requeue, fit, mode, choice, o);
  if (absl::Status st = r.Run(); !st.ok()) return st;
  PolicyResult res = r.Result(policy);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

// ---------------------------------------------------------------- output

namespace {

std::string Header(const Workload& w, const ReplayRun& r) {
  int64_t total = 0;
  for (int64_t c : w.sites) total += c;
  return absl::StrFormat(
      "trace %s: %d jobs replayed (%d lines skipped: run time < 0 or no processors; %d jobs wider than the widest "
      "site dropped)\n"
      "sites %s (%d cores), origin %s, seed %d, offered load %.3f (trace %.3f), time limits %s\n"
      "rounds every %d s, hysteresis %d s; arrival: heartbeat %d s, margin %d s; * the daemon's default policy\n",
      r.trace, w.jobs.size(), w.skipped, w.dropped_wide, absl::StrJoin(w.sites, ","), total, r.origin, r.seed, w.load,
      w.load_before, r.estimates, r.options.interval, r.options.hysteresis, r.options.heartbeat, r.options.margin);
}

}  // namespace

std::string ReplayText(const Workload& w, const ReplayRun& r) {
  std::string out = Header(w, r);
  absl::StrAppendFormat(&out, "%-28s | %10s | %10s | %10s | %9s | %6s | %11s | %6s | %11s | %13s | %7s\n", "policy",
                        "mean wait", "median", "p95 wait", "mean bsld", "util", "jobs moved", "%", "moves/moved",
                        "queue entries", "time");
  for (const PolicyResult& p : r.results)
    absl::StrAppendFormat(
        &out, "%-28s | %9.0fs | %9.0fs | %9.0fs | %9.2f | %6.3f | %11d | %5.1f%% | %11.2f | %13d | %6.2fs\n",
        absl::StrCat(p.policy, p.policy == kDefaultReplayPolicy ? " *" : ""), p.mean_wait, p.median_wait, p.p95_wait,
        p.mean_bounded_slowdown, p.utilisation, p.jobs_moved, p.jobs_moved_pct, p.moves_per_moved_job,
        p.queue_entries, p.seconds);
  absl::StrAppend(&out, "wait in seconds; bsld: bounded slowdown, tau ", kSlowdownTau, " s\n");
  return out;
}

std::string ReplayJson(const Workload& w, const ReplayRun& r) {
  std::string out = "{\n";
  absl::StrAppendFormat(&out, "  \"trace\": \"%s\",\n", absl::CHexEscape(r.trace));
  absl::StrAppendFormat(&out, "  \"sites\": [%s],\n", absl::StrJoin(w.sites, ", "));
  absl::StrAppendFormat(&out, "  \"origin\": \"%s\",\n  \"seed\": %d,\n", r.origin, r.seed);
  absl::StrAppendFormat(&out, "  \"jobs\": %d,\n  \"skipped\": %d,\n  \"dropped_wide\": %d,\n", w.jobs.size(),
                        w.skipped, w.dropped_wide);
  absl::StrAppendFormat(&out, "  \"trace_load\": %.6f,\n  \"load\": %.6f,\n", w.load_before, w.load);
  absl::StrAppendFormat(&out, "  \"estimates\": \"%s\",\n", r.estimates);
  absl::StrAppendFormat(&out, "  \"interval\": %d,\n  \"hysteresis\": %d,\n  \"tau\": %d,\n", r.options.interval,
                        r.options.hysteresis, kSlowdownTau);
  absl::StrAppendFormat(&out, "  \"heartbeat\": %d,\n  \"margin\": %d,\n", r.options.heartbeat, r.options.margin);
  absl::StrAppend(&out, "  \"policies\": [\n");
  for (size_t i = 0; i < r.results.size(); ++i) {
    const PolicyResult& p = r.results[i];
    absl::StrAppendFormat(&out,
                          "    {\"policy\": \"%s\", \"jobs\": %d, \"mean_wait\": %.3f, \"median_wait\": %.3f, "
                          "\"p95_wait\": %.3f, \"mean_bounded_slowdown\": %.6f, \"utilisation\": %.6f, "
                          "\"jobs_moved\": %d, \"jobs_moved_pct\": %.4f, \"moves\": %d, "
                          "\"moves_per_moved_job\": %.4f, \"queue_entries\": %d, \"peak_queued\": %d, "
                          "\"default\": %s}%s\n",
                          p.policy, p.jobs, p.mean_wait, p.median_wait, p.p95_wait, p.mean_bounded_slowdown,
                          p.utilisation, p.jobs_moved, p.jobs_moved_pct, p.moves, p.moves_per_moved_job,
                          p.queue_entries, p.peak_queued, p.policy == kDefaultReplayPolicy ? "true" : "false",
                          i + 1 < r.results.size() ? "," : "");
  }
  absl::StrAppend(&out, "  ]\n}\n");
  return out;
}

}  // namespace hyperfed::sim
