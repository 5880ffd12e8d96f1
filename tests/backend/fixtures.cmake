# The programs tests/backend/make_fixtures.cpp writes, one list per mode: each name is a packer spec
# <dir>/<name>.json the generator writes and CMake packs into <dir>/<name>.pte (etrt_add_generated_ptes).
#
#   ETRT_FIXTURE_NAMES      etrt_make_fixtures <dir>         tests/backend's fixtures
#   ETRT_GPU_FIXTURE_NAMES  etrt_make_fixtures --cuda <dir>  the GPU suite's (tests/gpu)
#
# tests/backend/CMakeLists.txt and tests/gpu/CMakeLists.txt take NAMES from here and pass the same list to the
# generator (--programs <name>,<name>...), which fails the build unless it wrote exactly the listed programs:
# adding, renaming or removing a fixture means changing make_fixtures.cpp and this file together.

# Both modes (shared_fixtures(), refusal_fixtures() and scratch_fixtures() in make_fixtures.cpp).
set(_etrt_shared_fixture_names llm overlap single_dynamic big_output small_capacity single_static mixed foreign
    shape_tensor truncated tensorrt_plan signature_mismatch
    # scratch_fixtures()
    scratch_chain scratch_big scratch_methods)

set(ETRT_FIXTURE_NAMES ${_etrt_shared_fixture_names}
    # adapter_fixtures()
    unplanned_io host_input host_output data_dependent
    # contract_fixtures()
    kv_write_back kv_owned kv_unplanned_write_back kv_unplanned_owned kv_unlisted kv_interleaved alias_user alias_unknown_kind alias_kv_disagrees
    alias_user_shapes ws_auto ws_spec ws_spec_above ws_spec_malformed ws_spec_negative ws_spec_twice
    ws_spec_signature_mismatch ws_resident scalar_output scalar_output_unplanned no_bindings control_names
    # state_fixtures()
    state_kv state_two_methods state_kv_no_table state_missing_initial state_dynamic state_acc scratch_chain_no_table
    llm_trt86)

set(ETRT_GPU_FIXTURE_NAMES ${_etrt_shared_fixture_names}
    # cuda_fixtures()
    llm_unplanned llm_device1 llm_device9 ws_cuda bench_cuda bench_cuda_unplanned bench_cuda_unplanned_methods bench_host bench_noop bench_graph
    scratch_n1 scratch_n8 scratch_n32 bench_graph_grow)
