// Telemetry over prometheus-cpp: a host's registry carries EventForge's
// series beside its own, and a name clash is refused by name.

#include <eventforge/actors/telemetry.hpp>

#include <catch2/catch.hpp>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

using namespace ef;

TEST_CASE("a_host_registry_exports_eventforge_series_beside_its_own") {
  auto registry = std::make_shared<prometheus::Registry>();
  auto& host_orders = prometheus::BuildCounter()
                        .Name("host_orders_placed_total")
                        .Help("Orders the host placed.")
                        .Register(*registry)
                        .Add({});
  telemetry metrics(registry);
  host_orders.Increment(3);
  metrics.add("api_orders_total", {}, 2);
  metrics.add("actor_restarts_total",
              {{"reason", "injected"}, {"kind", "relay"}});
  metrics.set("consumer_lag", {{"consumer", "billing"}, {"partition", "0"}}, 7);
  metrics.observe("consumer_batch_size", {{"consumer", "billing"}}, 3);

  auto text = prometheus::TextSerializer{}.Serialize(registry->Collect());
  // /metrics is the registry's exposition, then the process's own figures.
  auto rendered = metrics.render_prometheus();
  CHECK(rendered.rfind(text, 0) == 0);
  CHECK(rendered.find("\nprocess_cpu_seconds_total ", text.size() - 1) !=
        std::string::npos);
  CHECK(text.find("\nhost_orders_placed_total 3\n") != std::string::npos);
  CHECK(text.find("\napi_orders_total 2\n") != std::string::npos);
  // Labels come out sorted by name, whatever order the caller gave.
  CHECK(text.find("\nactor_restarts_total{kind=\"relay\",reason=\"injected\"} "
                  "1\n") != std::string::npos);
  CHECK(text.find("\nconsumer_lag{consumer=\"billing\",partition=\"0\"} 7\n") !=
        std::string::npos);
  CHECK(text.find("\nconsumer_batch_size_bucket{consumer=\"billing\",le=\"5\"} "
                  "1\n") != std::string::npos);
  // Reads by key keep the caller's label order.
  auto counters = metrics.snapshot();
  CHECK(counters.at(
          R"(actor_restarts_total{reason="injected",kind="relay"})") == 1);
  CHECK(metrics.sum("api_orders_total") == 2);
}

TEST_CASE("a_host_that_exports_process_metrics_itself_gets_them_once") {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
    .Name("process_cpu_seconds_total")
    .Help("the host's own")
    .Register(*registry)
    .Add({})
    .Increment(5);
  telemetry metrics(registry);
  auto text = metrics.render_prometheus();
  CHECK(text.find("the host's own") != std::string::npos);
  auto first = text.find("# TYPE process_cpu_seconds_total");
  REQUIRE(first != std::string::npos);
  CHECK(text.find("# TYPE process_cpu_seconds_total", first + 1) ==
        std::string::npos);
  CHECK(text.find("process_resident_memory_bytes") == std::string::npos);
}

TEST_CASE("a_registry_holding_an_eventforge_name_with_another_type_is_"
          "refused") {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge()
    .Name("api_orders_total")
    .Help("not ours")
    .Register(*registry);
  try {
    telemetry metrics(registry);
    FAIL("a clashing registry was accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("already holds one of EventForge's "
                                     "metric names with another type") !=
          std::string::npos);
  }
}
