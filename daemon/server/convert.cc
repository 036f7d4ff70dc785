#include "daemon/server/convert.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"

namespace hyperfed::server {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbers.
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code())), std::string(s.message()));
}

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(static_cast<int>(s.error_code())), s.error_message());
}

void ToProto(const scheduler::JobSpec& in, v1::JobSpec* out) {
  out->set_name(in.name);
  out->set_script(in.script);
  out->set_cores(in.cores);
  out->set_memory_mb(in.memory_mb);
  out->set_time_limit_s(in.time_limit_s);
  out->set_workdir(in.workdir);
  for (const auto& [k, v] : in.env) (*out->mutable_env())[k] = v;
  out->set_duration_ms(in.duration_ms);
  out->set_cost(in.cost);
  out->set_key(in.key);
  out->set_owner(in.owner);
}

void ToProto(const migration::TransferRequest& in, v1::TransferRequest* out) {
  out->set_migration_id(in.migration_id);
  out->set_source_site(in.source_site);
  out->set_round_id(in.round_id);
  for (const auto& spec : in.jobs) ToProto(spec, out->add_jobs());
}

migration::TransferRequest FromProto(const v1::TransferRequest& in) {
  migration::TransferRequest out;
  out.migration_id = in.migration_id();
  out.source_site = in.source_site();
  out.round_id = in.round_id();
  for (const v1::JobSpec& s : in.jobs()) out.jobs.push_back(FromProto(s));
  return out;
}

void ToProto(const migration::TransferReply& in, v1::TransferReply* out) {
  for (const std::string& id : in.new_ids) out->add_new_ids(id);
  for (const std::string& key : in.refused_keys) out->add_refused_keys(key);
}

migration::TransferReply FromProto(const v1::TransferReply& in) {
  migration::TransferReply out;
  out.new_ids.assign(in.new_ids().begin(), in.new_ids().end());
  out.refused_keys.assign(in.refused_keys().begin(), in.refused_keys().end());
  return out;
}

void ToProto(const migration::AbortReply& in, v1::AbortReply* out) {
  out->set_aborted(in.aborted);
  for (const std::string& id : in.new_ids) out->add_new_ids(id);
  for (const std::string& key : in.refused_keys) out->add_refused_keys(key);
}

migration::AbortReply FromProto(const v1::AbortReply& in) {
  migration::AbortReply out;
  out.aborted = in.aborted();
  out.new_ids.assign(in.new_ids().begin(), in.new_ids().end());
  out.refused_keys.assign(in.refused_keys().begin(), in.refused_keys().end());
  return out;
}

scheduler::JobSpec FromProto(const v1::JobSpec& in) {
  scheduler::JobSpec s;
  s.name = in.name();
  s.script = in.script();
  s.cores = in.cores();
  s.memory_mb = in.memory_mb();
  s.time_limit_s = in.time_limit_s();
  s.workdir = in.workdir();
  for (const auto& [k, v] : in.env()) s.env[k] = v;
  s.duration_ms = in.duration_ms();
  s.cost = in.cost();
  s.key = in.key();
  s.owner = in.owner();
  return s;
}

void ToProto(const scheduler::Job& in, const std::string& site, v1::Job* out) {
  out->set_id(in.id);
  out->set_site(site);
  ToProto(in.spec, out->mutable_spec());
  out->set_state(scheduler::JobStateName(in.state));
  out->set_pinned(in.pinned);
  out->set_tag(in.tag);
  out->set_queued_at_ms(in.queued_at_ms);
}

void ToProto(const balance::LoadRow& r, v1::LoadRow* p) {
  p->set_label(r.label);
  p->set_load(r.load);
  p->set_capacity(r.capacity);
  p->set_widest(r.profile.widest);
  for (const auto& [offset, cores] : r.profile.free) {
    v1::FreeAt* f = p->add_free();
    f->set_offset_ms(offset);
    f->set_cores(cores);
  }
}

void ToProto(const balance::LoadTable& in, google::protobuf::RepeatedPtrField<v1::LoadRow>* out) {
  for (const balance::LoadRow& r : in) ToProto(r, out->Add());
}

