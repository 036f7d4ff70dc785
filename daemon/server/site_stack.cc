#include "daemon/server/site_stack.h"

#include "absl/strings/str_cat.h"
#include "daemon/scheduler/sim_adapter.h"
#include "daemon/server/convert.h"
#include "daemon/server/peer_client.h"

namespace hyperfed::server {
namespace {

// The migration layer as the federation layer's JobMover.
class MigratorMover : public federation::JobMover {
 public:
  MigratorMover(migration::Migrator* m, migration::Migrator::ChoiceRules rules) : m_(m), rules_(rules) {}
  absl::Status Recover() override { return m_->Recover(); }
  absl::StatusOr<Result> MoveJobs(const std::string& dest, int64_t count, const std::string& round_id) override {
    return Summed(m_->MigrateOut(dest, count, round_id));
  }
  absl::StatusOr<std::optional<std::vector<std::vector<std::string>>>> Choose(const std::vector<Order>& orders,
                                                                              const balance::StartProfile& own,
                                                                              bool draining,
                                                                              const std::string& round_id) override {
    std::vector<migration::Migrator::Destination> dests;
    for (const Order& o : orders) dests.push_back({o.dest_site, o.count, o.profile});
    migration::Migrator::ChoiceRules rules = rules_;
    rules.draining = draining;
    auto ids = m_->Choose(dests, rules, round_id, own);
    if (!ids.ok()) return ids.status();
    return std::optional<std::vector<std::vector<std::string>>>(*std::move(ids));
  }
  absl::StatusOr<Result> MoveChosen(const std::string& dest, const std::vector<std::string>& ids,
                                    const std::string& round_id) override {
    return Summed(m_->MigrateOut(dest, static_cast<int64_t>(ids.size()), round_id, &ids));
  }
  absl::StatusOr<Result> Summed(const absl::StatusOr<std::vector<migration::OutResult>>& out) {
    if (!out.ok()) return out.status();
    Result r;
    absl::Status first;
    for (const migration::OutResult& o : *out) {
      r.moved += o.moved;
      // Jobs left in flight stay held and arrive when recovery retries;
      // for this round they count as not moved.
      r.shortfall += o.shortfall + o.in_flight;
      if (!o.status.ok() && first.ok()) first = o.status;
    }
    if (r.moved == 0 && !first.ok()) return first;
    return r;
  }
  absl::StatusOr<std::map<std::string, int64_t>> CommittedOut(const std::string& round_id) override {
    return m_->CommittedOut(round_id);
  }
  absl::StatusOr<std::vector<std::string>> MovesOf(const std::string& key) override {
    auto history = m_->HistoryOfJob(key);
    if (!history.ok()) return history.status();
    std::vector<std::string> out;
    for (const migration::MigrationRecord& r : *history)
      out.push_back(absl::StrCat("migration ", r.id, ": ",
                                 r.direction == migration::Direction::kOut ? "moved out to " : "moved in from ", r.peer,
                                 " in round ", r.round_id.empty() ? "(none)" : r.round_id, ", state ",
                                 migration::MigrationStateName(r.state)));
    return out;
  }

 private:
  migration::Migrator* m_;
  const migration::Migrator::ChoiceRules rules_;
};

}  // namespace

absl::StatusOr<SiteStack> OpenSiteStack(const config::Config& config, const scheduler::AdapterRegistry& adapters,
                                        federation::LiveConfig* live, federation::PeerClient* peers,
                                        migration::PeerTransport* transport, const Env* env) {
  SiteStack s;
  auto adapter = adapters.Create(config.scheduler.adapter, config.scheduler.parsed,
                                 scheduler::AdapterContext{config.state_dir, config.scheduler.options, env});
  if (!adapter.ok()) return adapter.status();
  s.adapter = std::make_unique<scheduler::SwappableAdapter>(*std::move(adapter));
  auto journal = migration::Journal::Open(config.state_dir + "/journal.db");
  if (!journal.ok()) return journal.status();
  s.journal = *std::move(journal);
  s.migrator = std::make_unique<migration::Migrator>(config.site.id, s.adapter.get(), s.journal.get(), transport, env,
                                                     config.balancer.max_batch);
  s.mover = std::make_unique<MigratorMover>(
      s.migrator.get(), migration::Migrator::ChoiceRules{.choice = config.balancer.job_choice,
                                                         .hysteresis = config.balancer.hysteresis,
                                                         .recent_margin = config.balancer.placement_margin});
  s.site = std::make_unique<federation::Site>(config, live, s.adapter.get(), s.mover.get(), peers, env);
  // The batches of a migration run side by side on the site's executor.
  s.migrator->SetExecutor(s.site->executor());
  // A Transfer must fit in kMaxMessageBytes (every site refuses a larger
  // one unread): batches are cut to fit, each spec weighed as it is sent.
  // Room is left for the rest of the message (its ids, at most
  // kMaxIdLength each); a spec costs its bytes plus its field's tag and
  // length (at most 6 bytes).
  constexpr size_t kEnvelopeBytes = 4096;
  s.migrator->SetMessageBudget(kMaxMessageBytes - kEnvelopeBytes, [](const scheduler::JobSpec& spec) {
    v1::JobSpec p;
    ToProto(spec, &p);
    return p.ByteSizeLong() + 6;
  });
  // A destination takes only what its own plan of the round sends it
  // (docs/design.md §6.8).
  s.migrator->SetAdmission([site = s.site.get()](const migration::TransferRequest& r) {
    std::vector<std::string> keys;
    for (const scheduler::JobSpec& j : r.jobs) keys.push_back(j.key);
    return site->AdmitTransfer(r.source_site, r.round_id, keys);
  });
  return s;
}

}  // namespace hyperfed::server
