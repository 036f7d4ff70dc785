#include "daemon/federation/mailbox.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace hyperfed::federation {

void Mailbox::SetPosition(int self_label, int dimension) {
  std::lock_guard<std::mutex> l(mu_);
  self_label_ = self_label;
  dimension_ = dimension;
}

bool Mailbox::StaleLocked(const std::string& round_id, int64_t epoch) const {
  return round_id != fence_round_ && epoch <= fence_epoch_;
}

void Mailbox::ExpireLocked() {
  // Messages of rounds that never start here (their StartRound was lost).
  const absl::Time cutoff = env_->Now() - absl::Minutes(10);
  for (auto it = inbox_.begin(); it != inbox_.end();) it = it->second.at < cutoff ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = it->second.at < cutoff ? published_.erase(it) : std::next(it);
  // A round with nothing left here is forgotten (its messages count as
  // taken only while it may still run).
  std::set<std::string> held{fence_round_};
  for (const auto& [key, e] : inbox_) held.insert(std::get<0>(key));
  for (auto it = epoch_of_.begin(); it != epoch_of_.end();)
    it = held.count(it->first) ? std::next(it) : epoch_of_.erase(it);
  for (auto it = taken_.begin(); it != taken_.end();)
    it = held.count(std::get<0>(*it)) ? std::next(it) : taken_.erase(it);
}

absl::Status Mailbox::ExpectedLocked(const ExchangeMessage& m) const {
  const int diff = m.from_label ^ self_label_;
  const bool neighbour = m.from_label >= 0 && m.from_label < (1 << dimension_) && diff != 0 && (diff & (diff - 1)) == 0;
  switch (m.kind) {
    case MessageKind::kExchange:
    case MessageKind::kBarrier:
      if (m.dimension < 0 || m.dimension >= dimension_ || diff != (1 << m.dimension))
        return absl::PermissionDeniedError(
            absl::StrCat("label ", m.from_label, " is not this site's partner across ", "dimension ", m.dimension));
      break;
    case MessageKind::kUp:
    case MessageKind::kDown:
      if (!neighbour)
        return absl::PermissionDeniedError(absl::StrCat("label ", m.from_label, " is no cube neighbour of label ",
                                                        self_label_, ": it sends no ", MessageKindName(m.kind)));
      break;
    case MessageKind::kPhaseDone: {
      if (m.rows.size() != 1 || m.rows[0].label != m.from_label)
        return absl::InvalidArgumentError("a phase-done notice carries one row, the sender's");
      const int depth = m.round_id == fence_round_ ? std::max(fence_depth_, dimension_) : dimension_;
      if (m.phase < 1 || m.phase > 3 * depth + 1)
        return absl::InvalidArgumentError(
            absl::StrCat("phase ", m.phase, " outside 1..", 3 * depth + 1, " of round ", m.round_id, " here"));
      break;
    }
    case MessageKind::kScan:
      // From a site of the partner's subcube across that dimension: the
      // partner or its stand-in (balance::LivePositions::SourceFor).
      if (m.dimension < 0 || m.dimension >= dimension_ || m.from_label < 0 || (diff >> m.dimension) != 1)
        return absl::PermissionDeniedError(absl::StrCat("label ", m.from_label, " is not in the subcube across ",
                                                        "dimension ", m.dimension, " of label ", self_label_));
      if (!m.rows.empty()) return absl::InvalidArgumentError("a scan message carries no rows");
      break;
    case MessageKind::kLookup:
      return absl::InvalidArgumentError("a lookup is answered, not delivered");
  }
  if (m.rows.size() > (size_t{1} << dimension_))
    return absl::InvalidArgumentError(absl::StrCat(m.rows.size(), " rows for a ", dimension_, "-cube"));
  const Key key{m.round_id, static_cast<int>(m.kind), m.dimension, m.phase, m.from_label};
  if (taken_.count(key))
    return absl::AlreadyExistsError(
        absl::StrCat("label ", m.from_label, " already sent this ", MessageKindName(m.kind), " of round ", m.round_id));
  if (m.round_id != fence_round_) {
    // Counted per sender, so that one peer's junk never crowds out the
    // early messages of another.
    std::set<std::string> early;
    for (const auto& [k, e] : inbox_)
      if (std::get<4>(k) == m.from_label && std::get<0>(k) != fence_round_) early.insert(std::get<0>(k));
    if (!early.count(m.round_id) && early.size() >= static_cast<size_t>(kMaxEarlyRounds))
      return absl::ResourceExhaustedError(absl::StrCat("label ", m.from_label, " has sent messages of ", early.size(),
                                                       " rounds not started here; round ", m.round_id,
                                                       " is one too many"));
  }
  return absl::OkStatus();
}