balance::StartProfile ProfileFromProto(const v1::LoadRow& in) {
  balance::StartProfile p;
  p.widest = in.widest();
  for (const v1::FreeAt& f : in.free()) p.free.push_back({f.offset_ms(), f.cores()});
  return p;
}

balance::LoadRow FromProto(const v1::LoadRow& r) { return {r.label(), r.load(), r.capacity(), ProfileFromProto(r)}; }

balance::LoadTable FromProto(const google::protobuf::RepeatedPtrField<v1::LoadRow>& in) {
  balance::LoadTable t;
  for (const v1::LoadRow& r : in) t.push_back(FromProto(r));
  return t;
}

void ToProto(const std::vector<balance::Transfer>& in, google::protobuf::RepeatedPtrField<v1::Transfer>* out) {
  for (const balance::Transfer& t : in) {
    v1::Transfer* p = out->Add();
    p->set_step(t.step);
    p->set_from(t.from);
    p->set_to(t.to);
    p->set_count(t.count);
  }
}

std::vector<balance::Transfer> FromProto(const google::protobuf::RepeatedPtrField<v1::Transfer>& in) {
  std::vector<balance::Transfer> v;
  for (const v1::Transfer& t : in) v.push_back({t.step(), t.from(), t.to(), t.count(), 1});
  return v;
}

void ToProto(const federation::RoundReport& in, v1::RoundReport* out) {
  out->set_round_id(in.round_id);
  out->set_site(in.site);
  out->set_label(in.label);
  out->set_ok(in.ok);
  out->set_error(in.error);
  out->set_load_before(in.load_before);
  out->set_quota(in.quota);
  out->set_moved_out(in.moved_out);
  out->set_shortfall(in.shortfall);
  out->set_kept(in.kept);
  out->set_from_journal(in.from_journal);
  out->set_not_begun(in.not_begun);
  ToProto(in.transfers, out->mutable_transfers());
  out->set_messages(in.messages);
  out->set_steps(in.steps);
  out->set_capacity(in.capacity);
}

federation::RoundReport FromProto(const v1::RoundReport& in) {
  federation::RoundReport r;
  r.round_id = in.round_id();
  r.site = in.site();
  r.label = in.label();
  r.ok = in.ok();
  r.error = in.error();
  r.load_before = in.load_before();
  r.quota = in.quota();
  r.moved_out = in.moved_out();
  r.shortfall = in.shortfall();
  r.kept = in.kept();
  r.from_journal = in.from_journal();
  r.not_begun = in.not_begun();
  r.transfers = FromProto(in.transfers());
  r.messages = in.messages();
  r.steps = in.steps();
  r.capacity = in.capacity();
  return r;
}

void ToProto(const federation::ExchangeMessage& in, v1::ExchangeRequest* out) {
  out->set_round_id(in.round_id);
  out->set_epoch(in.epoch);
  out->set_kind(static_cast<v1::ExchangeRequest::Kind>(static_cast<int>(in.kind)));
  out->set_dimension(in.dimension);
  out->set_phase(in.phase);
  out->set_moved(in.moved);
  out->set_from_label(in.from_label);
  ToProto(in.rows, out->mutable_rows());
  if (in.kind == federation::MessageKind::kScan) ToProto(in.totals, out->mutable_totals());
  if (in.kind == federation::MessageKind::kLookup) {
    ToProto(in.run, out->mutable_run());
    out->set_level(in.level);
    out->set_position(in.position);
  }
}

void ToProto(const balance::ScanTotals& in, v1::ScanTotals* out) {
  out->set_load(in.load);
  const unsigned __int128 w = static_cast<unsigned __int128>(in.weight);
  out->set_weight_high(static_cast<uint64_t>(w >> 64));
  out->set_weight_low(static_cast<uint64_t>(w));
  out->set_live(in.live);
  out->set_min_weight(in.min_weight);
  out->set_max_weight(in.max_weight);
}

