#pragma once
// A Lua script for EVALSHA, with its SHA1 computed once when it is built.

#include <string>
#include <string_view>

namespace sluice::redis {

// A script's text and its lowercase hex SHA1, the name Redis's script cache knows it by.
// Thread: any (immutable)
class Script {
 public:
  explicit Script(std::string source);

  const std::string& source() const { return source_; }
  const std::string& sha1() const { return sha1_; }

 private:
  std::string source_;
  std::string sha1_;
};

// Lowercase hex SHA1 of `data` (40 characters).
std::string sha1_hex(std::string_view data);

}  // namespace sluice::redis
