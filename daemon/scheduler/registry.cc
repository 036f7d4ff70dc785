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

absl::Status AdapterRegistry::Register(std::unique_ptr<AdapterFactory> factory) {
  if (factory == nullptr) return absl::InvalidArgumentError("scheduler adapter: null factory");
  std::string name = factory->Name();
  if (name.empty()) return absl::InvalidArgumentError("scheduler adapter name is empty");
  absl::MutexLock l(&mu_);
  if (factories_.contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat("scheduler adapter \"", name, "\" is already registered"));
  }
  factories_.emplace(std::move(name), std::move(factory));
  return absl::OkStatus();
}

absl::StatusOr<const AdapterFactory*> AdapterRegistry::Find(const std::string& name) const {
  absl::MutexLock l(&mu_);
  if (auto it = factories_.find(name); it != factories_.end()) return it->second.get();
  std::vector<std::string> known;
  for (const auto& [n, f] : factories_) known.push_back(n);
  return absl::NotFoundError(absl::StrCat("unknown scheduler adapter \"", name,
                                          "\"; known: ", known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
}

absl::StatusOr<AdapterOptions> AdapterRegistry::ParseOptions(const std::string& name,
                                                             const std::map<std::string, std::string>& options) const {
  auto factory = Find(name);
  if (!factory.ok()) return factory.status();
  return (*factory)->ParseOptions(options);
}

absl::StatusOr<std::unique_ptr<SchedulerAdapter>> AdapterRegistry::Create(const std::string& name,
                                                                          const AdapterOptions& options,
                                                                          const AdapterContext& ctx) const {
  auto factory = Find(name);
  if (!factory.ok()) return factory.status();
  // Outside the lock: a factory may open files or run commands.
  AdapterOptions parsed = options;
  if (!parsed.has_value()) {
    auto p = (*factory)->ParseOptions(ctx.options);
    if (!p.ok()) return p.status();
    parsed = *std::move(p);
  }
  auto adapter = (*factory)->Create(parsed, ctx);
  if (adapter.ok() && *adapter == nullptr) {
    return absl::InternalError(absl::StrCat("scheduler adapter \"", name, "\": factory returned no adapter"));
  }
  return adapter;
}

bool AdapterRegistry::Has(const std::string& name) const {
  absl::MutexLock l(&mu_);
  return factories_.contains(name);
}

std::vector<std::string> AdapterRegistry::Names() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> names;
  for (const auto& [n, f] : factories_) names.push_back(n);
  return names;
}

}  // namespace hyperfed::scheduler