balance::ScanTotals FromProto(const v1::ScanTotals& in) {
  balance::ScanTotals t;
  t.load = in.load();
  t.weight = static_cast<__int128>((static_cast<unsigned __int128>(in.weight_high()) << 64) | in.weight_low());
  t.live = in.live();
  t.min_weight = in.min_weight();
  t.max_weight = in.max_weight();
  return t;
}

void ToProto(const balance::MatchRun& in, v1::MatchRun* out) {
  out->set_level(in.level);
  out->set_begin(in.begin);
  out->set_end(in.end);
  out->set_sends(in.sends);
}

balance::MatchRun FromProto(const v1::MatchRun& in) {
  return balance::MatchRun{.level = in.level(), .begin = in.begin(), .end = in.end(), .sends = in.sends()};
}

void ToProto(const federation::LookupAnswer& in, int self_label, v1::LookupAnswer* out) {
  out->set_found(in.found);
  if (in.found) {
    ToProto(in.run, out->mutable_run());
    ToProto(balance::LoadRow{self_label, 0, 0, in.profile}, out->mutable_row());
  } else {
    out->set_next_label(in.next_label);
    out->set_next_level(in.next_level);
    out->set_position(in.position);
  }
}

federation::LookupAnswer FromProto(const v1::LookupAnswer& in) {
  federation::LookupAnswer a;
  a.found = in.found();
  if (a.found) {
    a.run = FromProto(in.run());
    a.profile = ProfileFromProto(in.row());
  } else {
    a.next_label = in.next_label();
    a.next_level = in.next_level();
    a.position = in.position();
  }
  return a;
}

federation::ExchangeMessage FromProto(const v1::ExchangeRequest& in) {
  federation::ExchangeMessage m;
  m.round_id = in.round_id();
  m.epoch = in.epoch();
  m.kind = static_cast<federation::MessageKind>(in.kind());
  m.dimension = in.dimension();
  m.phase = in.phase();
  m.moved = in.moved();
  m.from_label = in.from_label();
  m.rows = FromProto(in.rows());
  if (in.has_totals()) m.totals = FromProto(in.totals());
  if (in.has_run()) m.run = FromProto(in.run());
  m.level = in.level();
  m.position = in.position();
  return m;
}

void ToProto(const federation::RoundSpec& in, v1::StartRoundRequest* out) {
  out->set_round_id(in.round_id);
  out->set_coordinator(in.coordinator);
  for (int f : in.faults) out->add_fault_labels(f);
  out->set_dimension(in.dimension);
  out->set_mode(in.mode);
  out->set_epoch(in.epoch);
  out->set_deadline_unix_ms(absl::ToUnixMillis(in.deadline));
  out->set_roster_version(in.roster_version);
  out->set_prefix_scan(in.prefix_scan);
}

federation::RoundSpec FromProto(const v1::StartRoundRequest& in) {
  federation::RoundSpec s;
  s.round_id = in.round_id();
  s.coordinator = in.coordinator();
  s.faults.assign(in.fault_labels().begin(), in.fault_labels().end());
  std::sort(s.faults.begin(), s.faults.end());
  s.dimension = in.dimension();
  s.mode = in.mode();
  s.epoch = in.epoch();
  s.deadline = absl::FromUnixMillis(in.deadline_unix_ms());
  s.roster_version = in.roster_version();
  s.prefix_scan = in.prefix_scan();
  return s;
}

std::string PeerState(const federation::PeerInfo& p) {
  if (p.self) return p.drained ? "self,drained" : "self";
  if (!p.up) return "down";
  // Presumed alive (docs/design.md §6.11) but not heard from yet, first or
  // second hand: not "up" to an operator or a test waiting for health.
  if (p.last_seen == absl::InfinitePast() && p.row_at == absl::InfinitePast()) return "unheard";
  return p.drained ? "drained" : "up";
}

void ToProto(const federation::PeerInfo& in, v1::SiteStatus* out) {
  out->set_site(in.site);
  out->set_label(in.label);
  out->set_endpoint(in.endpoint);
  out->set_state(PeerState(in));
  out->set_load(in.load);
  out->set_capacity(in.capacity);
}

