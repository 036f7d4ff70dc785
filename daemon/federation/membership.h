#pragma once

// Who is up (docs/design.md §6.11): a site probes its cube neighbours every
// heartbeat interval (its heartbeat is the probe), asks other neighbours of
// a silent one to probe it too, and takes a site as down only once the
// probes failed and a second site confirms it, or its suspicion has lasted;
// news of suspicions, downs and refutations rides on the probes and their
// answers along cube edges, and so do other sites' rows. Membership is the
// view, fed by the heartbeat handler and the probes' answers, and read by
// rounds and the admin status; Heartbeater probes and logs peers going up
// and down.
//
// Thread-safe.

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "daemon/balance/choice.h"
#include "daemon/common/env.h"
#include "daemon/federation/live_config.h"

namespace hyperfed::federation {

class PeerClient;

// A row a peer reports of a site (a heartbeat, a round message, a report):
// the label is a roster site's, the load in 0..config::kMaxReportedLoad and
// the capacity finite, >= 0 and at most the roster's max_capacity for that
// site (docs/security.md, "Numbers"). The one check of such numbers.
// The same for a start profile (docs/algorithms.md, "Jobs that gain"): the
// widest job at most that max_capacity, the profile well formed
// (balance::CheckStartProfile) with waits up to config::kMaxReportedWaitMs.
absl::Status CheckReportedRow(const config::Roster& roster, int label, int64_t load, double capacity,
                              const balance::StartProfile& profile = {});

// News of a site's liveness from a peer (a probe's or an answer's news and
// state): a roster label, a known state, an incarnation at most
// kMaxEpochAhead ahead of `now` (so that no news puts a site beyond its
// refutation), a suspecter that is a roster site. The one check of such
// news (docs/security.md, "Membership").
struct MemberNews;
absl::Status CheckNews(const config::Roster& roster, const MemberNews& n, absl::Time now);

// Whether a peer's protocol ("MAJOR.MINOR", as its heartbeat says) is at
// least major.minor; false when it is not of that form.
bool ProtocolAtLeast(const std::string& protocol, int major, int minor);

// What a site says of itself in a heartbeat.
struct HeartbeatInfo {
  // Since protocol 1.8: the sender's incarnation (docs/design.md §6.11): a
  // number it raises above any suspicion of it (and at a restart, its
  // clock in Unix ms). 0: a site of protocol 1.7 or older.
  int64_t incarnation = 0;
  std::string site;
  int label = 0;
  int64_t load = 0;
  double capacity = 0;
  bool drained = false;
  std::string round_id;  // the round it is in, if any
  std::string last_round;
  int64_t epoch = 0;  // the highest round epoch it has seen
  int64_t widest = 0;  // the most cores one job can have there (0: not said)
  int64_t roster_version = 0;
  std::string protocol;  // "MAJOR.MINOR"
  // Its start profile's free cores (with `widest`), from the heartbeat's
  // sending; empty: not said (docs/design.md, "Placement at arrival").
  std::vector<std::pair<int64_t, int64_t>> free;
  // How long before sending that profile was taken (since protocol 1.6).
  int64_t profile_age_ms = 0;
};

// Where a site stands in this site's view (docs/design.md §6.11). A
// roster site is presumed alive until a probe of it fails.
enum class Liveness { kAlive = 1, kSuspect = 2, kDown = 3 };
std::string_view LivenessName(Liveness l);

// News of a site's liveness, spread along cube edges on the probes and
// their answers: `label` is `state` at `incarnation`; for a suspicion, `by`
// is the label of the site that suspects it (its confirmations count).
struct MemberNews {
  int label = 0;
  int64_t incarnation = 0;
  Liveness state = Liveness::kAlive;
  int by = -1;
};

// Another site's row passed on by a probe (rows of non-neighbours reach a
// site so): what `info` said, `age_ms` before the probe was sent.
struct RelayedRow {
  HeartbeatInfo info;  // its site, label, row and incarnation (no news, no rows)
  int64_t age_ms = 0;
};

// What a probe carries besides its sender's own heartbeat, made for its
// receiver (Membership::GossipFor), and what its answer brings back.
// Anti-entropy (as memberlist's push-pull, triggered by a digest): each
// side says a digest of the sites it holds down; where they differ, the
// sides send their records of those sites (`state`), so that what a site
// missed (it was paused, or every copy of some news was lost) is mended
// at the next probe along any cube edge.
struct Gossip {
  std::vector<MemberNews> news;
  std::vector<RelayedRow> rows;
  uint64_t digest = 0;            // of the sites the sender holds down (0: none, or not said)
  std::vector<MemberNews> state;  // the sender's records of the sites it holds down, when asked
};
struct ProbeAck {
  std::string protocol;
  int64_t incarnation = 0;
  std::vector<MemberNews> news;
  uint64_t digest = 0;
  // Where the probe's digest differed: the receiver's records of every site
  // it holds down and of every site the probe's `state` named.
  std::vector<MemberNews> state;
};

// What the last heartbeat from a site said.
struct PeerInfo {
  std::string site;
  int label = 0;
  std::string endpoint;
  bool self = false;
  bool up = false;  // not down in this site's view (a 1.7 peer: heard from within the peer timeout)
  Liveness state = Liveness::kAlive;
  int64_t incarnation = 0;                      // the highest this site knows of it
  bool probed = false;                          // this site probes it (a cube neighbour, or one standing in for one)
  absl::Time last_seen = absl::InfinitePast();  // its last probe here or answer to this site's
  absl::Time row_at = absl::InfinitePast();     // when its row below was said, first or second hand
  int64_t load = 0;
  double capacity = 0;
  bool drained = false;
  std::string round_id;  // the round it said it is in ("" if none)
  std::string last_round;
  int64_t epoch = 0;
  int64_t widest = 0;
  int64_t roster_version = 0;  // the roster version it said it has
  std::string protocol;        // as its row says (first or second hand)
  std::string direct_protocol;                  // as it said itself to this site: a 1.7 one is up while heard
  balance::StartProfile profile;                // its last heartbeat's (widest and free cores)
  absl::Time profile_at = absl::InfinitePast();     // when that heartbeat came
  absl::Time profile_taken = absl::InfinitePast();  // profile_at less the age it said
};

// The rows of a roster's sites in label order, found by label in a
// contiguous array of labels (binary search) rather than a tree: every
// probe and answer looks up a few of them (docs/benchmarks.md, "Federation
// simulation"). A map's interface where Membership uses one.
class PeerTable {
 public:
  using Row = std::pair<int, PeerInfo>;
  using iterator = std::vector<Row>::iterator;
  // Replaces the rows (ordered by label).
  void Assign(std::map<int, PeerInfo>&& rows);
  iterator begin() { return rows_.begin(); }
  iterator end() { return rows_.end(); }
  size_t size() const { return rows_.size(); }
  iterator find(int label);
  // The first row above `label`.
  iterator upper_bound(int label);
  PeerInfo& at(int label);

