#include "daemon/scheduler/registry.h"

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hyperfed::scheduler {

namespace {
constexpr char kOptionPayload[] = "type.hyperfed/scheduler.option";
}  // namespace

absl::Status OptionError(absl::string_view option, absl::string_view message) {
  absl::Status st = absl::InvalidArgumentError(message);
  st.SetPayload(kOptionPayload, absl::Cord(option));
  return st;
}

std::string OptionOf(const absl::Status& st) {
  const auto name = st.GetPayload(kOptionPayload);
  return name ? std::string(*name) : std::string();
}

absl::Status AdapterRegistry::Register(std::string name, AdapterFactory factory, OptionsCheck check) {
  if (name.empty()) return absl::InvalidArgumentError("scheduler adapter name is empty");
  if (!factory) {
    return absl::InvalidArgumentError(absl::StrCat("scheduler adapter \"", name, "\": null factory"));
  }
  absl::MutexLock l(&mu_);
  if (factories_.contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat("scheduler adapter \"", name, "\" is already registered"));
  }
  factories_.emplace(std::move(name), Entry{std::move(factory), std::move(check)});
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SchedulerAdapter>> AdapterRegistry::Create(const std::string& name,
                                                                          const AdapterContext& ctx) const {
  AdapterFactory factory;
  {
    absl::MutexLock l(&mu_);
    auto it = factories_.find(name);
    if (it == factories_.end()) return UnknownLocked(name);
    factory = it->second.factory;
  }
  // Outside the lock: a factory may open files or run commands.
  auto adapter = factory(ctx);
  if (adapter.ok() && *adapter == nullptr) {
    return absl::InternalError(absl::StrCat("scheduler adapter \"", name, "\": factory returned no adapter"));
  }
  return adapter;
}

absl::Status AdapterRegistry::UnknownLocked(const std::string& name) const {
  std::vector<std::string> known;
  for (const auto& [n, e] : factories_) known.push_back(n);
  return absl::NotFoundError(absl::StrCat("unknown scheduler adapter \"", name,
                                          "\"; known: ", known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
}

absl::Status AdapterRegistry::CheckOptions(const std::string& name,
                                           const std::map<std::string, std::string>& options) const {
  OptionsCheck check;
  {
    absl::MutexLock l(&mu_);
    auto it = factories_.find(name);
    if (it == factories_.end()) return UnknownLocked(name);
    check = it->second.check;
  }
  return check ? check(options) : absl::OkStatus();
}

bool AdapterRegistry::Has(const std::string& name) const {
  absl::MutexLock l(&mu_);
  return factories_.contains(name);
}

std::vector<std::string> AdapterRegistry::Names() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [n, e] : factories_) names.push_back(n);
  return names;
}

}  // namespace hyperfed::scheduler
