// A CAF application that embeds EventForge: its own actor places orders
// through EventForge's typed API, its own consumer (loyalty points, with
// its own table) runs beside the built-in ones, and one INI file configures
// CAF, EventForge and the host. Built against the installed package:
//   find_package(eventforge CONFIG REQUIRED)
//
//   host_app --config-file=host_app.ini [--section.key=value ...]
//
// Exits 0 once every order's effects are in the database exactly once:
// the loyalty table matches the orders, and EventForge's verifier (which
// checks every enabled consumer, the host's included) finds nothing.

#include "loyalty.hpp"

#include <eventforge/eventforge.hpp>

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include <chrono>
#include <iostream>
#include <thread>

using namespace std::chrono_literals;

namespace {

using place_atom = caf::atom_constant<caf::atom("place")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;

// [doc:host-config]
/// The host's configuration: CAF's own sections, EventForge's (declared by
/// one call) and the host's [host] section, all from one INI file.
class host_config : public caf::actor_system_config {
public:
  host_config() {
    ef::config::declare_options(custom_options_);
    ef::configure_actor_system(*this);
    opt_group{custom_options_, "host"}
      .add(orders, "orders", "orders the clerk places")
      .add(customers, "customers", "customers the orders are spread over")
      .add(cancel_every, "cancel-every", "cancel every n-th order (0: none)")
      .add(timeout_s, "timeout-s", "how long to wait for the effects");
  }

