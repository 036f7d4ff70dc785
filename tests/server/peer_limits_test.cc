#include "daemon/server/peer_limits.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace hyperfed::server {
namespace {

TEST(PeerCallLimiterTest, EachPeerHasItsOwnSlots) {
  PeerCallLimiter l(2);
  EXPECT_TRUE(l.TryAcquire("cn:site-1"));
  EXPECT_TRUE(l.TryAcquire("cn:site-1"));
  EXPECT_FALSE(l.TryAcquire("cn:site-1"));  // a third at once: refused
  EXPECT_EQ(l.InFlight("cn:site-1"), 2);
  EXPECT_TRUE(l.TryAcquire("cn:site-2"));  // another peer is not held up
  l.Release("cn:site-1");
  EXPECT_EQ(l.InFlight("cn:site-1"), 1);
  EXPECT_TRUE(l.TryAcquire("cn:site-1"));
  l.Release("cn:site-1");
  l.Release("cn:site-1");
  l.Release("cn:site-1");  // one too many: harmless
  EXPECT_EQ(l.InFlight("cn:site-1"), 0);
  EXPECT_TRUE(l.TryAcquire("cn:site-1"));
}

TEST(PeerCallLimiterTest, ConcurrentCallersNeverExceedTheLimit) {
  PeerCallLimiter l(3);
  std::atomic<int> inside{0}, most{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        if (!l.TryAcquire("cn:p")) {
          ++refused;
          continue;
        }
        int now = ++inside;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        --inside;
        l.Release("cn:p");
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(l.InFlight("cn:p"), 0);
}

TEST(PeerCallLimiterTest, VerdictsAreKeptPerCall) {
  PeerCallLimiter l(1);
  grpc::ServerContext a, b, unseen;
  l.Record(&a, true);
  l.Record(&b, false);
  EXPECT_TRUE(l.Admitted(&a).ok());
  grpc::Status st = l.Admitted(&b);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(st.error_message().find("more than 1 calls"), std::string::npos) << st.error_message();
  EXPECT_TRUE(l.Admitted(&unseen).ok());
  l.Forget(&b);
  EXPECT_TRUE(l.Admitted(&b).ok());
}

}  // namespace
}  // namespace hyperfed::server
