#pragma once

// Helpers shared by the migration tests: a temporary folder and an
// in-process transport that can lose, duplicate or refuse messages.

#include <stdlib.h>

#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "daemon/migration/migrator.h"
#include "daemon/migration/transport.h"

namespace hyperfed::migration::testing {

// mkdtemp under $TMPDIR (or /tmp), removed with its contents at scope end.
class TempDir {
 public:
  // `base` empty: $TMPDIR, else /tmp.
  explicit TempDir(std::string base = "") {
    if (base.empty()) {
      const char* env = std::getenv("TMPDIR");
      base = env && *env ? env : "/tmp";
    }
    std::string tmpl = absl::StrCat(base, "/hyperfed-mig-XXXXXX");
    char* p = mkdtemp(tmpl.data());
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// What happens to the next call through a TestTransport.
enum class Fault {
  kNone,
  kDropRequest,  // never delivered; the caller sees Unavailable
  kDropReply,    // delivered and handled; the caller sees DeadlineExceeded
  kDuplicate,    // delivered twice; the caller sees the second answer
};

// Connects Migrators in one process. Thread-safe.
class TestTransport : public PeerTransport {
 public:
  void Connect(const std::string& site, Migrator* m) {
    std::lock_guard<std::mutex> l(mu_);
    peers_[site] = m;
  }
  void SetDown(const std::string& site, bool down) {
    std::lock_guard<std::mutex> l(mu_);
    down_[site] = down;
  }
  // Faults for the next calls (Transfer or Abort), in order.
  void Queue(Fault f) {
    std::lock_guard<std::mutex> l(mu_);
    faults_.push_back(f);
  }
  int transfers_delivered() const {
    std::lock_guard<std::mutex> l(mu_);
    return transfers_delivered_;
  }
  // Changes every successful Transfer reply before the source sees it (a
  // destination answering what does not fit); nullptr: none.
  void SetReplyFilter(std::function<void(TransferReply*)> filter) {
    std::lock_guard<std::mutex> l(mu_);
    reply_filter_ = std::move(filter);
  }

  absl::StatusOr<TransferReply> Transfer(const std::string& dest, const TransferRequest& req) override {
    Migrator* m;
    Fault f;
    if (absl::Status s = Route(dest, &m, &f); !s.ok()) return s;
    if (f == Fault::kDropRequest) return absl::UnavailableError("test transport: request lost");
    absl::StatusOr<TransferReply> r = m->HandleTransfer(req);
    Count();
    if (f == Fault::kDuplicate) {
      r = m->HandleTransfer(req);
      Count();
    }
    if (f == Fault::kDropReply) return absl::DeadlineExceededError("test transport: reply lost");
    std::function<void(TransferReply*)> filter;
    {
      std::lock_guard<std::mutex> l(mu_);
      filter = reply_filter_;
    }
    if (filter && r.ok()) filter(&*r);
    return r;
  }

  absl::StatusOr<AbortReply> Abort(const std::string& dest, const std::string& id, const std::string& source) override {
    Migrator* m;
    Fault f;
    if (absl::Status s = Route(dest, &m, &f); !s.ok()) return s;
    if (f == Fault::kDropRequest) return absl::UnavailableError("test transport: request lost");
    absl::StatusOr<AbortReply> r = m->HandleAbort(id, source);
    if (f == Fault::kDuplicate) r = m->HandleAbort(id, source);
    if (f == Fault::kDropReply) return absl::DeadlineExceededError("test transport: reply lost");
    return r;
  }

 private:
  absl::Status Route(const std::string& dest, Migrator** m, Fault* f) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = peers_.find(dest);
    if (it == peers_.end() || down_[dest]) return absl::UnavailableError("test transport: " + dest + " unreachable");
    *m = it->second;
    *f = Fault::kNone;
    if (!faults_.empty()) {
      *f = faults_.front();
      faults_.pop_front();
    }
    return absl::OkStatus();
  }
  void Count() {
    std::lock_guard<std::mutex> l(mu_);
    ++transfers_delivered_;
  }

  mutable std::mutex mu_;
  std::map<std::string, Migrator*> peers_;
  std::map<std::string, bool> down_;
  std::deque<Fault> faults_;
  int transfers_delivered_ = 0;
  std::function<void(TransferReply*)> reply_filter_;
};

}  // namespace hyperfed::migration::testing