void Mailbox::Open(const std::string& round_id, int64_t epoch, int depth) {
  std::lock_guard<std::mutex> l(mu_);
  if (fence_round_ != round_id) left_.clear();
  fence_depth_ = depth;
  if (closed_round_ != round_id) closed_round_.clear();
  fence_round_ = round_id;
  fence_epoch_ = std::max(fence_epoch_, epoch);
  // What older rounds left behind can never be read now.
  auto stale = [&](const std::string& id) {
    auto it = epoch_of_.find(id);
    return id != round_id && it != epoch_of_.end() && it->second <= fence_epoch_;
  };
  for (auto it = inbox_.begin(); it != inbox_.end();)
    it = stale(std::get<0>(it->first)) ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = std::get<0>(it->first) != round_id ? published_.erase(it) : std::next(it);
  for (auto it = epoch_of_.begin(); it != epoch_of_.end();) it = stale(it->first) ? epoch_of_.erase(it) : std::next(it);
  if (scan_round_ != round_id) {
    scan_round_.clear();
    scan_.reset();
    partners_.clear();
  }
  ExpireLocked();
  cv_.notify_all();
}

void Mailbox::Close(const std::string& round_id) {
  std::lock_guard<std::mutex> l(mu_);
  closed_round_ = round_id;
  for (auto it = inbox_.begin(); it != inbox_.end();)
    it = std::get<0>(it->first) == round_id ? inbox_.erase(it) : std::next(it);
  for (auto it = published_.begin(); it != published_.end();)
    it = std::get<0>(it->first) == round_id ? published_.erase(it) : std::next(it);
  epoch_of_.erase(round_id);
  cv_.notify_all();
}

absl::StatusOr<balance::LoadTable> Mailbox::Deliver(const ExchangeMessage& m, absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  if (StaleLocked(m.round_id, m.epoch))
    return absl::FailedPreconditionError(absl::StrCat("round ", m.round_id, " (epoch ", m.epoch,
                                                      ") is older than round ", fence_round_, " (epoch ", fence_epoch_,
                                                      "), the last this site took part in"));
  auto ended = [&] { return !closed_round_.empty() && m.round_id == closed_round_; };
  auto ended_error = [&] {
    return absl::FailedPreconditionError(absl::StrCat("this site's part of round ", m.round_id, " has ended"));
  };
  if (ended()) return ended_error();
  ExpireLocked();
  if (auto st = ExpectedLocked(m); !st.ok()) return st;
  epoch_of_[m.round_id] = m.epoch;
  const Key key{m.round_id, static_cast<int>(m.kind), m.dimension, m.phase, m.from_label};
  if (m.kind != MessageKind::kExchange && m.kind != MessageKind::kBarrier) {
    taken_.insert(key);
    inbox_[key] = Entry{m.rows, env_->Now(), m.totals};
    cv_.notify_all();
    return balance::LoadTable{};
  }
  const std::tuple<std::string, int, int> mine{m.round_id, static_cast<int>(m.kind), m.dimension};
  const bool reached = env_->WaitFor(
      l, cv_, timeout, [&] { return published_.count(mine) > 0 || StaleLocked(m.round_id, m.epoch) || ended(); });
  if (StaleLocked(m.round_id, m.epoch))
    return absl::FailedPreconditionError(absl::StrCat("round ", m.round_id, " was replaced by a newer round"));
  if (ended()) return ended_error();
  if (!reached)
    return absl::DeadlineExceededError(absl::StrCat("round ", m.round_id, ": this site did not reach ",
                                                    MessageKindName(m.kind), " ", m.dimension, " in time"));
  // A second copy may have come in while this one waited.
  if (!taken_.insert(key).second)
    return absl::AlreadyExistsError(
        absl::StrCat("label ", m.from_label, " already sent this ", MessageKindName(m.kind), " of round ", m.round_id));
  inbox_[key] = Entry{m.rows, env_->Now()};
  cv_.notify_all();
  return published_[mine].rows;
}

