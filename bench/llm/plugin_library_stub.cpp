// Stands in for NVIDIA's libnvinfer_plugin.so.8 on the H200 machine only (docs/real-llm.md), never installed. NVIDIA's
// ONNX parser (libnvonnxparser.so.8) links that library for one symbol, initLibNvInferPlugins, which registers
// TensorRT's plugins; the real library needs cuBLAS and cuDNN 8, which the machine lacks. The benchmark's model uses
// no plugin, so this library registers none; a model that needs one fails to parse, naming the plugin.

extern "C" bool initLibNvInferPlugins(void* /*logger*/, const char* /*lib_namespace*/) { return true; }
