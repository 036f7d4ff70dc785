#include "daemon/server/web.h"

#include <arpa/inet.h>
#include <httplib.h>

#include <functional>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "config/config.h"
#include "daemon/protojson/proto_json.h"
#include "daemon/server/auth.h"
#include "daemon/server/web_assets.h"
#include "hyperfed/v1/hyperfed.grpc.pb.h"

namespace hyperfed::server {

namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(10);

// What every answer carries: nothing cached, nothing framed, no script or
// style from anywhere but this port.
void Harden(httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
}

// gRPC's codes as HTTP statuses.
int HttpStatus(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}

void Error(httplib::Response& res, grpc::StatusCode code, const std::string& message) {
  res.status = HttpStatus(code);
  // Dump replaces invalid UTF-8 (a message may quote a peer's bytes).
  const protojson::Json body = {{"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(code))},
                                {"error", message}};
  res.set_content(protojson::Dump(body) + "\n", "application/json");
}

// The query parameters a call takes; any other is an error, as an unknown
// flag is for hyperfedctl.
grpc::Status CheckParams(const httplib::Request& req, const std::set<std::string>& allowed) {
  for (const auto& [k, v] : req.params)
    if (!allowed.count(k))
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat("unknown parameter '", k, "'"));
  return grpc::Status::OK;
}

grpc::Status IntParam(const httplib::Request& req, const std::string& name, int32_t* out) {
  if (!req.has_param(name)) return grpc::Status::OK;
  const std::string v = req.get_param_value(name);
  if (!absl::SimpleAtoi(v, out))
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(name, ": '", v, "' is not a whole number"));
  return grpc::Status::OK;
}

grpc::Status BoolParam(const httplib::Request& req, const std::string& name, bool* out) {
  if (!req.has_param(name)) return grpc::Status::OK;
  const std::string v = req.get_param_value(name);
  if (v == "true" || v == "1") {
    *out = true;
  } else if (v == "false" || v == "0") {
    *out = false;
  } else {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(name, ": '", v, "' is not true or false"));
  }
  return grpc::Status::OK;
}

using Gate = std::function<bool(const httplib::Request&, httplib::Response&)>;
template <typename Req>
using Decode = std::function<grpc::Status(const httplib::Request&, Req*)>;
template <typename Req, typename Reply>
using Method = grpc::Status (v1::Admin::Stub::*)(grpc::ClientContext*, const Req&, Reply*);

template <typename Req>
grpc::Status NoParams(const httplib::Request&, Req*) {
  return grpc::Status::OK;
}

// GET /api/v1/<name>: `decode` builds the request from the query, `method`
// makes the Admin call; the reply goes back as protojson::Encode writes it.
template <typename Req, typename Reply>
void AddCall(httplib::Server* http, std::shared_ptr<v1::Admin::Stub> stub, Gate gate, const std::string& name,
             std::set<std::string> params, Decode<Req> decode, Method<Req, Reply> method) {
  http->Get("/api/v1/" + name, [=](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    Req request;
    grpc::Status st = CheckParams(req, params);
    if (st.ok()) st = decode(req, &request);
    if (!st.ok()) return Error(res, st.error_code(), st.error_message());
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
    // The browser's credential, passed on as is: the Admin service checks it.
    const std::string auth = req.get_header_value("Authorization");
    if (!auth.empty()) ctx.AddMetadata("authorization", auth);
    // Failed logins are counted per browser address (AdminService::CheckAdmin).
    ctx.AddMetadata(kWebClientHeader, req.remote_addr);
    Reply reply;
    st = (stub.get()->*method)(&ctx, request, &reply);
    if (!st.ok()) return Error(res, st.error_code(), st.error_message());
    // The encoder hyperfedctl --json prints with: the same reply, the same JSON.
    res.set_content(protojson::Encode(reply), "application/json");
  });
}

}  // namespace

