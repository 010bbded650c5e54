#include "redis/script.h"

#include <openssl/sha.h>

#include <utility>

namespace sluice::redis {

std::string sha1_hex(std::string_view data) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * SHA_DIGEST_LENGTH, '0');
  for (int i = 0; i < SHA_DIGEST_LENGTH; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return out;
}

Script::Script(std::string source) : source_(std::move(source)), sha1_(sha1_hex(source_)) {}

}  // namespace sluice::redis
