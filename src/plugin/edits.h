#pragma once
// What plugins change about a message, kept beside the parsed head rather than copied into
// it: the codec applies the edits when it writes the head out. A request no plugin edits
// carries empty edits and costs one test per head. Every container keeps its capacity across
// requests, so steady state allocates nothing.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"

namespace sluice::plugin {

// Set / add / remove operations on a message's header fields, in the order plugins made them.
// The result is: every original field no later set/remove names, then every added or set
// field no later set/remove names, in order.
// Thread: worker
class HeaderEdits {
 public:
  // Replaces every field named `name` (original or added) with one field.
  void set(std::string_view name, std::string_view value);
  // Appends a field, keeping those of the same name.
  void add(std::string_view name, std::string_view value);
  // Drops every field named `name`.
  void remove(std::string_view name);

  bool empty() const { return n_ == 0; }
  void clear() { n_ = 0; }
  // Whether an original field named `name` is dropped (a set or remove names it).
  bool drops(std::string_view name) const;
  // The value the edits give `name`: kept false when no edit names it, else true with the
  // last surviving added/set value (nullptr when removed).
  bool lookup(std::string_view name, const std::string** value) const;
  // Calls f(name, value) for each added or set field that survives, in order.
  template <class F>
  void for_each_added(F&& f) const {
    for (size_t i = 0; i < n_; ++i) {
      const Op& op = ops_[i];
      if (op.kind != Kind::kRemove && !named_after(i, op.name)) {
        f(std::string_view(op.name), std::string_view(op.value));
      }
    }
  }

 private:
  enum class Kind : uint8_t { kSet, kAdd, kRemove };
  struct Op {
    Kind kind;
    std::string name;
    std::string value;
  };
  Op& push(Kind k, std::string_view name, std::string_view value);
  // A set or remove after position i names `name`.
  bool named_after(size_t i, std::string_view name) const;

  std::vector<Op> ops_;  // ops_[0, n_) are live; the rest keep their strings' capacity
  size_t n_ = 0;
};

// The request as the upstream will get it: what plugins changed of the client's request.
// Thread: worker
struct RequestEdits {
  // The request-target sent upstream, path and query (`/a?b=1`), already in wire form;
  // empty: the client's target as forwarded by default.
  std::string uri;
  // The method token; empty: unchanged.
  std::string method;
  // The Host sent upstream; empty: as the upstream's pass_host says.
  std::string host;
  HeaderEdits headers;

  bool empty() const { return uri.empty() && method.empty() && host.empty() && headers.empty(); }
  void clear() {
    uri.clear();
    method.clear();
    host.clear();
    headers.clear();
  }
};

// The response head as the client will get it, from the upstream or the gateway.
// Thread: worker
struct ResponseEdits {
  int status = 0;  // 0: unchanged
  HeaderEdits headers;
  // The body a body_filter will produce differs in length from the one that arrives: the
  // Content-Length received is dropped and the body framed by chunks (or the close, for
  // HTTP/1.0), unless `content_length` says the new length.
  bool body_changes = false;
  int64_t content_length = -1;  // >= 0: the exact length of the body that will be sent

  bool empty() const { return status == 0 && headers.empty() && !body_changes; }
  void clear() {
    status = 0;
    headers.clear();
    body_changes = false;
    content_length = -1;
  }
};

// One piece of the response body on its way to the client. A body_filter hook may replace
// it or drop it; the next hook sees the result. The bytes given to replace() are copied into
// a buffer the request owns, which lives until the piece has been written.
// Thread: worker
class BodyPiece {
 public:
  BodyPiece(std::string_view data, bool eof, std::string* buffer)
      : data_(data), eof_(eof), buffer_(buffer) {}
  std::string_view data() const { return data_; }
  // The last piece of the body (its data may be empty).
  bool eof() const { return eof_; }
  void replace(std::string_view data);
  void drop() { data_ = {}; }

 private:
  std::string_view data_;
  bool eof_;
  std::string* buffer_;
};

}  // namespace sluice::plugin