 private:
  std::vector<int> labels_;  // rows_'s, in order
  std::vector<Row> rows_;
};

class Membership {
 public:
  // The sites are the live roster's: a new roster version adds and removes
  // rows (keeping what the sites that stay last said) and sets the dimension.
  // This site's incarnation starts at its clock in Unix ms.
  Membership(const LiveConfig* live, const Env* env);

  // ---- What probes bring (docs/design.md §6.11)
  // A heartbeat (probe) from a roster site other than this one: its row,
  // its incarnation, the news and rows it carries. False if not taken (not
  // a roster site, or this one). `reply`, when given, gets the answer's
  // news for the prober (AckFor).
  bool Seen(const HeartbeatInfo& hb, const Gossip& gossip = {}, ProbeAck* reply = nullptr);
  // The answer of `site` to this site's probe.
  void Acked(const std::string& site, const ProbeAck& ack);
  // Another site (a helper) reached `site` for this one: it is alive.
  void ReachedThrough(const std::string& site);
  // Of `sites`, those not down here that this site has not heard from (a
  // probe of theirs, an answer to one of its, a helper's word) within
  // kMissAfter intervals: a probe's answer may come late over a slow link,
  // but a live neighbour's own probe comes every interval.
  std::vector<std::string> Silent(const std::vector<std::string>& sites) const;
  // Whether this site heard `site` itself within kMissAfter intervals (a
  // helper then answers for it without a probe).
  bool HeardRecently(const std::string& site) const;
  static constexpr double kMissAfter = 1.5;
  // "Heard lately": within kMissAfter intervals (at most the peer
  // timeout). A live neighbour is heard every interval; a site not heard
  // for longer may be taken down, so a site heard within it is not taken
  // down on another's word, nor may a round's fault set name it (the one
  // window for all three: Silent, TakeNewsLocked, Site::OnStartRound).
  static absl::Duration HeardWithin(const config::BalancerConfig& b);
  // This site's probe of `site` and the indirect ones failed; the helpers
  // `confirmed_by` could not reach it either (each a confirmation).
  void ProbeFailed(const std::string& site, const std::vector<std::string>& confirmed_by);
  // Takes the suspicions that are confirmed or have lasted to down; called
  // once a tick.
  void Expire();