bool WebHostAllowed(const std::string& host_header, const std::vector<std::string>& hosts) {
  std::string h = absl::AsciiStrToLower(absl::StripAsciiWhitespace(host_header));
  if (h.empty()) return false;
  if (h.front() == '[') {  // [IPv6]:port
    const size_t end = h.find(']');
    if (end == std::string::npos) return false;
    in6_addr a6;
    return inet_pton(AF_INET6, h.substr(1, end - 1).c_str(), &a6) == 1 && (end + 1 == h.size() || h[end + 1] == ':');
  }
  if (const size_t colon = h.rfind(':'); colon != std::string::npos) {
    int port = 0;
    if (!absl::SimpleAtoi(h.substr(colon + 1), &port)) return false;
    h.resize(colon);
  }
  in_addr a4;
  if (inet_pton(AF_INET, h.c_str(), &a4) == 1 || h == "localhost") return true;
  for (const std::string& name : hosts)
    if (absl::EqualsIgnoreCase(h, absl::StripAsciiWhitespace(name))) return true;
  return false;
}

bool IsLoopbackClient(const std::string& remote_addr) {
  std::string a = remote_addr;
  if (absl::StartsWithIgnoreCase(a, "::ffff:")) a = a.substr(7);  // IPv4 mapped into IPv6
  return config::IsLoopback(a.find(':') == std::string::npos ? a + ":0" : "[" + a + "]:0");
}

void WebView::Register(httplib::Server* http) const {
  if (access_ == WebAccess::kOff) return;
  const WebAccess access = access_;
  const std::vector<std::string> hosts = hosts_;
  Gate gate = [access, hosts](const httplib::Request& req, httplib::Response& res) {
    Harden(res);
    if (!WebHostAllowed(req.get_header_value("Host"), hosts)) {
      Error(res, grpc::StatusCode::PERMISSION_DENIED,
            "the web view answers requests for its IP address, localhost or a name in site.web_hosts only");
      return false;
    }
    if (access == WebAccess::kLoopback && !IsLoopbackClient(req.remote_addr)) {
      Error(res, grpc::StatusCode::PERMISSION_DENIED,
            "the web view answers clients on this machine only (site.web: loopback); reach it through an SSH "
            "tunnel, or set site.web: on behind a TLS proxy");
      return false;
    }
    return true;
  };
  for (const WebAsset& a : WebAssets()) {
    const std::string path = a.path == "/index.html" ? "/" : a.path;
    http->Get(path, [a, gate](const httplib::Request& req, httplib::Response& res) {
      if (gate(req, res)) res.set_content(std::string(a.content), a.content_type);
    });
  }

  std::shared_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(admin_);
  using namespace v1;
  AddCall<StatusRequest, StatusReply>(http, stub, gate, "status", {}, NoParams<StatusRequest>, &Admin::Stub::Status);
  AddCall<TopologyRequest, TopologyReply>(http, stub, gate, "topology", {}, NoParams<TopologyRequest>,
                                          &Admin::Stub::Topology);
  AddCall<RoundsRequest, RoundsReply>(
      http, stub, gate, "rounds", {"site", "limit", "dry_runs"},
      [](const httplib::Request& q, RoundsRequest* r) {
        r->set_site(q.get_param_value("site"));
        int32_t limit = 0;
        bool dry = false;
        grpc::Status st = IntParam(q, "limit", &limit);
        if (st.ok()) st = BoolParam(q, "dry_runs", &dry);
        r->set_limit(limit);
        r->set_dry_runs(dry);
        return st;
      },
      &Admin::Stub::Rounds);
  AddCall<MigrationsRequest, MigrationsReply>(
      http, stub, gate, "migrations", {"limit"},
      [](const httplib::Request& q, MigrationsRequest* r) {
        int32_t limit = 0;
        grpc::Status st = IntParam(q, "limit", &limit);
        r->set_limit(limit);
        return st;
      },
      &Admin::Stub::Migrations);
  AddCall<JobsRequest, JobsReply>(
      http, stub, gate, "jobs", {"site"},
      [](const httplib::Request& q, JobsRequest* r) {
        r->set_site(q.get_param_value("site"));
        return grpc::Status::OK;
      },
      &Admin::Stub::Jobs);
  AddCall<ExplainJobRequest, ExplainJobReply>(
      http, stub, gate, "explain", {"job"},
      [](const httplib::Request& q, ExplainJobRequest* r) {
        r->set_job(q.get_param_value("job"));
        return grpc::Status::OK;
      },
      &Admin::Stub::ExplainJob);
  AddCall<WaitsRequest, WaitsReply>(http, stub, gate, "waits", {}, NoParams<WaitsRequest>, &Admin::Stub::Waits);
}

}  // namespace hyperfed::server
