// IncidentLog: the first failure of a kind is reported, repeats within the window are counted
// and handed to the next report after it; the map of kinds stays bounded.

#include "server/incident_log.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::server {
namespace {

TEST(IncidentLog, RepeatsWithinTheWindowAreCountedAndReportedWithTheNextLine) {
  IncidentLog log(1000);
  EXPECT_EQ(log.admit("a", 0), 0u);
  EXPECT_EQ(log.admit("a", 10), IncidentLog::kNotNow);
  EXPECT_EQ(log.admit("a", 999), IncidentLog::kNotNow);
  EXPECT_EQ(log.admit("b", 999), 0u);  // another kind is its own incident
  EXPECT_EQ(log.admit("a", 1000), 2u);
  EXPECT_EQ(log.admit("a", 1500), IncidentLog::kNotNow);
  EXPECT_EQ(log.admit("a", 2000), 1u);
  EXPECT_EQ(log.admit("a", 5000), 0u);  // a quiet spell: nothing was held back
}

TEST(IncidentLog, ManyKindsDoNotGrowWithoutBound) {
  IncidentLog log(1000, 8);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(log.admit(std::to_string(i), 5), 0u) << i;
  }
  // Kind 99 was kept (the newest); a repeat of it is still counted.
  EXPECT_EQ(log.admit("99", 6), IncidentLog::kNotNow);
}

}  // namespace
}  // namespace sluice::server
