#include "plugins/key_auth/key_auth.h"

#include <fmt/format.h>

#include <memory>
#include <utility>

#include "common/strings.h"

namespace sluice::plugins::key_auth {

using plugin::Action;
using plugin::Context;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const KeyAuth>(std::move(conf).value()));
}

common::StatusOr<std::shared_ptr<const plugin::ConsumerIndex>> index(
    std::span<const plugin::AuthConf> confs, std::vector<std::string>* warnings) {
  auto out = std::make_shared<KeyIndex>();
  out->keys.reserve(confs.size());
  for (const plugin::AuthConf& a : confs) {
    // Checked when stored; the full parse runs only for a value the checks missed.
    auto it = a.conf->is_object() ? a.conf->find("key") : a.conf->end();
    std::string_view key;
    if (it != a.conf->end() && it->is_string()) {
      key = it->get_ref<const std::string&>();
    } else if (auto parsed = parse_consumer(*a.conf); !parsed.is_ok()) {
      return parsed.status();
    }
    const plugin::Credential* was = out->keys.add(key, a.credential);
    if (was != nullptr && was->consumer != a.credential->consumer) {
      warnings->push_back(fmt::format(
          "key-auth: consumers {} and {} have the same key; requests with it authenticate as {}",
          was->consumer->name, a.credential->consumer->name, a.credential->consumer->name));
    }
  }
  return std::shared_ptr<const plugin::ConsumerIndex>(std::move(out));
}

// ngx.unescape_uri as get_uri_args applies it: `%XX` decoded, `+` is a space, a `%` not
// followed by two hex digits kept as it is.
void unescape_arg(std::string_view v, std::string* out) {
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '+') {
      out->push_back(' ');
    } else if (v[i] == '%' && i + 2 < v.size() && common::hex_value(v[i + 1]) >= 0 &&
               common::hex_value(v[i + 2]) >= 0) {
      out->push_back(
          static_cast<char>(common::hex_value(v[i + 1]) * 16 + common::hex_value(v[i + 2])));
      i += 2;
    } else {
      out->push_back(v[i]);
    }
  }
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo = [] {
    plugin::PluginInfo i{"key-auth", 2500, false, check, make, kSchema};
    i.auth = true;
    i.index = index;
    return i;
  }();
  return kInfo;
}

int query_arg(std::string_view query, std::string_view name, std::string* out) {
  int found = 0;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    std::string_view raw_name = pair.substr(0, eq);
    // get_uri_args decodes names too; a name needing no decoding is compared as it is.
    bool same = raw_name == name;
    if (!same && raw_name.find_first_of("%+") != std::string_view::npos) {
      std::string decoded;
      unescape_arg(raw_name, &decoded);
      same = decoded == name;
    }
    if (same) {
      if (++found == 1) {
        // A bare `name` is `true` to get_uri_args: a boolean matches no key.
        if (eq == std::string_view::npos) {
          out->clear();
          found = 2;
        } else {
          unescape_arg(pair.substr(eq + 1), out);
        }
      } else {
        found = 2;
      }
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return found > 2 ? 2 : found;
}

void drop_query_arg(std::string_view query, std::string_view name, std::string* out) {
  out->clear();
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    std::string_view raw_name = pair.substr(0, pair.find('='));
    std::string decoded;
    unescape_arg(raw_name, &decoded);
    if (decoded != name && !pair.empty()) {
      if (!out->empty()) {
        out->push_back('&');
      }
      out->append(pair);
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
}

bool KeyAuth::find_key(Context& ctx, std::string_view* key, bool* from_header) const {
  const http::RequestHead& req = *ctx.req;
  int headers = 0;
  for (size_t i = 0; i < req.num_headers; ++i) {
    if (http::iequals(req.headers[i].name, conf_.header)) {
      if (++headers == 1) {
        *key = req.headers[i].value;
      }
    }
  }
  if (headers > 0) {
    *from_header = true;
    if (headers > 1) {
      ctx.scratch.assign(1, '\0');  // several: APISIX gets a table, which is no key
      *key = ctx.scratch;
    }
    return true;
  }
  *from_header = false;
  int n = query_arg(req.query, conf_.query, &ctx.scratch);
  if (n == 0) {
    return false;
  }
  if (n == 2) {
    ctx.scratch.assign(1, '\0');  // never a stored key: keys are JSON strings, checked
  }
  *key = ctx.scratch;
  return true;
}

void KeyAuth::hide(Context& ctx, bool from_header) const {
  if (from_header) {
    ctx.upstream.headers.remove(conf_.header);
    return;
  }
  const http::RequestHead& req = *ctx.req;
  std::string_view target = req.target;
  std::string_view path = target.starts_with('/') ? target.substr(0, target.find('?')) : req.path;
  std::string query;
  drop_query_arg(req.query, conf_.query, &query);
  std::string& uri = ctx.upstream.uri;
  uri.assign(path);
  if (!query.empty()) {
    uri.push_back('?');
    uri.append(query);
  }
}

Action KeyAuth::fail(Context& ctx, std::string_view message) const {
  if (conf_.anonymous_consumer.empty()) {
    plugin::auth_reply(ctx, 401, message);
    return Action::kReply;
  }
  return plugin::attach_anonymous(ctx, info().name, conf_.anonymous_consumer) ? Action::kContinue
                                                                              : Action::kReply;
}

Action KeyAuth::rewrite(Context& ctx) const {
  std::string_view key;
  bool from_header = false;
  if (!find_key(ctx, &key, &from_header)) {
    return fail(ctx, "Missing API key in request");
  }
  const auto* idx = ctx.consumers->index_as<KeyIndex>(info().name);
  const plugin::Credential* cred = idx != nullptr ? idx->keys.find(key) : nullptr;
  if (cred == nullptr) {
    return fail(ctx, "Invalid API key in request");
  }
  if (conf_.hide_credentials) {
    hide(ctx, from_header);
  }
  plugin::attach_consumer(ctx, *cred);
  return Action::kContinue;
}

}  // namespace sluice::plugins::key_auth
