#!/usr/bin/env python3
"""The layer check's own tests (CTest etrt_check_layers_selftest): tools/check_layers.py with the project's rules
(tools/layers.txt) over small trees made here, each with one include, or one call between object files, that is, or
is not, allowed.

    check_layers_test.py [--cxx COMPILER] [--nm NM] [unittest arguments]

The link-level tests compile their small trees with COMPILER (default: c++) and read them with NM (default: nm)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOLS = {"cxx": os.environ.get("CXX", "c++"), "nm": "nm"}

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKER = ROOT / "tools" / "check_layers.py"
RULES = ROOT / "tools" / "layers.txt"

# A wrong-way include and the `known` line that lets it pass while it is being fixed (the project's rules list
# none today).
KNOWN_FILES = {
    "src/api/hook.h": "",
    "src/backend/glue/tensorrt_backend.cpp": '#include "api/hook.h"\n',
}
KNOWN_LINE = "known src/backend/glue/tensorrt_backend.cpp api/hook.h\n"


class CheckLayersTest(unittest.TestCase):
    def run_on(self, files, rules=RULES):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            done = subprocess.run([sys.executable, str(CHECKER), "--root", str(root), "--rules", str(rules)],
                                  capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr

    def test_a_downward_include_passes(self):
        rc, out = self.run_on({
            "src/backend/glue/delegate.h": '#include "profile/profile_table.h"\n',
            "src/profile/profile_table.h": '#include "common/shape.h"\n#include <vector>\n',
            "src/common/shape.h": "",
        })
        self.assertEqual(rc, 0, out)

    def test_an_upward_include_fails_naming_file_line_layers_and_header(self):
        rc, out = self.run_on({
            "src/profile/selection.cpp": '// policy\n#include <vector>\n  #  include "backend/glue/delegate.h"\n',
            "src/backend/glue/delegate.h": "",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("src/profile/selection.cpp:3: profile may not include backend (backend/glue/delegate.h)", out)

    def test_an_include_beside_the_file_is_resolved_there(self):
        rc, out = self.run_on({
            "nvinfer/include/NvInfer.h": '#include "NvInferRuntime.h"\n',
            "nvinfer/include/NvInferRuntime.h": '#include "types.h"\n',
            "nvinfer/src/types.h": "",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("nvinfer/include/NvInferRuntime.h:1: nvinfer may not include gpufree-src (types.h)", out)

    def test_nvinfer_only_in_the_adapters_cpp(self):
        files = {"nvinfer/include/NvInferRuntime.h": "", "src/engine/tensorrt/tensorrt_engine.cpp":
                 "#include <NvInferRuntime.h>\n#include <cuda_runtime_api.h>\n"}
        self.assertEqual(self.run_on(files)[0], 0)
        rc, out = self.run_on({**files, "src/engine/engine.h": "#include <NvInferRuntime.h>\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("src/engine/engine.h:1: engine may not include nvinfer (NvInferRuntime.h)", out)
        rc, out = self.run_on({**files, "src/backend/device/device.h": "#include <NvInferRuntime.h>\n"})
        self.assertIn("src/backend/device/device.h:1: backend-device may not include nvinfer (NvInferRuntime.h)", out)

    def test_public_headers_stand_alone(self):
        rc, out = self.run_on({"include/etrt/options.h": '#include "common/shape.h"\n', "src/common/shape.h": ""})
        self.assertEqual(rc, 1, out)
        self.assertIn("include/etrt/options.h:1: public may not include common (common/shape.h)", out)

    def test_a_quoted_header_outside_the_tree_fails(self):
        rc, out = self.run_on({"src/blob/blob.cpp": '#include "nlohmann/json.hpp"\n'})
        self.assertEqual(rc, 1, out)
        self.assertIn('src/blob/blob.cpp:1: blob includes "nlohmann/json.hpp", which is in no layer', out)

    def test_a_file_in_no_layer_fails(self):
        rc, out = self.run_on({"src/newdir/thing.h": ""})
        self.assertEqual(rc, 1, out)
        self.assertIn("src/newdir/thing.h:1: in no layer", out)

    def test_a_known_wrong_way_include_is_reported_and_a_fixed_one_must_leave_the_list(self):
        with tempfile.TemporaryDirectory() as tmp:
            rules = pathlib.Path(tmp) / "layers.txt"
            rules.write_text(RULES.read_text() + KNOWN_LINE)
            rc, out = self.run_on(KNOWN_FILES)
            self.assertEqual(rc, 1, out)  # the project's rules: a wrong-way include
            rc, out = self.run_on(KNOWN_FILES, rules=rules)
            self.assertEqual(rc, 0, out)
            self.assertIn("note: known wrong-way include, still to fix: src/backend/glue/tensorrt_backend.cpp:1: "
                          "backend may not include api (api/hook.h)", out)
            rc, out = self.run_on({**KNOWN_FILES, "src/backend/glue/tensorrt_backend.cpp": ""}, rules=rules)
            self.assertEqual(rc, 1, out)
            self.assertIn("known wrong-way include src/backend/glue/tensorrt_backend.cpp -> api/hook.h is gone", out)

    def link_check(self, sources, rules=RULES, library=None):
        """Compiles `sources` (path -> C++ text) into objects, writes their compile_commands.json and runs the checker
        with --build over them -- and, with `library` (some of the sources), links those into a shared library that
        the checker gets as a production library (--library); returns (exit status, output)."""
        if shutil.which(TOOLS["cxx"]) is None or shutil.which(TOOLS["nm"]) is None:
            self.skipTest(f"needs {TOOLS['cxx']} and {TOOLS['nm']}")
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp) / "tree"
            build = pathlib.Path(tmp) / "build"
            entries = []
            for rel, text in sources.items():
                source = root / rel
                source.parent.mkdir(parents=True, exist_ok=True)
                source.write_text(text)
                output = f"objects/{rel}.o"
                (build / output).parent.mkdir(parents=True, exist_ok=True)
                command = [TOOLS["cxx"], "-fPIC", "-c", str(source), "-o", output]
                subprocess.run(command, cwd=build, check=True)
                entries.append({"directory": str(build), "command": " ".join(command), "file": str(source),
                                "output": output})
            (build / "compile_commands.json").write_text(json.dumps(entries))
            extra = []
            if library is not None:
                subprocess.run([TOOLS["cxx"], "-shared", "-o", "libproduction.so"] +
                               [f"objects/{rel}.o" for rel in library], cwd=build, check=True)
                extra = ["--library", str(build / "libproduction.so")]
            done = subprocess.run([sys.executable, str(CHECKER), "--root", str(root), "--rules", str(rules),
                                   "--build", str(build), "--nm", TOOLS["nm"]] + extra, capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr

    def test_a_call_downward_passes_at_link_level(self):
        rc, out = self.link_check({
            "src/profile/selection.cpp": "int choose() { return 1; }\n",
            "src/backend/delegate_executor.cpp": "int choose();\nint execute() { return choose(); }\n",
        })
        self.assertEqual(rc, 0, out)

    def test_a_call_upward_fails_at_link_level_naming_file_layers_and_symbol(self):
        # Declared where the backend may look (no include shows anything wrong), defined in the layer above it.
        rc, out = self.link_check({
            "src/api/c_api.cpp": "namespace etrt::backend { void apply_defaults(int*) {} }\n",
            "src/backend/glue/load_options.cpp":
                "namespace etrt::backend { void apply_defaults(int*); void read() { apply_defaults(nullptr); } }\n",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("src/backend/glue/load_options.cpp: backend uses etrt::backend::apply_defaults(int*), defined only "
                      "in api (link level)", out)

    def test_a_library_behind_another_layers_headers_counts_as_that_layer(self):
        # The adapter calls the GPU-free NvInfer's C entry point, which NvInferRuntime.h declares.
        files = {
            "nvinfer/src/runtime.cpp": 'extern "C" void* etrt_gpufree_createInferRuntime() { return nullptr; }\n',
            "src/engine/tensorrt/tensorrt_engine.cpp":
                'extern "C" void* etrt_gpufree_createInferRuntime();\nvoid* load() '
                "{ return etrt_gpufree_createInferRuntime(); }\n",
        }
        rc, out = self.link_check(files)
        self.assertEqual(rc, 0, out)
        # Only the adapter's sources may include NvInfer, so only they may call it.
        rc, out = self.link_check({**files, "src/engine/engine.cpp":
                                   'extern "C" void* etrt_gpufree_createInferRuntime();\nvoid* other() '
                                   "{ return etrt_gpufree_createInferRuntime(); }\n"})
        self.assertEqual(rc, 1, out)
        self.assertIn("src/engine/engine.cpp: engine uses etrt_gpufree_createInferRuntime, defined only in "
                      "gpufree-src (link level)", out)

    def test_a_production_library_may_export_no_tool_only_symbol(self):
        # The tools' C ABI is their own library's; libetrt, built from the production layers alone, exports none of it.
        sources = {
            "src/tools/tools_c_api.cpp": 'extern "C" int etrt_blob_describe() { return 1; }\n',
            "src/api/c_api.cpp": 'extern "C" int etrt_abi_version() { return 6; }\n',
        }
        rc, out = self.link_check(sources, library=["src/api/c_api.cpp"])
        self.assertEqual(rc, 0, out)
        self.assertIn("no tool-only symbol exported by", out)
        rc, out = self.link_check(sources, library=["src/api/c_api.cpp", "src/tools/tools_c_api.cpp"])
        self.assertEqual(rc, 1, out)
        self.assertIn("libproduction.so: exports etrt_blob_describe, tool-only code (tools: src/tools/tools_c_api.cpp)",
                      out)

    def test_a_malformed_rules_file_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            rules = pathlib.Path(tmp) / "layers.txt"
            rules.write_text("layer a src/a\nallow a b\n")
            rc, out = self.run_on({}, rules=rules)
        self.assertEqual(rc, 2, out)
        self.assertIn("unknown layer 'b'", out)


if __name__ == "__main__":
    argv = sys.argv[:1]
    args = iter(sys.argv[1:])
    for arg in args:
        if arg in ("--cxx", "--nm"):
            TOOLS[arg[2:]] = next(args)
        else:
            argv.append(arg)
    unittest.main(argv=argv)
