#pragma once

// Conversions at the RPC edge: protobuf messages to and from the plain
// structs the other layers use, and absl::Status to grpc::Status. Nothing
// else in the daemon sees a protobuf type.

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "daemon/balance/exact.h"
#include "daemon/balance/mcwa.h"
#include "daemon/federation/round.h"
#include "daemon/federation/round_history.h"
#include "daemon/migration/journal.h"
#include "daemon/migration/transport.h"
#include "daemon/scheduler/adapter.h"
#include "hyperfed/v1/hyperfed.pb.h"

namespace hyperfed::server {

grpc::Status ToGrpc(const absl::Status& s);
absl::Status FromGrpc(const grpc::Status& s);

void ToProto(const scheduler::JobSpec& in, v1::JobSpec* out);
scheduler::JobSpec FromProto(const v1::JobSpec& in);
void ToProto(const scheduler::Job& in, const std::string& site, v1::Job* out);

void ToProto(const balance::LoadRow& in, v1::LoadRow* out);
void ToProto(const balance::LoadTable& in, google::protobuf::RepeatedPtrField<v1::LoadRow>* out);
balance::LoadRow FromProto(const v1::LoadRow& in);
balance::LoadTable FromProto(const google::protobuf::RepeatedPtrField<v1::LoadRow>& in);
balance::StartProfile ProfileFromProto(const v1::LoadRow& in);
void ToProto(const std::vector<balance::Transfer>& in, google::protobuf::RepeatedPtrField<v1::Transfer>* out);
std::vector<balance::Transfer> FromProto(const google::protobuf::RepeatedPtrField<v1::Transfer>& in);

void ToProto(const migration::TransferRequest& in, v1::TransferRequest* out);
migration::TransferRequest FromProto(const v1::TransferRequest& in);
// The replies carry refused_keys (issue 34, finding 5): every transport
// converts them here, so none drops the field.
void ToProto(const migration::TransferReply& in, v1::TransferReply* out);
migration::TransferReply FromProto(const v1::TransferReply& in);
void ToProto(const migration::AbortReply& in, v1::AbortReply* out);
migration::AbortReply FromProto(const v1::AbortReply& in);

void ToProto(const federation::RoundReport& in, v1::RoundReport* out);
federation::RoundReport FromProto(const v1::RoundReport& in);
void ToProto(const federation::ExchangeMessage& in, v1::ExchangeRequest* out);
federation::ExchangeMessage FromProto(const v1::ExchangeRequest& in);
// The exact round by prefix sums (protocol 1.9): what a SCAN and a LOOKUP
// carry; PeerHandlers::Exchange checks what comes in.
void ToProto(const balance::ScanTotals& in, v1::ScanTotals* out);
balance::ScanTotals FromProto(const v1::ScanTotals& in);
void ToProto(const balance::MatchRun& in, v1::MatchRun* out);
balance::MatchRun FromProto(const v1::MatchRun& in);
// `self_label` names the answering site in the answer's row.
void ToProto(const federation::LookupAnswer& in, int self_label, v1::LookupAnswer* out);
federation::LookupAnswer FromProto(const v1::LookupAnswer& in);
void ToProto(const federation::RoundSpec& in, v1::StartRoundRequest* out);
federation::RoundSpec FromProto(const v1::StartRoundRequest& in);  // faults sorted
void ToProto(const federation::HeartbeatInfo& in, v1::HeartbeatRequest* out);
// A probe's gossip and answer (docs/design.md §6.11); the handler checks
// what comes in (PeerHandlers::Heartbeat, CheckGossip).
void ToProto(const federation::Gossip& in, v1::HeartbeatRequest* out);
federation::Gossip GossipFromProto(const v1::HeartbeatRequest& in);
void ToProto(const federation::ProbeAck& in, v1::HeartbeatReply* out);
federation::ProbeAck ProbeAckFromProto(const v1::HeartbeatReply& in);
// A site as the operator sees it (Status, Topology): id, label, endpoint,
// load, capacity and its state in one word: "self" (with ",drained"),
// "down", "drained" or "up" (PeerState).
void ToProto(const federation::PeerInfo& in, v1::SiteStatus* out);
std::string PeerState(const federation::PeerInfo& p);
// The same with what Status adds: load per capacity, the last round, the
// heartbeat's age at `now` (-1: none yet), the roster version and the
// protocol; this site's own row takes `self_last_round` ("" = the peer
// view's) and `self_protocol`.
void ToStatusProto(const federation::PeerInfo& in, absl::Time now, const std::string& self_last_round,
                   const std::string& self_protocol, v1::SiteStatus* out);
// A balancing subcube of the next round (Topology): its tree as edges.
void ToProto(const balance::BalancingSubcube& in, v1::BalancingSubcube* out);
// A migration of this site's journal (Admin.Migrations).
void ToProto(const migration::MigrationRecord& in, v1::Migration* out);
// The event of a round's record from its `from`-th event on; the final
// event also carries the round's outcome (Admin.Balance's stream).
void ToRoundEvent(const v1::Round& in, int from, v1::RoundEvent* out);
// A round this site coordinated, as Admin.Rounds and Peer.Rounds answer it.
void ToProto(const federation::RoundView& in, v1::Round* out);
federation::HeartbeatInfo FromProto(const v1::HeartbeatRequest& in);
// The coordinator `self` tells that the sites at these labels (label ->
// why) have left `round_id` (Peer.LeftRound), each reason cut to
// kMaxLeftWhyLength characters, the most a site takes.
inline constexpr size_t kMaxLeftWhyLength = 1000;
v1::LeftRoundRequest ToLeftRoundRequest(const std::string& self, const std::string& round_id,
                                        const std::map<int, std::string>& left);

}  // namespace hyperfed::server
