#pragma once
// The request ids request-id makes: uuid (version 4, lower-case, as lua-resty-jit-uuid),
// nanoid (21 URL-safe characters, as nanoid.safe_simple), range_id (a length from a char_set)
// and ksuid (27 base62 characters: a 4-byte timestamp and 16 random bytes). Each worker
// thread draws from its own generator, seeded from the kernel: no lock, no shared state.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::plugins::request_id {

// A xoshiro256** generator, seeded from getrandom(2).
// Thread: worker (one per thread: thread_rng())
class Rng {
 public:
  Rng();
  uint64_t next();
  // Uniform in [0, n), n > 0, without modulo bias.
  uint32_t below(uint32_t n);

 private:
  uint64_t s_[4];
};

Rng& thread_rng();

inline constexpr size_t kUuidLen = 36;
inline constexpr size_t kNanoidLen = 21;
inline constexpr size_t kKsuidLen = 27;

// Each appends one id to `out`.
void append_uuid(Rng& rng, std::string* out);
void append_nanoid(Rng& rng, std::string* out);
void append_range_id(Rng& rng, std::string_view char_set, size_t length, std::string* out);
// `unix_seconds`: the id's time; KSUID counts from 1400000000.
void append_ksuid(Rng& rng, uint64_t unix_seconds, std::string* out);

}  // namespace sluice::plugins::request_id
