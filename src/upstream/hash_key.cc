#include "upstream/hash_key.h"

#include <cctype>

#include "upstream/hash64.h"

namespace sluice::upstream {

namespace {

// nginx's name for a header variable: lower case, '-' read as '_'.
std::string header_var(std::string_view prefix, std::string_view name, bool fold) {
  std::string out(prefix);
  for (char c : name) {
    if (fold) {
      c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    out.push_back(c);
  }
  return out;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

HashKey HashKey::compile(HashOn on, std::string_view key) {
  HashKey k;
  k.on_ = on;
  auto add_var = [&k](std::string name) {
    router::Var v = router::Var::parse(name);
    k.parts_.push_back({std::move(name), std::move(v), true});
  };
  switch (on) {
    case HashOn::kVars:
      add_var(std::string(key));
      break;
    case HashOn::kHeader:
      add_var(header_var("http_", key, true));
      break;
    case HashOn::kCookie:
      add_var(header_var("cookie_", key, false));
      break;
    case HashOn::kConsumer:
      break;
    case HashOn::kVarsCombinations: {
      std::string text;
      for (size_t i = 0; i < key.size();) {
        size_t start = i + 1;
        bool braced = key[i] == '$' && start < key.size() && key[start] == '{';
        size_t end = braced ? key.find('}', start) : start;
        if (!braced) {
          while (key[i] == '$' && end < key.size() && is_name_char(key[end])) {
            ++end;
          }
        }
        if (key[i] != '$' || end == std::string_view::npos || end == start) {
          text.push_back(key[i++]);
          continue;
        }
        if (!text.empty()) {
          k.parts_.push_back({std::move(text), router::Var(), false});
          text.clear();
        }
        add_var(std::string(braced ? key.substr(start + 1, end - start - 1)
                                   : key.substr(start, end - start)));
        i = braced ? end + 1 : end;
      }
      if (!text.empty()) {
        k.parts_.push_back({std::move(text), router::Var(), false});
      }
      break;
    }
  }
  return k;
}

std::string_view HashKey::unreadable_var() const {
  for (const Part& p : parts_) {
    if (p.is_var && p.var.nil()) {
      return p.text;
    }
  }
  return {};
}

template <typename Emit>
void HashKey::visit(const router::MatchContext& m, std::string_view consumer, Emit&& emit) const {
  if (on_ == HashOn::kConsumer) {
    emit(consumer.empty() ? m.remote_addr : consumer);
    return;
  }
  if (parts_.size() == 1) {  // the common case: one variable
    std::string_view v;
    router::VarScratch s;
    emit(parts_[0].var.get(m, &s, &v) ? v : m.remote_addr);
    return;
  }
  // vars_combinations: APISIX falls back when no variable resolved. Two passes keep the
  // fallback decision ahead of the first emitted byte without buffering.
  router::VarScratch s;
  std::string_view v;
  bool any = false;
  for (const Part& p : parts_) {
    if (p.is_var && p.var.get(m, &s, &v)) {
      any = true;
      break;
    }
  }
  if (!any) {
    emit(m.remote_addr);
    return;
  }
  for (const Part& p : parts_) {
    if (!p.is_var) {
      emit(std::string_view(p.text));
    } else if (p.var.get(m, &s, &v)) {
      emit(v);
    }
  }
}

uint64_t HashKey::hash(const router::MatchContext& m, std::string_view consumer) const {
  Hash64 h;
  visit(m, consumer, [&h](std::string_view piece) { h.add(piece); });
  return h.finish();
}

std::string HashKey::text(const router::MatchContext& m, std::string_view consumer) const {
  std::string out;
  visit(m, consumer, [&out](std::string_view piece) { out.append(piece); });
  return out;
}

}  // namespace sluice::upstream
