// grpc-timeout: the units gRPC's PROTOCOL-HTTP2.md names, rounding up to whole milliseconds,
// and the malformed values that leave the route's timeouts alone.

#include "proxy/grpc.h"

#include <gtest/gtest.h>

namespace sluice::proxy {
namespace {

TEST(GrpcTimeout, Units) {
  EXPECT_EQ(parse_grpc_timeout("2H"), 7200000u);
  EXPECT_EQ(parse_grpc_timeout("3M"), 180000u);
  EXPECT_EQ(parse_grpc_timeout("5S"), 5000u);
  EXPECT_EQ(parse_grpc_timeout("300m"), 300u);
  EXPECT_EQ(parse_grpc_timeout("1500u"), 2u);     // rounded up
  EXPECT_EQ(parse_grpc_timeout("1000000n"), 1u);  // exactly 1 ms
  EXPECT_EQ(parse_grpc_timeout("1n"), 1u);        // never 0: 0 means "none"
  EXPECT_EQ(parse_grpc_timeout("0m"), 1u);        // already due: as short as it gets
  EXPECT_EQ(parse_grpc_timeout("99999999S"), 99999999000u);
}

TEST(GrpcTimeout, MalformedIsIgnored) {
  for (const char* v : {"", "m", "5", "5s", "5ms", "-5m", "5 m", "123456789m", "1.5S", "5h"}) {
    EXPECT_EQ(parse_grpc_timeout(v), 0u) << v;
  }
}

}  // namespace
}  // namespace sluice::proxy
