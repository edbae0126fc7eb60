#pragma once

#include <eventforge/consumers/consumer.hpp>

namespace ef {

/// fulfillment: moves orders through their statuses.
///   OrderCreated:   created -> processed ("fulfilled"); if the order is
///                   already cancelled, nothing moves ("fulfill_skipped").
///   OrderCancelled: any status -> cancelled ("cancelled").
consumer_ptr make_fulfillment_consumer();

} // namespace ef
