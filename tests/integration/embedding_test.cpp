// EventForge embedded in another CAF application: the host's own actors talk
// to the tree through the handle ef::start() returns.

#include "messages/api_error.hpp"
#include "messages/order_messages.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

using namespace ef;
using namespace std::chrono_literals;

namespace {

using place_atom = caf::atom_constant<caf::atom("place")>;

/// A host actor: places an order with EventForge, then reads it back, and
/// reports (order_id, status) to whoever asked.
caf::behavior shop_clerk(caf::event_based_actor* self, caf::actor eventforge) {
  return {
    [=](place_atom, std::string customer) {
      auto rp = self->make_response_promise();
      create_order cmd{customer, {{"book", 2, 1250}}, "", "", ""};
      self->request(eventforge, 10s, std::move(cmd))
        .then(
          [=](order_accepted& ok) mutable {
            self->request(eventforge, 10s, get_order{ok.order_id})
              .then(
                [=](order_view& v) mutable { rp.deliver(ok.order_id, v.json); },
                [=](caf::error& e) mutable { rp.deliver(e); });
          },
          [=](caf::error& e) mutable { rp.deliver(e); });
      return rp;
    },
  };
}

} // namespace

TEST_CASE("host_application_actors_place_and_read_orders_through_the_"
          "embedded_tree") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  caf::actor_system_config host_cfg;
  ef::configure_actor_system(host_cfg);
  caf::actor_system host{host_cfg};
  auto root = ef::start(host, cfg, {db.dsn(), broker.bootstrap_servers()});
  auto clerk = host.spawn(shop_clerk, root);
  std::string order_id, view;
  {
    caf::scoped_actor self{host};
    self->request(clerk, 20s, place_atom::value, std::string("host-customer"))
      .receive(
        [&](std::string& id, std::string& json) {
          order_id = id;
          view = json;
        },
        [&](caf::error& e) { FAIL("host actor got " << to_string(e)); });
    // Invalid commands from a host actor are refused like bad HTTP input.
    self->request(root, 10s, create_order{"c", {}, "", "", ""})
      .receive([&](order_accepted&) { FAIL("empty order accepted"); },
               [&](caf::error& e) {
                 CHECK(e.category() == api_error_category());
                 CHECK(e.code() == static_cast<uint8_t>(api_errc::invalid));
               });
  }
  REQUIRE_FALSE(order_id.empty());
  CHECK(test::json_field(view, "customer_id") == "host-customer");
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM business_effects WHERE "
                          "order_id = '" +
                          order_id + "'") == 2;
  }));
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 1);
  CHECK(db.scalar<std::int64_t>("SELECT balance_cents FROM accounts WHERE "
                                "customer_id = 'host-customer'") == -2500);
  caf::anon_send_exit(clerk, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(root, caf::exit_reason::user_shutdown);
  host.await_all_actors_done();
}
