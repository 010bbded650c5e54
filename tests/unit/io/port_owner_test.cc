// ensure_port_free and port_owner: a port someone listens on is refused, naming the holder;
// SO_REUSEPORT, which would let a second listener join, does not get around the check.

#include "io/port_owner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "io/socket.h"

namespace sluice::io {
namespace {

// A listening socket of this process on 127.0.0.1, on a port the kernel picks.
struct HeldPort {
  int fd = -1;
  uint16_t port = 0;
  HeldPort() {
    SockAddr any;
    EXPECT_TRUE(make_sockaddr("127.0.0.1", 0, &any));
    auto l = listen_reuseport(any);
    EXPECT_TRUE(l.is_ok());
    fd = *l;
    SockAddr local;
    local.len = sizeof(local.storage);
    getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.len);
    port = local.port();
  }
  ~HeldPort() { close(fd); }
};

TEST(PortOwner, HeldPortIsRefusedNamingTheHolder) {
  HeldPort held;
  SockAddr addr;
  ASSERT_TRUE(make_sockaddr("127.0.0.1", held.port, &addr));
  common::Status st = ensure_port_free(addr);
  ASSERT_FALSE(st.is_ok());
  // This process is left out of the search (a gateway never names itself): "another process".
  EXPECT_EQ(st.message(), "address already in use: 127.0.0.1:" + std::to_string(held.port) +
                              " is held by another process");
  // The name is the kernel's for this process: "unit_io" natively, the emulator's under qemu-user.
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  ASSERT_FALSE(comm.empty());
  EXPECT_EQ(port_owner(held.port, -1), "pid " + std::to_string(getpid()) + " (" + comm + ")");
  SockAddr wildcard;
  ASSERT_TRUE(make_sockaddr("0.0.0.0", held.port, &wildcard));
  EXPECT_FALSE(ensure_port_free(wildcard).is_ok());  // 0.0.0.0 overlaps 127.0.0.1
}

TEST(PortOwner, FreePortPassesAndStaysFree) {
  uint16_t port;
  {
    HeldPort held;
    port = held.port;
  }
  SockAddr addr;
  ASSERT_TRUE(make_sockaddr("127.0.0.1", port, &addr));
  EXPECT_TRUE(ensure_port_free(addr).is_ok());
  EXPECT_TRUE(ensure_port_free(addr).is_ok());  // the check binds nothing that stays
  EXPECT_EQ(port_owner(port, -1), "");
}

}  // namespace
}  // namespace sluice::io
