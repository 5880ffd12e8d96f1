// Compiled by etrt_layer_view_serves_the_layer_its_own_headers against the policy layer's view of src/: its own
// headers and those of the layers it may include are found.
#include "profile/profile_table.h"
#include "profile/selection.h"
