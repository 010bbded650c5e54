// proxy-cache's stores: the memory zone's LRU bound, the disk zone's file format (found again
// after a restart, corruption detected, disk_size and write errors), the fills' bookkeeping.

#include "plugins/proxy_cache/zone.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plugins/proxy_cache/disk_zone.h"

namespace sluice::plugins::proxy_cache {
namespace {

std::shared_ptr<Entry> entry(std::string key, size_t body, int64_t ttl = 60) {
  auto e = std::make_shared<Entry>();
  e->key = std::move(key);
  e->status = 200;
  e->add_field("Content-Type", "text/plain");
  e->add_field("X-A", "1");
  e->freeze();
  e->body.assign(body, 'x');
  e->created = now_s();
  e->ttl = ttl;
  return e;
}

TEST(ProxyCacheMemoryZone, KeepsWithinMemorySizeDroppingTheLeastRecentlyUsed) {
  const size_t one = entry("k0", 1000)->cost();
  MemoryZone z(one * 3 + one / 2);  // room for three
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(z.put(entry("k" + std::to_string(i), 1000)));
  }
  EXPECT_EQ(z.count(), 3u);
  ASSERT_NE(z.get("k0", key_hash("k0")), nullptr);  // k1 is now the least recently used
  ASSERT_TRUE(z.put(entry("k3", 1000)));
  EXPECT_EQ(z.count(), 3u);
  EXPECT_LE(z.used(), z.capacity());
  EXPECT_EQ(z.get("k1", key_hash("k1")), nullptr);
  EXPECT_NE(z.get("k0", key_hash("k0")), nullptr);
  EXPECT_NE(z.get("k3", key_hash("k3")), nullptr);
  // One bigger than the zone is refused, the rest kept.
  EXPECT_FALSE(z.put(entry("huge", one * 4)));
  EXPECT_EQ(z.count(), 3u);
  // Replacing a key does not count it twice.
  ASSERT_TRUE(z.put(entry("k3", 1000)));
  EXPECT_EQ(z.count(), 3u);
  EXPECT_TRUE(z.purge("k3", key_hash("k3")));
  EXPECT_FALSE(z.purge("k3", key_hash("k3")));
  EXPECT_EQ(z.count(), 2u);
}

TEST(ProxyCacheMemoryZone, FreshLooksAtTheTtl) {
  MemoryZone z(1 << 20);
  auto e = entry("old", 10, 5);
  e->created -= 10;
  ASSERT_TRUE(z.put(e));
  EXPECT_FALSE(z.fresh("old", key_hash("old")));
  ASSERT_TRUE(z.put(entry("new", 10)));
  EXPECT_TRUE(z.fresh("new", key_hash("new")));
}

TEST(ProxyCacheFills, OneFillerTheOthersWait) {
  Fills f;
  int made = 0;
  auto waiter = [&] {
    ++made;
    return Waiter{nullptr, nullptr, static_cast<uint64_t>(made)};
  };
  auto none = [] { return false; };
  EXPECT_EQ(f.join("k", none, waiter), Fills::Join::kFill);
  EXPECT_EQ(f.join("k", none, waiter), Fills::Join::kWait);
  EXPECT_EQ(f.join("k", none, waiter), Fills::Join::kWait);
  EXPECT_EQ(f.join(
                "k", [] { return true; }, waiter),
            Fills::Join::kFound);
  EXPECT_EQ(made, 2);
  auto ws = f.finish("k");
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[1].token, 2u);
  EXPECT_EQ(f.join("k", none, waiter), Fills::Join::kFill);  // a new round
}

class ProxyCacheDiskZone : public ::testing::Test {
 protected:
  ProxyCacheDiskZone() {
    char tmpl[] = "/tmp/sluice-pc-XXXXXX";
    dir_ = mkdtemp(tmpl);
    conf_ = {"d", 1 << 20, 1 << 20, dir_, {1, 2}};
  }
  ~ProxyCacheDiskZone() override { std::filesystem::remove_all(dir_); }
  // Writes `e` through a Writer, its body in pieces of 7 bytes.
  bool store(DiskZone& z, const Entry& e) {
    DiskZone::Writer w;
    if (!w.start(&z, e)) {
      return false;
    }
    for (size_t i = 0; i < e.body.size(); i += 7) {
      if (!w.write(std::string_view(e.body).substr(i, 7))) {
        return false;
      }
    }
    return w.commit();
  }
  std::string read_body(const DiskZone::Open& o) {
    std::string b(o.body_len, '\0');
    EXPECT_EQ(::pread(o.fd, b.data(), b.size(), static_cast<off_t>(o.body_at)),
              static_cast<ssize_t>(b.size()));
    return b;
  }
  std::string dir_;
  ZoneConf conf_;
};

