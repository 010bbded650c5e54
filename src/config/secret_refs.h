#pragma once
// APISIX's references to secrets in plugin confs (apisix/secret.lua): a string value
// `$env://NAME` is the environment variable NAME, `$env://NAME/field` the field `field` of the
// JSON object that variable holds; `$secret://manager/id/...` is looked up in a secret manager.
// Sluice resolves them when a snapshot is built. It serves no secret manager (Vault, AWS and
// GCP cannot be reached from where it is tested), so a `$secret://` reference is an error
// naming it rather than a value that silently fails to match.

#include <string>

#include "config/resources.h"

namespace sluice::config {

// True when some string in `conf` (at any depth) is a reference.
bool has_secret_refs(const Json& conf);

// Replaces every reference in `conf` by its value. False, with `why`, when one cannot be
// resolved (an unset variable, a field the JSON lacks, a `$secret://` reference); `conf` is
// then partly replaced and must not be used.
bool resolve_secret_refs(Json* conf, std::string* why);

}  // namespace sluice::config
