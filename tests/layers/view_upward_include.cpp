// Compiled by etrt_layer_view_refuses_an_upward_include against the policy layer's view of src/: the glue is out of
// its reach, so this include is not found.
#include "backend/glue/delegate.h"
