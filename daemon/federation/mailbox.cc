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
    inbox_[key] = Entry{m.rows, env_->Now()};
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

std::optional<std::string> Mailbox::WhyLeft(const std::string& round_id, int label) {
  std::lock_guard<std::mutex> l(mu_);
  if (round_id != fence_round_) return std::nullopt;
  auto it = left_.find(label);
  if (it == left_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<balance::LoadTable> Mailbox::Await(const std::string& round_id, MessageKind kind, int dimension,
                                                  int phase, int from_label, absl::Time deadline) {
  std::unique_lock<std::mutex> l(mu_);
  const Key key{round_id, static_cast<int>(kind), dimension, phase, from_label};
  auto replaced = [&] { return fence_round_ != round_id; };
  auto left = [&] { return left_.count(from_label) > 0; };
  env_->WaitUntil(l, cv_, deadline, [&] { return inbox_.count(key) > 0 || replaced() || left(); });
  if (replaced()) return absl::AbortedError("the round was replaced by a newer one");
  auto it = inbox_.find(key);
  if (it == inbox_.end() && left())
    return absl::UnavailableError(absl::StrCat("it left the round (", left_.at(from_label), ")"));
  if (it == inbox_.end()) return absl::DeadlineExceededError("no message in time");
  balance::LoadTable rows = std::move(it->second.rows);
  inbox_.erase(it);
  return rows;
}

}  // namespace hyperfed::federation
