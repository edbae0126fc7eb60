#pragma once

#include <eventforge/eventforge.hpp>

namespace host {

/// The host's own consumer: one loyalty point per whole currency unit of
/// an order, credited once per OrderCreated to the customer's row in its
/// own table, loyalty_points. Cancellations keep the points (the consumer
/// does not handle OrderCancelled; EventForge records those as ignored).
ef::consumer_ptr make_loyalty_consumer();

} // namespace host
