#pragma once
// The built-in plugins, highest priority first. Each plugin adds its line to builtin.cc;
// there is no self-registration.

#include <span>

#include "plugin/info.h"

namespace sluice::plugins {

std::span<const plugin::PluginInfo> builtin();

}  // namespace sluice::plugins
