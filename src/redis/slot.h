#pragma once
// Redis Cluster key hashing: which of the 16384 slots a key belongs to.

#include <cstdint>
#include <string_view>

namespace sluice::redis {

inline constexpr uint16_t kClusterSlots = 16384;

// CRC16-CCITT in the XMODEM variant (polynomial 0x1021, initial value 0), as Redis Cluster
// uses: crc16("123456789") == 0x31C3.
uint16_t crc16(std::string_view data);

// The slot of `key`: CRC16 of the key mod 16384, or of the part between the first '{' and the
// next '}' when that part is not empty (a hash tag), so "{user1}.a" and "{user1}.b" share one.
uint16_t key_slot(std::string_view key);

}  // namespace sluice::redis
