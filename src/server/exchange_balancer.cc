// The exchange's side of load balancing: the chash key while the request head is readable,
// the pick for each try, and telling the upstream's balancer when a try on a node begins and
// how it ends (least_conn counts tries in flight, ewma learns response times).

#include "server/client_conn.h"
#include "server/worker.h"
#include "upstream/balancer.h"

namespace sluice::server {

uint64_t ClientConn::balancer_hash() const {
  if (up_conf_->type != upstream::BalancerType::kChash) [[likely]] {
    return 0;
  }
  const router::MatchContext m{&ex_->req, client_ip_, client_addr_, local_port_};
  return up_conf_->hash_key.hash(m, plugins_ ? ex_->pctx.consumer : std::string_view());
}

int ClientConn::pick_node() {
  // Unhealthy nodes are skipped unless all are (then the mask reads 0: APISIX balances
  // across all of them).
  upstream::PickArgs args{tried_ | up_conf_->unhealthy_mask(), lb_hash_, w_.loop().now_ms()};
  return w_.balancer(*up_conf_).pick(*up_conf_, args);
}

void ClientConn::node_started(int node) {
  node_finished(false);  // a try whose connect failed synchronously
  lb_ = &w_.balancer(*up_conf_);
  lb_generation_ = w_.balancer_generation();
  lb_node_ = node;
  lb_start_ms_ = w_.loop().now_ms();
  lb_->started(*up_conf_, node);
}

void ClientConn::node_finished(bool completed) {
  if (lb_node_ < 0) {
    return;
  }
  int node = lb_node_;
  lb_node_ = -1;
  if (lb_generation_ != w_.balancer_generation()) {
    return;  // the balancers were replaced since; this try is not theirs
  }
  upstream::Outcome outcome = completed                   ? upstream::Outcome::kOk
                              : (!up_ || !up_->connected) ? upstream::Outcome::kConnectFailed
                                                          : upstream::Outcome::kFailed;
  uint64_t now = w_.loop().now_ms();
  lb_->finished(*up_conf_, node, outcome, now - lb_start_ms_, now);
}

}  // namespace sluice::server
