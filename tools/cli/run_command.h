// `deepcontext run`: runs a program with every Python process in it profiled.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace deepcontext::cli {

void AddRunCommand(CLI::App& app, std::function<int()>& action);

}  // namespace deepcontext::cli
