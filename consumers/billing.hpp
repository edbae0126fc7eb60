#pragma once

#include <eventforge/consumers/consumer.hpp>

namespace ef {

/// billing: keeps customer accounts (table `accounts`).
///   OrderCreated:   debit the customer's account by the total ("debit"),
///                   unless this consumer already applied the order's cancel
///                   ("debit_skipped", amount 0).
///   OrderCancelled: refund the total if this consumer debited it ("refund"),
///                   else nothing moves ("refund_skipped", amount 0): a
///                   cancel seen before its order never creates money.
consumer_ptr make_billing_consumer();

namespace sql {
/// $1 customers, $2 balance changes: billing's one statement per
/// transaction, exposed so that `eventforge bench` runs it under pgbench.
extern const char* const adjust_balances;
} // namespace sql

} // namespace ef