  int orders = 40;
  int customers = 5;
  int cancel_every = 5;
  int timeout_s = 120;
};
// [/doc:host-config]

/// The host's actor: places and cancels orders through EventForge's typed
/// interface. A message the interface does not declare would not compile.
caf::behavior clerk(caf::event_based_actor* self, ef::eventforge_actor ef) {
  return {
    [=](place_atom, std::string customer, std::int64_t cents) {
      auto rp = self->make_response_promise<std::string>();
      // Two lines: the loyalty consumer counts units as well as cents.
      ef::create_order cmd{
        std::move(customer),
        {{"gift-card", 1, cents}, {"sticker", 1 + cents % 3, 50}},
        "",
        "",
        ""};
      self->request(ef, 10s, std::move(cmd))
        .then([=](ef::order_accepted& ok) mutable { rp.deliver(ok.order_id); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
    [=](cancel_atom, std::string order_id) {
      auto rp = self->make_response_promise<bool>();
      self->request(ef, 10s, ef::cancel_order{std::move(order_id), ""})
        .then([=](ef::cancel_accepted&) mutable { rp.deliver(true); },
              [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
      return rp;
    },
  };
}

template <class T>
T scalar(const std::string& dsn, const std::string& sql) {
  pqxx::connection c(dsn);
  pqxx::nontransaction t(c);
  return t.exec1(sql)[0].as<T>();
}

/// What the clerk placed and cancelled, asked one order at a time.
struct placed_orders {
  int placed = 0;
  int cancelled = 0;
};

placed_orders place_orders(caf::actor_system& sys, const caf::actor& desk,
                           const host_config& cfg) {
  placed_orders n;
  caf::scoped_actor self{sys};
  for (int i = 0; i < cfg.orders; ++i) {
    auto customer = "customer-" + std::to_string(i % cfg.customers);
    self
      ->request(desk, 30s, place_atom::value, customer,
                std::int64_t{999 + 137 * i})
      .receive(
        [&](std::string& order_id) {
          ++n.placed;
          if (cfg.cancel_every > 0 && i % cfg.cancel_every == 0)
            self->request(desk, 30s, cancel_atom::value, order_id)
              .receive([&](bool) { ++n.cancelled; },
                       [&](caf::error& e) {
                         std::cerr << "cancel: " << sys.render(e) << "\n";
                       });
        },
        [&](caf::error& e) {
          std::cerr << "place: " << sys.render(e) << "\n";
        });
  }
  return n;
}

/// The host's own check of its consumer's effects, from the database.
struct loyalty_check {
  long wrong_balances = 0; ///< customers whose points are not their orders'
  long awards = 0;         ///< points_earned effects
  long wrong_units = 0;    ///< orders whose counted units are not their lines'
  long crashes = 0;        ///< crashes injected (chaos in the INI)
};

loyalty_check check_loyalty(const std::string& dsn) {
  loyalty_check c;
  c.wrong_balances = scalar<long>(
    dsn, "SELECT count(*) FROM (SELECT customer_id, sum(total_cents / 100) "
         "AS points FROM orders GROUP BY customer_id) want FULL JOIN "
         "loyalty_points got USING (customer_id) "
         "WHERE got.points IS DISTINCT FROM want.points");
  c.awards = scalar<long>(dsn, "SELECT count(*) FROM business_effects "
                               "WHERE consumer = 'loyalty' AND "
                               "kind = 'points_earned'");
  // The units the consumer counted from the lines it was given, against
  // the lines the API wrote (the host's check may read EventForge's
  // tables; the consumer does not).
  c.wrong_units = scalar<long>(
    dsn, "SELECT count(*) FROM (SELECT order_id, sum(qty) AS units FROM "
         "order_items GROUP BY order_id) want FULL JOIN (SELECT order_id, "
         "quantity AS units FROM business_effects WHERE consumer = 'loyalty' "
         "AND kind = 'points_earned') "
         "got USING (order_id) WHERE got.units IS DISTINCT FROM want.units");
  c.crashes = scalar<long>(dsn, "SELECT count(*) FROM recovery_journal WHERE "
                                "kind = 'crash'");
  return c;
}

} // namespace

// [doc:host-start]
int main(int argc, char** argv) {
  host_config cfg;
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << "host_app: " << caf::to_string(err) << std::endl;
    return 2;
  }
  if (cfg.cli_helptext_printed)
    return 0;
  auto settings = ef::config::read_settings(cfg, cfg.config_file_path);
  if (!settings.ok()) {
    std::cerr << "host_app: " << settings.error << std::endl;
    return 2;
  }
  const auto& s = settings.value;

  auto consumers = std::make_shared<ef::consumer_registry>(
    ef::consumer_registry::with_builtins());
  consumers->add(host::make_loyalty_consumer());

  caf::actor_system sys{cfg};
  // Private PostgreSQL and broker unless the INI names real ones, then the
  // tree; made after the system, so it stops before the system does.
  ef::instance eventforge{sys, s, {consumers, nullptr}};
  const auto& where = eventforge.where();
  auto desk = sys.spawn(clerk, eventforge.root());
  // [/doc:host-start]
  auto [placed, cancelled] = place_orders(sys, desk, cfg);

  // Everything placed so far published, applied and committed: what
  // verify reads no longer moves.
  auto gap =
    ef::await_applied(s, where, std::chrono::seconds(cfg.timeout_s)).gap;

  const auto& dsn = where.database_dsn;
  auto [wrong_balances, awards, wrong_units, crashes] = check_loyalty(dsn);
  auto verdict = ef::app::verify(s, dsn, where.kafka_brokers);

  // Stop EventForge's tree alone; the host's clerk outlives it.
  bool stopped = eventforge.shutdown(30s);
  anon_send_exit(desk, caf::exit_reason::user_shutdown);

  // CAF read [scheduler] from the same file EventForge read its sections
  // from: the system must have the threads it asked for.
  auto threads = sys.scheduler().num_workers();
  auto wanted = caf::get_or(cfg, "scheduler.max-threads", threads);
  std::cout << "host_app: scheduler threads " << threads << " (the INI asks "
            << wanted << "), api workers " << s.api.workers << ", consumers";
  for (auto& c : s.consumer.enabled)
    std::cout << " " << c;
  std::cout << "\nhost_app: placed " << placed << " orders (cancelled "
            << cancelled << "), loyalty awards " << awards
            << ", customers with wrong points " << wrong_balances
            << ", orders with wrong units " << wrong_units
            << ", injected crashes " << crashes << "\n"
            << ef::app::to_text(verdict);
  bool ok = threads == wanted && placed == cfg.orders && gap.empty() &&
            wrong_balances == 0 && wrong_units == 0 && awards == placed &&
            verdict.ok() && stopped;
  if (!gap.empty())
    std::cout << "host_app: not quiescent: " << gap << "\n";
  std::cout << "host_app: " << (ok ? "ok" : "FAILED") << std::endl;
  return ok ? 0 : 1;
}
