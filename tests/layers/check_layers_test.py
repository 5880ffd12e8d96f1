#!/usr/bin/env python3
"""The layer check's own tests (CTest etrt_check_layers_selftest): tools/check_layers.py with the project's rules
(tools/layers.txt) over small trees made here, each with one include that is, or is not, allowed."""

import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKER = ROOT / "tools" / "check_layers.py"
RULES = ROOT / "tools" / "layers.txt"

# A wrong-way include and the `known` line that lets it pass while it is being fixed (the project's rules list
# none today).
KNOWN_FILES = {
    "src/api/hook.h": "",
    "src/backend/tensorrt_backend.cpp": '#include "api/hook.h"\n',
}
KNOWN_LINE = "known src/backend/tensorrt_backend.cpp api/hook.h\n"


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
            "src/backend/delegate.h": '#include "profile/profile_table.h"\n',
            "src/profile/profile_table.h": '#include "common/shape.h"\n#include <vector>\n',
            "src/common/shape.h": "",
        })
        self.assertEqual(rc, 0, out)

    def test_an_upward_include_fails_naming_file_line_layers_and_header(self):
        rc, out = self.run_on({
            "src/profile/selection.cpp": '// policy\n#include <vector>\n  #  include "backend/delegate.h"\n',
            "src/backend/delegate.h": "",
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("src/profile/selection.cpp:3: profile may not include backend (backend/delegate.h)", out)

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
        rc, out = self.run_on({**files, "src/backend/device.h": "#include <NvInferRuntime.h>\n"})
        self.assertIn("src/backend/device.h:1: backend may not include nvinfer (NvInferRuntime.h)", out)

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
            self.assertIn("note: known wrong-way include, still to fix: src/backend/tensorrt_backend.cpp:1: "
                          "backend may not include api (api/hook.h)", out)
            rc, out = self.run_on({**KNOWN_FILES, "src/backend/tensorrt_backend.cpp": ""}, rules=rules)
            self.assertEqual(rc, 1, out)
            self.assertIn("known wrong-way include src/backend/tensorrt_backend.cpp -> api/hook.h is gone", out)

    def test_a_malformed_rules_file_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            rules = pathlib.Path(tmp) / "layers.txt"
            rules.write_text("layer a src/a\nallow a b\n")
            rc, out = self.run_on({}, rules=rules)
        self.assertEqual(rc, 2, out)
        self.assertIn("unknown layer 'b'", out)


if __name__ == "__main__":
    unittest.main()
