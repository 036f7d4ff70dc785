#pragma once

// A registry of scheduler adapter factories keyed by name ("sim", "slurm",
// "exec", "gridengine"). main() registers each adapter explicitly (no static initialisers,
// so what a binary contains is visible in one place) and the daemon resolves
// the config's `scheduler.adapter` and parses its options here when it loads
// the config (config::LoadConfig): an unknown name or a bad option is an
// error naming the file and line, not deep in a call.
//
// Thread-safety: every method may be called from any thread.

#include <any>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
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
  std::map<std::string, std::string> options;  // the config's scheduler.options, as written
  const Env* clock = nullptr;                  // not owned; null = the real clock
};

// An adapter's options in the typed form its factory's ParseOptions made
// (SlurmOptions, SimOptions, ...). The config holds them once loaded
// (config::SchedulerConfig::parsed), so nothing parses an option's text
// after load.
using AdapterOptions = std::any;

// One scheduler adapter as the registry knows it: its name in the config
// (`scheduler.adapter`), how its options are read, how it is made. A new
// adapter is its own files under daemon/scheduler/ (its options parser
// beside it) and one registration line in main (docs/design.md, §11).
class AdapterFactory {
 public:
  virtual ~AdapterFactory() = default;

  // The value of scheduler.adapter that selects this adapter.
  virtual std::string Name() const = 0;

  // scheduler.options in the adapter's typed form, or an OptionError naming
  // the option (the config names its file and line). Runs no command and
  // opens nothing but files an option names: `hyperfedd --check` calls it.
  virtual absl::StatusOr<AdapterOptions> ParseOptions(const std::map<std::string, std::string>& options) const = 0;

  // Builds the adapter from what ParseOptions made (unusable state: the
  // underlying error).
  virtual absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Create(const AdapterOptions& options,
                                                                   const AdapterContext& ctx) const = 0;
};

// The usual shape of a factory: `Options` is the adapter's options struct;
// a subclass says how to parse it and how to make the adapter from it.
template <typename Options>
class TypedAdapterFactory : public AdapterFactory {
 public:
  absl::StatusOr<AdapterOptions> ParseOptions(const std::map<std::string, std::string>& options) const final {
    auto typed = Parse(options);
    if (!typed.ok()) return typed.status();
    return AdapterOptions(*std::move(typed));
  }

  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Create(const AdapterOptions& options,
                                                           const AdapterContext& ctx) const final {
    const Options* typed = std::any_cast<Options>(&options);
    if (typed == nullptr) {
      return absl::InternalError(absl::StrCat("scheduler adapter \"", Name(), "\": options parsed by another adapter"));
    }
    return Make(*typed, ctx);
  }

 protected:
  virtual absl::StatusOr<Options> Parse(const std::map<std::string, std::string>& options) const = 0;
  virtual absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Make(const Options& options,
                                                                 const AdapterContext& ctx) const = 0;
};

class AdapterRegistry {
 public:
  // InvalidArgument for a null factory or an empty name; AlreadyExists when
  // the name is taken (the first registration stays).
  absl::Status Register(std::unique_ptr<AdapterFactory> factory);

  // NotFound, naming the known adapters, for an unregistered name;
  // otherwise what the adapter's ParseOptions says.
  absl::StatusOr<AdapterOptions> ParseOptions(const std::string& name,
                                              const std::map<std::string, std::string>& options) const;

  // NotFound as ParseOptions for an unregistered name; otherwise whatever
  // the factory returns. `options` are what ParseOptions made (a loaded
  // config's scheduler.parsed); when empty (a config made in code), the
  // adapter parses ctx.options first.
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Create(const std::string& name, const AdapterOptions& options,
                                                           const AdapterContext& ctx) const;
  absl::StatusOr<std::unique_ptr<SchedulerAdapter>> Create(const std::string& name, const AdapterContext& ctx) const {
    return Create(name, AdapterOptions(), ctx);
  }

  bool Has(const std::string& name) const;

  // The registered names, sorted.
  std::vector<std::string> Names() const;

 private:
  // The factory registered as `name`, or NotFound naming the known ones.
  // Factories are never removed, so the pointer outlives the lock.
  absl::StatusOr<const AdapterFactory*> Find(const std::string& name) const;

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<AdapterFactory>> factories_;  // guarded by mu_
};

}  // namespace hyperfed::scheduler
