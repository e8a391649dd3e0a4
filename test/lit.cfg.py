# -*- Python -*-
# lit configuration for the DistOpt regression tests.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "DistOpt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dist_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "CMakeLists.txt",
                   "unit", "Inputs", "fixtures", "sweep", "numerics",
                   "regress", "seeds"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%dist_src_root", config.dist_src_root))
config.substitutions.append(("%dist_obj_root", config.dist_obj_root))
config.substitutions.append(("%fixtures",
                             os.path.join(config.dist_src_root, "test", "fixtures")))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     "ASAN_OPTIONS", "UBSAN_OPTIONS"])
llvm_config.use_default_substitutions()

tool_dirs = [config.dist_tools_dir, config.llvm_tools_dir]
tools = ["dist-opt", "dist-modelgen", "dist-translate", "dist-compile",
         "dist-run", "dist-profile", "dist-fuzz", "not", "split-file", "count",
         ToolSubst("%python", config.python_executable, unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# valgrind sees what MLIR's uninstrumented library does with freed memory,
# which AddressSanitizer cannot (test/driver/forward-block-argument-valgrind.test).
# (Not in a sanitizer build: valgrind cannot run AddressSanitizer's code.)
import shutil
if shutil.which("valgrind") and not getattr(config, "dist_sanitize", ""):
    config.available_features.add("valgrind")

# Headless Chromium (Debian's chromium) renders the HTML report in
# test/driver/report-html-chromium.test.
if shutil.which("chromium"):
    config.available_features.add("chromium")
