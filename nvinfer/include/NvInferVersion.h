#pragma once
// Version of the GPU-free NvInfer implementation's API surface. It declares
// the subset of TensorRT's runtime API that etrt uses, source-compatible with
// TensorRT 10.x and 11.x for those calls (see ../README.md); the numbers say
// which TensorRT release its behaviour follows.

#define NV_TENSORRT_MAJOR 10
#define NV_TENSORRT_MINOR 16
#define NV_TENSORRT_PATCH 0
#define NV_TENSORRT_BUILD 0

#define NV_TENSORRT_VERSION ((NV_TENSORRT_MAJOR * 10000) + (NV_TENSORRT_MINOR * 100) + NV_TENSORRT_PATCH)

// Set only by this implementation: code that must know (etrt's adapter, to ask
// whether an engine runs on the host) tests for it. NVIDIA's headers never
// define it.
#define ETRT_NVINFER_GPU_FREE 1
