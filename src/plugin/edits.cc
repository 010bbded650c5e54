#include "plugin/edits.h"

namespace sluice::plugin {

HeaderEdits::Op& HeaderEdits::push(Kind k, std::string_view name, std::string_view value) {
  if (n_ == ops_.size()) {
    ops_.emplace_back();
  }
  Op& op = ops_[n_++];
  op.kind = k;
  op.name.assign(name);
  op.value.assign(value);
  return op;
}

void HeaderEdits::set(std::string_view name, std::string_view value) {
  push(Kind::kSet, name, value);
}

void HeaderEdits::add(std::string_view name, std::string_view value) {
  push(Kind::kAdd, name, value);
}

void HeaderEdits::remove(std::string_view name) { push(Kind::kRemove, name, {}); }

bool HeaderEdits::named_after(size_t i, std::string_view name) const {
  for (size_t j = i + 1; j < n_; ++j) {
    if (ops_[j].kind != Kind::kAdd && http::iequals(ops_[j].name, name)) {
      return true;
    }
  }
  return false;
}

bool HeaderEdits::drops(std::string_view name) const {
  for (size_t i = 0; i < n_; ++i) {
    if (ops_[i].kind != Kind::kAdd && http::iequals(ops_[i].name, name)) {
      return true;
    }
  }
  return false;
}

bool HeaderEdits::lookup(std::string_view name, const std::string** value) const {
  bool named = false;
  *value = nullptr;
  for (size_t i = 0; i < n_; ++i) {
    const Op& op = ops_[i];
    if (!http::iequals(op.name, name)) {
      continue;
    }
    named = true;
    if (op.kind == Kind::kRemove) {
      *value = nullptr;
    } else if (op.kind == Kind::kSet || *value == nullptr) {
      *value = &op.value;
    }
  }
  return named;
}

void BodyPiece::replace(std::string_view data) {
  if (data.data() >= buffer_->data() && data.data() <= buffer_->data() + buffer_->size()) {
    data_ = data;  // already in the buffer (a substring of an earlier replacement)
    return;
  }
  buffer_->assign(data);
  data_ = *buffer_;
}

}  // namespace sluice::plugin
