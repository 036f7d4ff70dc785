#pragma once

// A registry of scheduler adapter factories keyed by name ("sim", "slurm",
// "exec"). main() registers each adapter explicitly (no static initialisers,
// so what a binary contains is visible in one place) and the daemon resolves
// the config's `scheduler.adapter` here at startup: an unknown name is an
// error at config load, not deep in a call.
//
// Thread-safety: every method may be called from any thread.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "daemon/common/env.h"
#include "daemon/scheduler/adapter.h"

namespace hyperfed::scheduler {

// An error in the adapter option `option` (InvalidArgument with
// `message`, which says `scheduler option "NAME": why`). The option's name
// rides along (OptionOf), so that the daemon names the option's file and
// line without reading the message; a missing option is blamed on the one
// that needs it.
absl::Status OptionError(absl::string_view option, absl::string_view message);
// The option an OptionError names; "" for any other status.
std::string OptionOf(const absl::Status& st);

// What a factory gets to build an adapter.
struct AdapterContext {
  std::string state_dir;                       // the daemon's state folder
  std::map<std::string, std::string> options;  // the config's scheduler.options
  const Env* clock = nullptr;                  // not owned; null = the real clock
};

// Builds an adapter, or says why not (bad options: InvalidArgument naming the
// option; unusable state: the underlying error).
using AdapterFactory = std::function<absl::StatusOr<std::unique_ptr<SchedulerAdapter>>(const AdapterContext&)>;

// Checks an adapter's options the way its factory does, touching nothing
// (no file, no command): `hyperfedd --check` runs it. An error names the
// option to blame as the factory's does: `scheduler option "NAME": ...`.
using OptionsCheck = std::function<absl::Status(const std::map<std::string, std::string>& options)>;

class AdapterRegistry {
 public:
  // InvalidArgument for an empty name or a null factory; AlreadyExists when
  // the name is taken (the first registration stays).
  // `check` may be null: such an adapter's options are checked only when it
  // is made.
  absl::Status Register(std::string name, AdapterFactory factory, OptionsCheck check = nullptr);

  // NotFound, naming the known adapters, for an unregistered name; otherwise
  // whatever the factory returns.
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Create(const std::string& name, const AdapterContext& ctx) const;

  bool Has(const std::string& name) const;

  // NotFound as Create for an unregistered name; otherwise what the
  // adapter's OptionsCheck says (OK when it has none).
  absl::Status CheckOptions(const std::string& name, const std::map<std::string, std::string>& options) const;

  // The registered names, sorted.
  std::vector<std::string> Names() const;

 private:
  absl::Status UnknownLocked(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  struct Entry {
    AdapterFactory factory;
    OptionsCheck check;
  };
  std::map<std::string, Entry> factories_;  // guarded by mu_
};

}  // namespace hyperfed::scheduler
