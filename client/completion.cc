#include "client/completion.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace hyperfed::client {
namespace {

// A word for bash, in single quotes.
std::string Quote(const std::string& s) { return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'"); }

std::vector<const CLI::App*> Commands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

// The long names (--name) of an App's options that are not positionals.
std::vector<std::string> Flags(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options())
    if (!o->get_positional())
      for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
  return out;
}

// The bash statement that fills COMPREPLY for a value with this placeholder,
// or "" if it completes to nothing.
std::string Complete(const ValueCompletions& values, const std::string& placeholder) {
  auto it = values.find(placeholder);
  if (it == values.end()) return "";
  if (it->second.files) return R"(COMPREPLY=($(compgen -f -- "$cur")))";
  return absl::StrCat(R"(COMPREPLY=($(compgen -W )", Quote(absl::StrJoin(it->second.words, " ")), R"( -- "$cur")))");
}

}  // namespace

std::string BashCompletion(const CLI::App& app, const ValueCompletions& values) {
  std::string fn = "_";
  for (char c : app.get_name()) fn += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';

  // Every flag that takes a value (the scan below skips the value), with what
  // the value completes to; the same flag name means the same in every command.
  std::map<std::string, std::string> valued;
  std::vector<const CLI::App*> all = Commands(app);
  all.insert(all.begin(), &app);
  for (const CLI::App* a : all)
    for (const CLI::Option* o : a->get_options())
      if (!o->get_positional() && o->get_expected_max() > 0)
        for (const std::string& l : o->get_lnames()) valued["--" + l] = Complete(values, o->get_type_name());

  std::vector<std::string> names;
  for (const CLI::App* c : Commands(app)) names.push_back(c->get_name());
  const std::vector<std::string> global = Flags(app);

  std::string s = absl::StrCat("# bash completion for ", app.get_name(), ", generated from its command line by `",
                               app.get_name(), " completion bash`.\n", fn, "() {\n",
                               R"(  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmd= npos=0 i w
  COMPREPLY=()
  # bash splits --flag=value at the '=' (COMP_WORDBREAKS).
  if [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi
  # The command is the first word that names one; after it, count the
  # positional arguments before the word being completed.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    case $w in
)");
  std::vector<std::string> valued_names;
  std::map<std::string, std::vector<std::string>> by_action;  // the flags whose value completes the same way
  for (const auto& [flag, action] : valued) {
    valued_names.push_back(flag);
    by_action[action].push_back(flag);
  }
  if (!valued_names.empty())
    absl::StrAppend(&s, "      ", absl::StrJoin(valued_names, "|"),
                    R"() ((i++)); [[ ${COMP_WORDS[i]} == = ]] && ((i++)); continue ;;)", "\n");
  absl::StrAppend(&s, R"(      -*) continue ;;
    esac
    if [[ -z $cmd ]]; then
      case $w in
        )",
                  absl::StrJoin(names, "|"), R"() cmd=$w ;;
      esac
    else
      ((npos++))
    fi
  done
  case $prev in
)");
  for (const auto& [action, flags] : by_action)
    absl::StrAppend(&s, "    ", absl::StrJoin(flags, "|"), ") ", action, action.empty() ? "" : "; ", "return ;;\n");
  absl::StrAppend(&s, R"(  esac
  if [[ $cur == -* ]]; then
    case $cmd in
)");
  for (const CLI::App* c : Commands(app)) {
    std::vector<std::string> flags = Flags(*c);
    if (flags.empty()) continue;
    flags.insert(flags.end(), global.begin(), global.end());
    absl::StrAppend(&s, "      ", c->get_name(), ") COMPREPLY=($(compgen -W ", Quote(absl::StrJoin(flags, " ")),
                    R"( -- "$cur")) ;;)", "\n");
  }
  absl::StrAppend(&s, "      *) COMPREPLY=($(compgen -W ", Quote(absl::StrJoin(global, " ")), R"( -- "$cur")) ;;
    esac
    return
  fi
  case $cmd in
    "") COMPREPLY=($(compgen -W )",
                  Quote(absl::StrJoin(names, " ")), R"( -- "$cur")) ;;)", "\n");
  for (const CLI::App* c : Commands(app)) {
    std::string cases;
    int n = 0;
    for (const CLI::Option* o : c->get_options()) {
      if (!o->get_positional()) continue;
      if (std::string action = Complete(values, o->get_name()); !action.empty())
        absl::StrAppend(&cases, n, ") ", action, " ;; ");
      ++n;
    }
    if (!cases.empty()) absl::StrAppend(&s, "    ", c->get_name(), ") case $npos in ", cases, "esac ;;\n");
  }
  absl::StrAppend(&s, "  esac\n}\ncomplete -F ", fn, " ", app.get_name(), "\n");
  return s;
}

}  // namespace hyperfed::client
