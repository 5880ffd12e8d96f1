#pragma once
// The GPU-free NvInfer implementation's top-level header. It implements the
// runtime only (no network builder): engines are made with etrt_gpufree/builder.h.
#include "NvInferRuntime.h"
