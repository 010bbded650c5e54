#include "redis/slot.h"

#include <array>

namespace sluice::redis {

namespace {

constexpr std::array<uint16_t, 256> make_table() {
  std::array<uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int b = 0; b < 8; ++b) {
      crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
    }
    t[i] = static_cast<uint16_t>(crc);
  }
  return t;
}

constexpr std::array<uint16_t, 256> kTable = make_table();

}  // namespace

uint16_t crc16(std::string_view data) {
  uint16_t crc = 0;
  for (char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ static_cast<uint8_t>(c)) & 0xff]);
  }
  return crc;
}

uint16_t key_slot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) & (kClusterSlots - 1);
}

}  // namespace sluice::redis
