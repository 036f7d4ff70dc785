#pragma once

// One site incarnation's calls to its peers in the federation simulation:
// the federation layer's PeerClient and the migration layer's
// PeerTransport, as GrpcPeers implements both for hyperfedd, over the
// simulated network (sim/federation/network.h).

#include <string>
#include <vector>

#include "daemon/common/env.h"
#include "daemon/federation/round.h"
#include "daemon/migration/transport.h"
#include "sim/federation/network.h"

namespace hyperfed::fedsim {

class SimPeers : public federation::PeerClient, public migration::PeerTransport {
 public:
  SimPeers(SimNet* net, std::string self, const Env* env) : net_(net), self_(std::move(self)), env_(env) {}

  absl::StatusOr<balance::LoadTable> Exchange(const std::string& site, const federation::ExchangeMessage& m,
                                              absl::Duration timeout) override;
  absl::StatusOr<federation::LookupAnswer> Lookup(const std::string& site, const federation::ExchangeMessage& m,
                                                  absl::Duration timeout) override;
  std::vector<StartAnswer> StartRound(const std::vector<std::string>& sites, const federation::RoundSpec& spec,
                                      absl::Duration timeout) override;
  absl::Status ReportRound(const std::string& site, const federation::RoundReport& report,
                           absl::Duration timeout) override;
  std::vector<absl::StatusOr<balance::LoadRow>> CurrentLoads(const std::vector<std::string>& sites,
                                                             absl::Duration timeout) override;
  absl::StatusOr<federation::RoundReport> GetReport(const std::string& site, const std::string& round_id,
                                                    absl::Duration timeout) override;
  std::vector<absl::Status> LeftRound(const std::vector<std::string>& sites, const std::string& round_id,
                                      const std::map<int, std::string>& left, absl::Duration timeout) override;
  absl::StatusOr<std::string> RequestBalance(const std::string& site, const std::string& from,
                                             const std::string& reason, absl::Duration timeout) override;
  std::vector<absl::StatusOr<federation::ProbeAck>> Heartbeats(const std::vector<std::string>& sites,
                                                               const federation::HeartbeatInfo& info,
                                                               const std::vector<federation::Gossip>& gossip,
                                                               absl::Duration timeout) override;
  std::vector<absl::StatusOr<bool>> ProbeFor(const std::vector<std::pair<std::string, std::string>>& asks,
                                             absl::Duration timeout) override;

  absl::StatusOr<migration::TransferReply> Transfer(const std::string& dest_site,
                                                    const migration::TransferRequest& req) override;
  absl::StatusOr<migration::AbortReply> Abort(const std::string& dest_site, const std::string& migration_id,
                                              const std::string& source_site) override;

 private:
  SimNet* const net_;
  const std::string self_;
  const Env* const env_;
};

}  // namespace hyperfed::fedsim