  // ---- What probes carry
  // The sites to probe this tick: for each dimension k, the cube neighbour
  // across k (a down one too, so that one back, or the far side of a
  // healed cut, is found at once) and, when it is missing or down, the
  // nearest roster site of its half-subcube that is not down (its
  // stand-in, as MCWA's trees pass duties on); the sites
  // that probed this one within the peer timeout (so each probe is
  // answered by a probe); one site held down, drawn at random; and every
  // peer of protocol 1.7 or older (they expect a heartbeat from every
  // site). Marks them probed.
  std::vector<std::string> ProbeTargets();
  // Up to `k` sites to ask to probe `site` for this one: its other cube
  // neighbours not down here, else other sites this site probes.
  std::vector<std::string> Helpers(const std::string& site, int k) const;
  // What a probe to `site` carries: the news still spreading, the
  // receiver's own record when it is suspected or down (so it refutes),
  // and up to kRelayRows other sites' rows, in turn.
  Gossip GossipFor(const std::string& site);
  // One tick's spreading is done: each news item goes out kNewsTicks ticks.
  void Spread();
  // What the answer to a probe from `label` carries (Seen fills it): the
  // news still spreading, the prober's own record, this site's digest and,
  // where the probe's digest differed, the records of the sites either
  // holds down.
  void AckFor(int label, const Gossip& probe, ProbeAck* reply);

  int64_t incarnation() const;
  // Labels whose `up` changed since the last call (for the Heartbeater's
  // log), oldest first.
  std::vector<int> TakeChanges();

  // Every news item goes out on this many ticks' probes.
  static constexpr int kNewsTicks = 3;
  // Rows of other sites a probe carries.
  static constexpr int kRelayRows = 8;
  // At most this many news items in one message.
  static constexpr int kMaxNews = 64;
  // Independent suspicions that take a site down before its suspicion has
  // lasted (the prober's and a helper's, or two probers').
  static constexpr int kConfirmations = 2;
  // How long a suspicion lasts unconfirmed: what the peer timeout leaves
  // after a probe round (two intervals), at least one interval.
  static absl::Duration SuspicionTimeout(const config::BalancerConfig& b);
  // Within how long every live site knows a crash, or sees a site that is
  // back (restarted, or its cut healed) up: the peer timeout (a probe
  // round and the suspicion) and an interval for each of the `dimension`
  // hops news takes across the cube (docs/design.md §6.11).
  static absl::Duration KnownEverywhereWithin(int dimension, const config::BalancerConfig& b);
  // How old a row held of another site may be (docs/design.md §6.11): a
  // hop an interval for a neighbour's, and for another's, a hop of up to
  // ceil((sites - 2) / kRelayRows) intervals (the rows a probe passes on
  // go round) for each of `dimension` hops.
  static absl::Duration RowAgeBound(int sites, int dimension, const config::BalancerConfig& b);

  // Updates this site's own row.
  void SetSelf(int64_t load, double capacity, bool drained, const std::string& last_round);
  // The widest job any live site other than this one runs (from the rows it
  // holds); 0 when none has said.
  int64_t WidestElsewhere() const;

  // Every roster site, by label, with `up` evaluated now.
  std::vector<PeerInfo> View() const;
  std::optional<PeerInfo> Find(const std::string& site) const;
  // The roster sites of `labels` (in that order), with `up` evaluated now.
  std::vector<PeerInfo> ViewOf(const std::vector<int>& labels) const;

  // Labels in [0, 2^dimension) that hold no live site: empty positions and
  // sites down in this site's view.
  std::vector<int> FaultLabels() const;
  // The same, from a view already taken (so a caller's fault set and live
  // rows come from one reading).
  static std::vector<int> FaultLabelsOf(const std::vector<PeerInfo>& view, int dimension);
  // The coordinator in this site's view: the lowest live label.
  std::string Coordinator() const;
  // Whether this site takes `site` as a round's coordinator: a roster site
  // with no live site below its label in this site's view (its own call is
  // the sign it is up). A peer naming itself coordinator is refused
  // otherwise (docs/design.md §6.3).
  bool MayCoordinate(const std::string& site) const;
  // The highest round epoch any live peer has reported.
  int64_t HighestEpoch() const;
  // The dimension of the roster the rows are from.
  int dimension() const;
  const std::string& self() const { return self_; }

