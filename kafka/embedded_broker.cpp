#include "kafka/embedded_broker.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <stdexcept>

namespace ef::kafka {

struct embedded_broker::impl {
  rd_kafka_t* rk = nullptr;
  rd_kafka_mock_cluster_t* mc = nullptr;
  int brokers = 0;
};

embedded_broker::embedded_broker(int brokers,
                                 const std::vector<topic_spec>& topics)
    : impl_(std::make_unique<impl>()) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log.connection.close", "false", err, sizeof(err));
  // The host instance never connects anywhere; silence its notice about
  // having no bootstrap servers.
  rd_kafka_conf_set(conf, "log_level", "4", err, sizeof(err));
  // The mock cluster needs a host client instance to run on.
  impl_->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (impl_->rk == nullptr)
    throw std::runtime_error(std::string("embedded broker: ") + err);
  impl_->mc = rd_kafka_mock_cluster_new(impl_->rk, brokers);
  if (impl_->mc == nullptr) {
    rd_kafka_destroy(impl_->rk);
    throw std::runtime_error("embedded broker: cannot create mock cluster");
  }
  impl_->brokers = brokers;
  int replication = brokers < 3 ? brokers : 3;
  for (auto& t : topics) {
    auto rc = rd_kafka_mock_topic_create(impl_->mc, t.name.c_str(),
                                         t.partitions, replication);
    if (rc != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // A destructor does not run for a constructor that throws: stop the
      // cluster's threads here, or they outlive the failure.
      rd_kafka_mock_cluster_destroy(impl_->mc);
      rd_kafka_destroy(impl_->rk);
      throw std::runtime_error("embedded broker: cannot create topic " +
                               t.name + ": " + rd_kafka_err2str(rc));
    }
  }
}

embedded_broker::~embedded_broker() {
  if (impl_->mc)
    rd_kafka_mock_cluster_destroy(impl_->mc);
  if (impl_->rk)
    rd_kafka_destroy(impl_->rk);
}

std::string embedded_broker::bootstrap_servers() const {
  return rd_kafka_mock_cluster_bootstraps(impl_->mc);
}

void embedded_broker::set_down(bool down) {
  for (int id = 1; id <= impl_->brokers; ++id) {
    if (down)
      rd_kafka_mock_broker_set_down(impl_->mc, id);
    else
      rd_kafka_mock_broker_set_up(impl_->mc, id);
  }
}

rd_kafka_mock_cluster_s* embedded_broker::mock_cluster() const {
  return impl_->mc;
}

} // namespace ef::kafka
