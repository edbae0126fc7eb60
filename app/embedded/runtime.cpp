#include <eventforge/embedded/runtime.hpp>

#include "app/embedded/hosted.hpp"
#include "app/embedded/topics.hpp"

#include "persistence/dsn.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>

#include <stdexcept>

namespace ef::app {

std::vector<kafka::embedded_broker::topic_spec>
broker_topics(const config::settings& cfg) {
  return {{cfg.kafka.topic, cfg.kafka.partitions},
          {config::dlq_topic_of(cfg), cfg.kafka.partitions}};
}

runtime::runtime(const config::settings& given)
    : hosted_(std::make_unique<hosted>()),
      cfg_(config::with_referenced_files(given)) {
  const auto& cfg = cfg_;
  auto& pg = hosted_->pg;
  auto& broker = hosted_->broker;
  // Checked before a private cluster or broker starts for them (a host's
  // settings built in code get the CLI's checks, in its words).
  if (auto err = config::check_settings(cfg))
    throw std::invalid_argument(*err);
  if (cfg.database.url.empty()) {
    persistence::embedded_postgres::options opts;
    opts.data_dir = cfg.database.data_dir;
    opts.bin_dir = cfg.database.pg_bin_dir;
    opts.port = cfg.database.port;
    opts.durable = cfg.database.durable;
    pg = std::make_unique<persistence::embedded_postgres>(opts);
    endpoints_.database_dsn = pg->dsn();
    ef::log::info("started private PostgreSQL in {} at {}", pg->data_dir(),
                  pg->dsn());
    if (!cfg.database.durable)
      ef::log::warn("database.durable=false: commits are not flushed to disk; "
                    "an operating-system crash can lose accepted orders");
  } else {
    endpoints_.database_dsn = cfg.database.url;
    ef::log::info("using PostgreSQL at {}",
                  persistence::redact_password(cfg.database.url));
  }
  if (cfg.kafka.brokers.empty()) {
    broker = std::make_unique<kafka::embedded_broker>(
      cfg.kafka.embedded_brokers, broker_topics(cfg));
    endpoints_.kafka_brokers = broker->bootstrap_servers();
    endpoints_.kafka_log_bytes =
      kafka::embedded_broker::log_bytes_per_partition;
    ef::log::info("started in-process Kafka broker at {}",
                  endpoints_.kafka_brokers);
  } else {
    endpoints_.kafka_brokers = cfg.kafka.brokers;
  }
}

bool runtime::hosts_broker() const {
  return hosted_->broker != nullptr;
}

bool runtime::hosts_database() const {
  return hosted_->pg != nullptr;
}

void runtime::restart_broker() {
  auto& broker = hosted_->broker;
  if (!broker)
    throw std::runtime_error("the broker is not hosted by this process");
  broker.reset();
  broker = std::make_unique<kafka::embedded_broker>(cfg_.kafka.embedded_brokers,
                                                    broker_topics(cfg_));
  endpoints_.kafka_brokers = broker->bootstrap_servers();
  ef::log::info("restarted the in-process Kafka broker (empty) at {}",
                endpoints_.kafka_brokers);
}

runtime::~runtime() {
  auto& pg = hosted_->pg;
  auto& broker = hosted_->broker;
  // The wrong order, said before it costs a hang: the tree's actors keep
  // using the services, and ~actor_system waits for them.
  if ((broker || pg) && running_trees() > 0)
    ef::log::error(
      "stopping the private {} while {} EventForge tree(s) still run: stop "
      "the tree first (ef::stop before the runtime and the actor system go, "
      "or let ef::instance own both); the actor system's destructor waits "
      "for a running tree forever",
      pg && broker ? "PostgreSQL and broker"
      : pg         ? "PostgreSQL"
                   : "broker",
      running_trees());
  broker.reset();
  pg.reset();
}

} // namespace ef::app
