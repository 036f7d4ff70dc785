#pragma once

// Shell completion generated from a CLI11 App's structure: its subcommands,
// their options and positionals, and the top App's options, which every
// subcommand falls through to. (CLI11 2.1 has no generator of its own.)

#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace hyperfed::client {

// What a value completes to: file names, or one of some words.
struct ValueCompletion {
  bool files = false;
  std::vector<std::string> words;
};

// By placeholder: an option's type name (FILE) or a positional's name
// (COMMAND). A value whose placeholder is not here completes to nothing.
using ValueCompletions = std::map<std::string, ValueCompletion>;

// A bash script that, sourced, makes `complete` offer app.get_name()'s
// commands, each command's flags with the global ones, and the values
// `values` names.
std::string BashCompletion(const CLI::App& app, const ValueCompletions& values);

}  // namespace hyperfed::client