void Mailbox::Publish(const std::string& round_id, MessageKind kind, int dimension, const balance::LoadTable& rows) {
  std::lock_guard<std::mutex> l(mu_);
  published_[{round_id, static_cast<int>(kind), dimension}] = Entry{rows, env_->Now()};
  cv_.notify_all();
}

void Mailbox::Left(const std::string& round_id, int label, const std::string& why) {
  std::lock_guard<std::mutex> l(mu_);
  if (round_id != fence_round_) return;
  left_.emplace(label, why);
  cv_.notify_all();
}

std::optional<std::pair<int, std::string>> Mailbox::AnyLeft(const std::string& round_id) {
  std::lock_guard<std::mutex> l(mu_);
  if (round_id != fence_round_ || left_.empty()) return std::nullopt;
  return *left_.begin();
}

std::optional<absl::Status> Mailbox::GoneLocked(int label, bool any_left) const {
  if (auto it = left_.find(label); it != left_.end())
    return absl::UnavailableError(absl::StrCat("it left the round (", it->second, ")"));
  if (!any_left || left_.empty()) return std::nullopt;
  const auto& [other, why] = *left_.begin();
  return absl::UnavailableError(absl::StrCat("label ", other, " left the round mid-scan (", why, ")"));
}

std::optional<absl::Status> Mailbox::Gone(const std::string& round_id, int label, bool any_left) {
  std::lock_guard<std::mutex> l(mu_);
  if (round_id != fence_round_) return std::nullopt;
  return GoneLocked(label, any_left);
}

absl::StatusOr<Mailbox::Entry> Mailbox::AwaitEntry(const Key& key, absl::Time deadline, bool any_left) {
  std::unique_lock<std::mutex> l(mu_);
  const std::string& round_id = std::get<0>(key);
  const int from_label = std::get<4>(key);
  auto replaced = [&] { return fence_round_ != round_id; };
  auto left = [&] { return GoneLocked(from_label, any_left).has_value(); };
  env_->WaitUntil(l, cv_, deadline, [&] { return inbox_.count(key) > 0 || replaced() || left(); });
  if (replaced()) return absl::AbortedError("the round was replaced by a newer one");
  auto it = inbox_.find(key);
  if (it == inbox_.end())
    if (auto gone = GoneLocked(from_label, any_left)) return *gone;
  if (it == inbox_.end()) return absl::DeadlineExceededError("no message in time");
  Entry e = std::move(it->second);
  inbox_.erase(it);
  return e;
}

absl::StatusOr<balance::LoadTable> Mailbox::Await(const std::string& round_id, MessageKind kind, int dimension,
                                                  int phase, int from_label, absl::Time deadline) {
  auto e = AwaitEntry(Key{round_id, static_cast<int>(kind), dimension, phase, from_label}, deadline);
  if (!e.ok()) return e.status();
  return std::move(e->rows);
}

absl::StatusOr<balance::ScanTotals> Mailbox::AwaitTotals(const std::string& round_id, int dimension, int from_label,
                                                         absl::Time deadline) {
  auto e = AwaitEntry(Key{round_id, static_cast<int>(MessageKind::kScan), dimension, 0, from_label}, deadline,
                      /*any_left=*/true);
  if (!e.ok()) return e.status();
  return e->totals;
}

void Mailbox::PublishScan(const std::string& round_id, ScanView view) {
  std::lock_guard<std::mutex> l(mu_);
  if (round_id != fence_round_) return;  // replaced meanwhile
  if (scan_round_ != round_id) partners_.clear();
  scan_round_ = round_id;
  scan_ = std::move(view);
  cv_.notify_all();
}

namespace {

balance::Load Abs(balance::Load x) { return x < 0 ? -x : x; }

}  // namespace