void ToStatusProto(const federation::PeerInfo& in, absl::Time now, const std::string& self_last_round,
                   const std::string& self_protocol, v1::SiteStatus* out) {
  ToProto(in, out);
  out->set_load_per_capacity(in.capacity > 0 ? static_cast<double>(in.load) / in.capacity : 0);
  out->set_last_round(in.self && !self_last_round.empty() ? self_last_round : in.last_round);
  // How old its row is: said to this site, or relayed (docs/design.md §6.11).
  const absl::Time said = std::max(in.row_at, in.self ? in.last_seen : absl::InfinitePast());
  out->set_age_ms(said == absl::InfinitePast() ? -1 : absl::ToInt64Milliseconds(now - said));
  out->set_roster_version(in.roster_version);
  out->set_protocol(in.self ? self_protocol : in.protocol);
}

void ToProto(const balance::BalancingSubcube& in, v1::BalancingSubcube* out) {
  out->set_dim(in.dim);
  out->set_base(in.base);
  out->set_mask(in.mask);
  out->set_tree_depth(in.tree_depth);
  for (size_t u = 0; u < in.parent.size(); ++u) {
    if (in.parent[u] < 0) continue;
    v1::TreeEdge* e = out->add_edges();
    e->set_child(static_cast<int>(u));
    e->set_parent(in.parent[u]);
  }
}

void ToProto(const migration::MigrationRecord& in, v1::Migration* out) {
  out->set_id(in.id);
  out->set_direction(migration::DirectionName(in.direction));
  out->set_peer(in.peer);
  out->set_state(migration::MigrationStateName(in.state));
  out->set_jobs(static_cast<int64_t>(in.jobs.size()));
  out->set_round_id(in.round_id);
  out->set_updated_ms(absl::ToUnixMillis(in.updated));
  for (const auto& j : in.jobs) out->add_job_keys(j.key);
}

void ToRoundEvent(const v1::Round& in, int from, v1::RoundEvent* out) {
  out->set_round_id(in.round_id());
  std::vector<std::string> lines(in.events().begin() + std::clamp(from, 0, in.events_size()), in.events().end());
  out->set_message(absl::StrJoin(lines, "\n"));
  if (!in.done()) return;
  out->set_final(true);
  *out->mutable_transfers() = in.transfers();
  *out->mutable_before() = in.before();
  *out->mutable_after() = in.after();
  out->set_max_share_error_before(in.max_share_error_before());
  out->set_max_share_error_after(in.max_share_error_after());
  out->set_moved(in.moved());
  out->set_messages(in.messages());
  out->set_steps(in.steps());
  out->set_ok(in.ok());
}

void ToProto(const federation::HeartbeatInfo& in, v1::HeartbeatRequest* out) {
  out->set_site(in.site);
  out->set_label(in.label);
  out->set_load(in.load);
  out->set_capacity(in.capacity);
  out->set_drained(in.drained);
  out->set_round_id(in.round_id);
  out->set_last_round(in.last_round);
  out->set_epoch(in.epoch);
  out->set_widest(in.widest);
  out->set_roster_version(in.roster_version);
  for (const auto& [offset, cores] : in.free) {
    v1::FreeAt* f = out->add_free();
    f->set_offset_ms(offset);
    f->set_cores(cores);
  }
  out->set_profile_age_ms(in.profile_age_ms);
  out->set_incarnation(in.incarnation);
}

namespace {
void ToProto(const federation::MemberNews& in, v1::MemberNews* out) {
  out->set_label(in.label);
  out->set_incarnation(in.incarnation);
  out->set_state(static_cast<v1::Liveness>(static_cast<int>(in.state)));
  out->set_by(in.by);
}
federation::MemberNews FromProto(const v1::MemberNews& in) {
  federation::MemberNews n;
  n.label = in.label();
  n.incarnation = in.incarnation();
  n.state = static_cast<federation::Liveness>(static_cast<int>(in.state()));
  n.by = in.by();
  return n;
}
}  // namespace