 private:
  bool UpLocked(const PeerInfo& p, absl::Time now) const;
  // Rebuilds the rows when the live roster has changed.
  void SyncLocked() const;
  PeerInfo* FindLocked(const std::string& site, int label) const;
  PeerInfo* SelfLocked() const;
  // Takes news of another site (or of this one: a refutation).
  void TakeNewsLocked(const MemberNews& n, absl::Time now);
  // Sets `p`'s state, records the change and spreads it.
  void SetStateLocked(PeerInfo& p, Liveness state, int64_t incarnation, absl::Time now, int by = -1);
  void RefuteLocked(int64_t above);
  void AckForLocked(int label, const Gossip& probe, ProbeAck* reply) const;
  // Of the sites this one holds down: their labels, incarnations and states.
  uint64_t DigestLocked() const;
  MemberNews RecordLocked(const PeerInfo& p) const;
  void QueueLocked(const MemberNews& n);
  void TakeRowLocked(const HeartbeatInfo& hb, absl::Time said);
  // A peer of protocol 1.7 or older: up while heard within the peer timeout.
  static bool OldPeer(const PeerInfo& p);

  const LiveConfig* live_;
  const Env* env_;
  const std::string self_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const config::Roster> synced_;  // guarded by mu_; the rows' roster
  mutable int dimension_ = 0;                 // guarded by mu_
  mutable PeerTable by_label_;                // guarded by mu_
  mutable absl::flat_hash_map<std::string, int> label_of_;  // guarded by mu_: site -> label
  // The rest guarded by mu_.
  int64_t incarnation_ = 0;  // this site's
  struct Spreading {
    MemberNews news;
    int ticks_left = 0;
  };
  std::map<int, Spreading> news_;            // by the label it is about
  std::map<int, std::set<int>> suspectors_;  // of each suspect, by label
  std::map<int, absl::Time> suspected_at_;
  std::map<int, absl::Time> probed_by_;  // when each label last probed this site
  std::map<int, int> relay_cursor_;      // per receiver: the label its rows continue from
  std::vector<int> changes_;
  std::set<int> down_;                 // labels held down
  std::set<int> sync_with_;            // labels whose last answer's digest differed: the next probe sends `state`
  std::map<int, int64_t> tell_;        // label -> an incarnation others hold it down at, which this site heard alive
  std::map<int, absl::Time> reached_;  // when a helper last reached each label for this site
  mutable uint64_t digest_ = 0;        // DigestLocked's, while digest_valid_
  mutable bool digest_valid_ = false;
  std::map<int, bool> old_up_;         // peers of protocol 1.7 or older: `up` as last told (TakeChanges)
};

// Probes this site's cube neighbours (one Tick, PeerClient::Heartbeats),
// asks helpers to probe those that did not answer (PeerClient::ProbeFor),
// and logs each peer's change between up and down.
class Heartbeater {
 public:
  Heartbeater(const LiveConfig* live, Membership* membership, PeerClient* peers);
  // One round of probes; returns within kCallShare of a heartbeat interval:
  // kDirectShare of that for the probes, the rest for the indirect ones, so
  // the next tick, an interval after this one began, probes again on time.
  void Tick(const HeartbeatInfo& self);
  static constexpr double kCallShare = 0.75;
  static constexpr double kDirectShare = 0.6;
  // Helpers asked to probe a site that did not answer.
  static constexpr int kIndirectProbes = 2;

  // A helper's part (Peer.ProbeFor): probes `site` for a peer, with this
  // site's heartbeat `self`, within `timeout`; whether it answered.
  bool ProbeFor(const std::string& site, const HeartbeatInfo& self, absl::Duration timeout);

  // Told of each peer state a tick logs: a peer going up or down, or, at
  // the first tick that looks at it (`first`), the state it starts in.
  // Called on Tick's thread; set before the heartbeat loop starts. hyperfedd
  // sets none; the federation simulation measures failure detection with it
  // (docs/design.md §10).
  using Observer = std::function<void(const PeerInfo& peer, bool first)>;
  void SetObserver(Observer observer) { observer_ = std::move(observer); }

 private:
  const LiveConfig* live_;
  Membership* membership_;
  PeerClient* peers_;
  int64_t ticks_ = 0;                   // used by Tick's caller thread only
  std::map<std::string, bool> was_up_;  // used by Tick's caller thread only
  Observer observer_;
};

}  // namespace hyperfed::federation