TEST_F(ProxyCacheDiskZone, StoresAndFindsAgainAfterARestart) {
  auto e = entry("example.com/a", 100);
  e->body = "hello, world: " + std::string(90, 'y');
  {
    DiskZone z(conf_);
    ASSERT_TRUE(store(z, *e));
    DiskZone::Open o;
    ASSERT_EQ(z.open(e->key, key_hash(e->key), &o), DiskZone::Find::kHit);
    EXPECT_EQ(read_body(o), e->body);
    ::close(o.fd);
  }
  DiskZone again(conf_);  // the index rebuilt from the files
  EXPECT_EQ(again.count(), 1u);
  DiskZone::Open o;
  ASSERT_EQ(again.open(e->key, key_hash(e->key), &o), DiskZone::Find::kHit);
  EXPECT_EQ(o.meta.status, 200);
  ASSERT_EQ(o.meta.fields.size(), 2u);
  EXPECT_EQ(o.meta.fields[1].name, "X-A");
  EXPECT_EQ(read_body(o), e->body);
  Checksum sum;
  sum.add(read_body(o));
  EXPECT_EQ(sum.value(), o.body_sum);
  ::close(o.fd);
  // nginx's layout: levels 1:2 from the end of the name.
  std::string name = fmt::format("{:016x}", key_hash(e->key));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/" + name.substr(15, 1) + "/" + name.substr(13, 2) +
                                      "/" + name));
  EXPECT_TRUE(again.purge(e->key, key_hash(e->key)));
  EXPECT_FALSE(again.purge(e->key, key_hash(e->key)));
}

TEST_F(ProxyCacheDiskZone, ExpiredIsToldApart) {
  DiskZone z(conf_);
  auto e = entry("k", 10, 1);
  e->created -= 5;
  ASSERT_TRUE(store(z, *e));
  DiskZone::Open o;
  EXPECT_EQ(z.open("k", key_hash("k"), &o), DiskZone::Find::kExpired);
  ::close(o.fd);
  EXPECT_FALSE(z.fresh(key_hash("k")));
}

TEST_F(ProxyCacheDiskZone, ACorruptedHeadIsAMissAndTheFileGoes) {
  std::string path;
  {
    DiskZone z(conf_);
    ASSERT_TRUE(store(z, *entry("k", 50)));
    std::string name = fmt::format("{:016x}", key_hash("k"));
    path = dir_ + "/" + name.substr(15, 1) + "/" + name.substr(13, 2) + "/" + name;
    ASSERT_TRUE(std::filesystem::exists(path));
    int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "Z", 1, kFileHead + 1), 1);  // a byte of the key
    ::close(fd);
    DiskZone::Open o;
    EXPECT_EQ(z.open("k", key_hash("k"), &o), DiskZone::Find::kMiss);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_EQ(z.count(), 0u);
  }
  // At start: a truncated file is dropped while the index is rebuilt.
  {
    DiskZone z(conf_);
    ASSERT_TRUE(store(z, *entry("k", 50)));
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  DiskZone z(conf_);
  EXPECT_EQ(z.count(), 0u);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(ProxyCacheDiskZone, ACorruptedBodyFailsItsChecksum) {
  DiskZone z(conf_);
  ASSERT_TRUE(store(z, *entry("k", 500)));
  DiskZone::Open o;
  ASSERT_EQ(z.open("k", key_hash("k"), &o), DiskZone::Find::kHit);
  int fd = ::open(("/proc/self/fd/" + std::to_string(o.fd)).c_str(), O_WRONLY);
  ASSERT_EQ(::pwrite(fd, "Q", 1, static_cast<off_t>(o.body_at + 100)), 1);
  ::close(fd);
  Checksum sum;
  sum.add(read_body(o));
  EXPECT_NE(sum.value(), o.body_sum);
  ::close(o.fd);
}

TEST_F(ProxyCacheDiskZone, BoundedByDiskSize) {
  conf_.disk_size = 3000;
  DiskZone z(conf_);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store(z, *entry("k" + std::to_string(i), 800)));
  }
  EXPECT_LE(z.used(), conf_.disk_size);
  EXPECT_LT(z.count(), 5u);
  DiskZone::Open o;
  EXPECT_EQ(z.open("k0", key_hash("k0"), &o), DiskZone::Find::kMiss);
  EXPECT_EQ(z.open("k4", key_hash("k4"), &o), DiskZone::Find::kHit);
  ::close(o.fd);
  // One bigger than the zone is refused while it is written; nothing is left of it.
  EXPECT_FALSE(store(z, *entry("big", 4000)));
  EXPECT_EQ(z.open("big", key_hash("big"), &o), DiskZone::Find::kMiss);
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/tmp"));
}

TEST_F(ProxyCacheDiskZone, AnUnwritablePlaceStoresNothing) {
  DiskZone z(conf_);
  // tmp/ turned into a file: no file can be made under it, whoever runs the test.
  std::filesystem::remove_all(dir_ + "/tmp");
  std::ofstream(dir_ + "/tmp") << "x";
  EXPECT_FALSE(store(z, *entry("k", 10)));
  DiskZone::Open o;
  EXPECT_EQ(z.open("k", key_hash("k"), &o), DiskZone::Find::kMiss);
}

}  // namespace
}  // namespace sluice::plugins::proxy_cache
