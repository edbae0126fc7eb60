// Built by ctest as a file of one layer (tests/CMakeLists.txt: an object
// library that links only that layer, so it sees what the layer's files see
// of the layers below), never linked: the compiler, not only the layer
// check, keeps each layer to the headers the layers below it export. EF_CASE_ok
// must compile; each other case must fail because the header is not on the
// include path at all (tests/CMakeLists.txt matches "No such file"), so the
// test cannot pass on an unrelated error.

#if defined(EF_CASE_ok)
// The actors' view: headers persistence/ and kafka/ export.
#include "kafka/offsets.hpp"
#include "persistence/order_store.hpp"
#elif defined(EF_CASE_private_header)
// The actors' view of a header persistence/ keeps to itself (how an order's
// rows are read back): not exported, so not there.
#include "persistence/order_rows.hpp"
#elif defined(EF_CASE_plug_in_reaching_into_persistence)
// A consumer plug-in sees its transaction and ef::statements, never
// persistence's helpers: consumers/ does not depend on persistence/.
#include "persistence/connection.hpp"
#elif defined(EF_CASE_tree_reaching_for_the_transaction_toolkit)
// persistence/ exports its sessions and transactions only to the applier
// and the bench; the tree goes through the stores.
#include "persistence/connection.hpp"
#elif defined(EF_CASE_lower_layer_reaching_up)
// persistence/ including the tree, spelled with angle brackets.
#include <actors/supervisor.hpp>
#else
#error "define EF_CASE_<name>"
#endif

int ef_layer_includes_case() {
  return 0;
}
