#pragma once

// A stand-in for `squeue` in the slurm adapter's tests that need jobs a
// single-node Slurm 22.05 cannot make (other users' forged comments, states
// it cannot reach on demand): the jobs are written as squeue's JSON job
// objects (the fields the tests care about) and printed as the adapter's
// `squeue --noheader --Format` read would print them, with the separator the
// adapter chose for that read (taken from SQUEUE_FORMAT2).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "daemon/scheduler/slurm_adapter.h"
#include "nlohmann/json.hpp"

namespace hyperfed::testing {

// What the fake squeue prints where the adapter's separator goes.
inline constexpr char kCannedSeparator[] = "@SEP@";

// Minutes as squeue prints a time limit ("1:30:00", "2-00:01:00", "5:00").
inline std::string CannedTimeLimit(int64_t minutes) {
  const int64_t t = minutes * 60, m = t / 60 % 60, h = t / 3600 % 24, d = t / 86400;
  if (d > 0) return absl::StrFormat("%d-%02d:%02d:00", d, h, m);
  if (h > 0) return absl::StrFormat("%d:%02d:00", h, m);
  return absl::StrFormat("%d:00", m);
}

// `doc`'s "jobs" (squeue --json's 22.05 job objects: job_id, job_state,
// state_reason, submit_time, start_time, eligible_time, partition,
// user_name, cluster, name, cpus, memory_per_node, time_limit (minutes),
// current_working_directory, batch_flag, comment, admin_comment) as the
// adapter's read prints them, kCannedSeparator for the separator.
inline std::string CannedSqueue(const std::string& doc) {
  using nlohmann::json;
  // The fields in the adapter's order: its own format, cut at the separator.
  std::vector<std::string> fields;
  for (absl::string_view f :
       absl::StrSplit(scheduler::SqueueFormat(kCannedSeparator), absl::StrCat(kCannedSeparator, ","))) {
    absl::ConsumeSuffix(&f, kCannedSeparator);
    fields.push_back(std::string(f.substr(0, f.find(':'))));
  }
  std::string out;
  const json parsed = json::parse(doc);  // kept: a range-for over a temporary's member would dangle
  for (const json& j : parsed.at("jobs")) {
    auto str = [&](const char* k, const char* none = "(null)") {
      return j.contains(k) && j[k].is_string() && !j[k].get<std::string>().empty() ? j[k].get<std::string>()
                                                                                   : std::string(none);
    };
    auto num = [&](const char* k, const char* none = "N/A") {
      return j.contains(k) && j[k].is_number() ? absl::StrCat(j[k].get<int64_t>()) : std::string(none);
    };
    for (const std::string& f : fields) {
      std::string v = "N/A";
      if (f == "JobID") v = num("job_id");
      if (f == "State") v = str("job_state", "PENDING");
      if (f == "Reason") v = str("state_reason", "None");
      if (f == "SubmitTime") v = num("submit_time");
      if (f == "StartTime") v = num("start_time");
      if (f == "EligibleTime") v = num("eligible_time");
      if (f == "Partition") v = str("partition", "debug");
      if (f == "UserName") v = str("user_name", "root");
      if (f == "Cluster") v = str("cluster", "canned");
      if (f == "Name") v = str("name", "wrap");
      if (f == "NumCPUs") v = num("cpus", "1");
      if (f == "MinMemory") v = j.contains("memory_per_node") ? absl::StrCat(num("memory_per_node"), "M") : "0";
      if (f == "tres-alloc") {
        v = absl::StrCat("cpu=", num("cpus", "1"),
                         ",mem=", j.contains("memory_per_node") ? absl::StrCat(num("memory_per_node"), "M") : "16G",
                         ",node=1,billing=1");
      }
      if (f == "TimeLimit")
        v = j.contains("time_limit") ? CannedTimeLimit(j["time_limit"].get<int64_t>()) : std::string("UNLIMITED");
      if (f == "WorkDir") v = str("current_working_directory", "/tmp");
      if (f == "BatchFlag") v = j.contains("batch_flag") && !j["batch_flag"].get<bool>() ? "0" : "1";
      if (f == "NumTasks" || f == "NumNodes") v = "1";
      if (f == "Dependency" || f == "Licenses" || f == "Feature") v = "(null)";
      if (f == "Comment") v = str("comment");
      if (f == "admin_comment") v = str("admin_comment");
      absl::StrAppend(&out, v, kCannedSeparator);
    }
    out += "\n";
  }
  return out;
}

// A fake squeue that prints file `path` (written by CannedSqueue), each
// kCannedSeparator replaced by the separator of the read.
inline std::string CannedSqueueScript(const std::string& path) {
  return absl::StrCat("#!/bin/sh\nsep=${SQUEUE_FORMAT2%%,*}\nsep=${sep#JobID:0}\nsed \"s/", kCannedSeparator,
                      "/$sep/g\" \"", path, "\"\n");
}

}  // namespace hyperfed::testing