void ToProto(const federation::Gossip& in, v1::HeartbeatRequest* out) {
  for (const federation::MemberNews& n : in.news) ToProto(n, out->add_news());
  out->set_digest(in.digest);
  for (const federation::MemberNews& n : in.state) ToProto(n, out->add_state());
  for (const federation::RelayedRow& r : in.rows) {
    v1::RelayedRow* o = out->add_rows();
    ToProto(r.info, o->mutable_row());
    o->mutable_row()->set_protocol(r.info.protocol);  // the caller's own is set where it is sent
    o->set_age_ms(r.age_ms);
  }
}

federation::Gossip GossipFromProto(const v1::HeartbeatRequest& in) {
  federation::Gossip g;
  for (const v1::MemberNews& n : in.news()) g.news.push_back(FromProto(n));
  g.digest = in.digest();
  for (const v1::MemberNews& n : in.state()) g.state.push_back(FromProto(n));
  for (const v1::RelayedRow& o : in.rows()) g.rows.push_back({.info = FromProto(o.row()), .age_ms = o.age_ms()});
  return g;
}

void ToProto(const federation::ProbeAck& in, v1::HeartbeatReply* out) {
  out->set_incarnation(in.incarnation);
  for (const federation::MemberNews& n : in.news) ToProto(n, out->add_news());
  out->set_digest(in.digest);
  for (const federation::MemberNews& n : in.state) ToProto(n, out->add_state());
}

federation::ProbeAck ProbeAckFromProto(const v1::HeartbeatReply& in) {
  federation::ProbeAck a;
  a.protocol = in.protocol();
  a.incarnation = in.incarnation();
  for (const v1::MemberNews& n : in.news()) a.news.push_back(FromProto(n));
  a.digest = in.digest();
  for (const v1::MemberNews& n : in.state()) a.state.push_back(FromProto(n));
  return a;
}

v1::LeftRoundRequest ToLeftRoundRequest(const std::string& self, const std::string& round_id,
                                        const std::map<int, std::string>& left) {
  v1::LeftRoundRequest req;
  req.set_site(self);
  req.set_round_id(round_id);
  for (const auto& [label, why] : left) {
    v1::LeftRoundRequest::Left* l = req.add_left();
    l->set_label(label);
    l->set_why(why.substr(0, kMaxLeftWhyLength));
  }
  return req;
}

federation::HeartbeatInfo FromProto(const v1::HeartbeatRequest& in) {
  federation::HeartbeatInfo h;
  h.site = in.site();
  h.label = in.label();
  h.load = in.load();
  h.capacity = in.capacity();
  h.drained = in.drained();
  h.round_id = in.round_id();
  h.last_round = in.last_round();
  h.epoch = in.epoch();
  h.widest = in.widest();
  h.roster_version = in.roster_version();
  h.protocol = in.protocol();
  for (const v1::FreeAt& f : in.free()) h.free.push_back({f.offset_ms(), f.cores()});
  h.profile_age_ms = in.profile_age_ms();
  h.incarnation = in.incarnation();
  return h;
}

void ToProto(const federation::RoundView& r, v1::Round* o) {
  o->set_round_id(r.id);
  o->set_mode(r.mode);
  o->set_mode_name(r.spec.mode);
  o->set_dry_run(r.dry_run);
  o->set_done(r.done);
  o->set_ok(r.ok);
  o->set_started_ms(absl::ToUnixMillis(r.started));
  o->set_finished_ms(r.done ? absl::ToUnixMillis(r.finished) : 0);
  o->set_steps(r.steps);
  o->set_moved(r.moved);
  o->set_messages(r.messages);
  o->set_max_share_error_before(r.share_error_before);
  o->set_max_share_error_after(r.share_error_after);
  ToProto(r.transfers, o->mutable_transfers());
  for (const std::string& e : r.events) o->add_events(e);
  ToProto(r.before, o->mutable_before());
  ToProto(r.after, o->mutable_after());
}

}  // namespace hyperfed::server