absl::StatusOr<LookupAnswer> Mailbox::Lookup(const ExchangeMessage& m, absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  if (StaleLocked(m.round_id, m.epoch))
    return absl::FailedPreconditionError(absl::StrCat("round ", m.round_id, " (epoch ", m.epoch,
                                                      ") is older than round ", fence_round_, " (epoch ", fence_epoch_,
                                                      "), the last this site took part in"));
  const bool ready = env_->WaitFor(
      l, cv_, timeout, [&] { return (scan_ && scan_round_ == m.round_id) || StaleLocked(m.round_id, m.epoch); });
  if (StaleLocked(m.round_id, m.epoch))
    return absl::FailedPreconditionError(absl::StrCat("round ", m.round_id, " was replaced by a newer round"));
  if (!ready)
    return absl::DeadlineExceededError(absl::StrCat("round ", m.round_id, ": this site's scan was not done in time"));
  const balance::MatchView& view = scan_->view;
  const int n = scan_->live.dims();
  const balance::MatchRun& run = m.run;
  const int diff = m.from_label ^ view.label;
  // The requester's run is matched against the sibling of its run.level-
  // subcube, which holds this site; it asks unit `position` of this site's
  // level-subcube list, inside that sibling.
  if (run.level < 0 || run.level >= n || m.from_label < 0 || (diff >> run.level) != 1)
    return absl::InvalidArgumentError(absl::StrCat("label ", m.from_label, " has no run matched at level ", run.level,
                                                   " against label ", view.label, "'s subcube"));
  if (run.begin < 0 || run.begin >= run.end) return absl::InvalidArgumentError("a run is a non-empty [begin, end)");
  if (m.level < 0 || m.level > run.level)
    return absl::InvalidArgumentError(absl::StrCat("lookup level ", m.level, " outside 0..", run.level));
  if (m.position < 0 || m.position >= Abs(view.residual[m.level]))
    return absl::InvalidArgumentError(absl::StrCat("position ", m.position, " outside the ",
                                                   Abs(view.residual[m.level]), " units of this site's ", m.level,
                                                   "-subcube list"));
  const balance::LocateStep step = balance::Locate(view, m.level, m.position);
  LookupAnswer a;
  if (!step.here) {
    a.next_label = scan_->live.StandIn(view.label ^ (1 << step.next_level), step.next_level);
    if (a.next_label < 0) return absl::InternalError("the lookup leads to an empty subcube");
    a.next_level = step.next_level;
    a.position = step.position;
    return a;
  }
  const balance::MatchRun* found = nullptr;
  for (const balance::MatchRun& r : view.runs)
    if (r.level == run.level && r.sends != run.sends && r.begin <= run.begin && run.begin < r.end) found = &r;
  if (!found)
    return absl::InvalidArgumentError(absl::StrCat("unit ", run.begin, " at level ", run.level, " is not in a run of ",
                                                   "label ", view.label, " matched against the requester's"));
  for (const Partner& p : partners_) {
    if (p.run.label == m.from_label && p.run.run.level == run.level)
      return absl::AlreadyExistsError(
          absl::StrCat("label ", m.from_label, " already looked up its run at level ", run.level));
    // Honest partners' runs of one level never overlap each other.
    if (p.run.run.level == run.level && p.run.run.sends == run.sends &&
        std::max(p.run.run.begin, run.begin) < std::min(p.run.run.end, run.end))
      return absl::InvalidArgumentError(
          absl::StrCat("the run of label ", m.from_label, " overlaps label ", p.run.label, "'s"));
  }
  Partner p{{m.from_label, run}, {}};
  if (!run.sends && !m.rows.empty()) p.profile = m.rows[0].profile;
  partners_.push_back(std::move(p));
  cv_.notify_all();
  a.found = true;
  a.run = *found;
  if (found->sends == false) a.profile = scan_->profile;
  return a;
}

absl::StatusOr<std::vector<Mailbox::Partner>> Mailbox::AwaitPartners(
    const std::string& round_id, const std::function<bool(const std::vector<Partner>&)>& done, absl::Time deadline) {
  std::unique_lock<std::mutex> l(mu_);
  env_->WaitUntil(l, cv_, deadline,
                  [&] { return fence_round_ != round_id || (scan_round_ == round_id && done(partners_)); });
  if (fence_round_ != round_id || scan_round_ != round_id)
    return absl::AbortedError("the round was replaced by a newer one");
  return partners_;
}

}  // namespace hyperfed::federation
