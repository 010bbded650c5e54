#include "bench/upstream_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/kit.h"

namespace sluice::bench {
namespace {

TEST(UpstreamOptionsTest, Defaults) {
  auto o = parse_upstream_args({});
  ASSERT_TRUE(o.is_ok());
  EXPECT_EQ(address_text(o->listen), "127.0.0.1:0");
  EXPECT_EQ(o->body, "hello world\n");
  EXPECT_EQ(o->service_us, 0u);
  EXPECT_EQ(o->threads, 1);
}

TEST(UpstreamOptionsTest, EveryFlag) {
  auto o = parse_upstream_args(
      {"--listen", "[::1]:8081", "--body", "a\\tb\\\\\\n", "--service-us=250", "--threads", "3"});
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(address_text(o->listen), "[::1]:8081");
  EXPECT_EQ(o->body, "a\tb\\\n");
  EXPECT_EQ(o->service_us, 250u);
  EXPECT_EQ(o->threads, 3);
}

TEST(UpstreamOptionsTest, Errors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--listen", "8080"}, "expected IPv4:PORT"},
      {{"--listen", "[::1]8080"}, "expected [IPv6]:PORT"},
      {{"--listen", "example.com:80"}, "'example.com' is not a numeric IP address"},
      {{"--listen", "127.0.0.1:70000"}, "out of range"},
      {{"--body", "x\\q"}, "--body: unknown escape at offset 1"},
      {{"--service-us", "-5"}, "out of range"},
      {{"--threads", "0"}, "out of range"},
      {{"--nope"}, "unknown argument --nope"},
      {{"--body"}, "--body needs a value"},
  };
  for (const auto& [args, error] : cases) {
    auto o = parse_upstream_args(args);
    ASSERT_FALSE(o.is_ok()) << error;
    EXPECT_NE(o.status().message().find(error), std::string::npos) << o.status().message();
  }
}

TEST(KitTest, CandidatesInOrder) {
  EXPECT_EQ(kit_candidates(nullptr, "/opt/s/bin"),
            (std::vector<std::string>{"/opt/s/bin/../tools/bench/sluice_bench.py",
                                      "/opt/s/bin/../share/sluice/bench/sluice_bench.py"}));
  EXPECT_EQ(kit_candidates("", "/b").size(), 2u);
  auto with_env = kit_candidates("/k/kit.py", "/b");
  ASSERT_EQ(with_env.size(), 3u);
  EXPECT_EQ(with_env[0], "/k/kit.py");
}

}  // namespace
}  // namespace sluice::bench
