// Builds the programs module_bench.cpp compares: the same one-delegate graph
// x [1, <=64] float32 -> y, once as an etrt delegate over a GPU-free NvInfer engine
// that only copies (identity), once for a delegate that does nothing at all.
// Two profiles: [1,1] (decode) and [1,2..64] (prefill). Also: the etrt program
// with unplanned IO (the runner passes its own 256-byte-aligned buffers, which
// TensorRT takes in place), and the engine's bytes alone, for timing the
// engine's own enqueue.
//
// usage: etrt_make_bench_pte <output-dir>

#include <cstdio>
#include <string>

#include "etrt_gpufree/builder.h"
#include "blobkit/blobkit.h"

namespace {

std::string spec(const char* backend, const char* blob, bool planned = true) {
  const std::string planning = planned ? "" : ", \"planned\": false";
  return std::string("{\"name\": \"forward\", \"values\": [") +
         "{\"name\": \"x\", \"dtype\": \"float32\", \"sizes\": [1, 64], \"dynamic\": true" + planning + "}, " +
         "{\"name\": \"y\", \"dtype\": \"float32\", \"sizes\": [1, 64], \"dynamic\": true" + planning + "}], " +
         "\"inputs\": [\"x\"], \"outputs\": [\"y\"], \"delegate_calls\": [{\"backend_id\": \"" + backend +
         "\", \"blob_file\": \"" + blob + "\", \"args\": [\"x\", \"y\"]}]}";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  using etrt::gpufree::make_shape;
  etrt::gpufree::Builder b("bench_identity");
  b.add_input("x", etrt::gpufree::DataType::kFloat32, make_shape({1, -1}))
      .add_output("y", etrt::gpufree::DataType::kFloat32, make_shape({1, -1}));
  const int32_t decode = b.add_profile();
  const int32_t prefill = b.add_profile();
  b.set_profile_shape(decode, "x", make_shape({1, 1}), make_shape({1, 1}), make_shape({1, 1}))
      .set_profile_shape(prefill, "x", make_shape({1, 2}), make_shape({1, 32}), make_shape({1, 64}))
      .identity("x", "y")
      .set_tracing(false);
  std::string error;
  std::vector<uint8_t> engine;
  const auto blob = !b.build(&engine, &error) ? engine : etrt::blobkit::blob_for_engine(engine, false, &error);
  const bool ok = !blob.empty() && etrt::blobkit::write_file(dir + "/etrt.blob", blob, &error) &&
                  etrt::blobkit::write_text(dir + "/etrt.json", spec("TensorRTBackend", "etrt.blob"), &error) &&
                  etrt::blobkit::write_text(dir + "/etrt_unplanned.json",
                                           spec("TensorRTBackend", "etrt.blob", /*planned=*/false), &error) &&
                  etrt::blobkit::write_file(dir + "/bench_identity.engine", engine, &error) &&
                  etrt::blobkit::write_text(dir + "/noop.blob", "noop", &error) &&
                  etrt::blobkit::write_text(dir + "/noop.json", spec("EtrtBenchNoop", "noop.blob"), &error) &&
                  etrt::blobkit::write_text(dir + "/noop_unplanned.json",
                                           spec("EtrtBenchNoop", "noop.blob", /*planned=*/false), &error);
  if (!ok) std::fprintf(stderr, "etrt_make_bench_pte: %s\n", error.c_str());
  return ok ? 0 : 1;
}
