"""Build hook: compile the optional replay step, ``cladelog.graph_engine._speedups``.

The compiled module only speeds up what the pure-Python code already does (see
``src/cladelog/graph_engine/_speedups.c``): parsing a packed event's columns and applying
them in a full replay. This hook is cladelog-core's (``packages/core``) with other names,
kept as a copy so that each package builds on its own. Where it cannot be built (no C
compiler or no Python headers), the package installs as pure Python and works the same,
only slower; set ``CLADELOG_NO_SPEEDUPS_BUILD=1`` to skip the build on purpose.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "cladelog.graph_engine._speedups"
SOURCE = "src/cladelog/graph_engine/_speedups.c"


class SpeedupsBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or os.environ.get("CLADELOG_NO_SPEEDUPS_BUILD"):
            return
        source = Path(self.root, SOURCE)
        name = "_speedups" + sysconfig.get_config_var("EXT_SUFFIX")
        work = Path(tempfile.mkdtemp(prefix="cladelog-graph-speedups-"))
        try:
            built = _compile(source, work)
        except Exception as exc:  # no compiler, no headers: pure Python it is
            self.app.display_warning(
                f"cladelog-graph-engine: the compiled replay step was not built ({exc}); "
                "the pure-Python code is used")
            shutil.rmtree(work, ignore_errors=True)
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version == "editable":  # the src folder is on sys.path: the module goes beside
            shutil.copyfile(built, source.with_name(name))
            shutil.rmtree(work, ignore_errors=True)
        else:
            self._work = work
            build_data["force_include"][str(built)] = f"cladelog/graph_engine/{name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _compile(source: Path, work: Path) -> Path:
    """Compile ``source`` with the compiler and flags Python was built with."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    dist = Distribution({"name": "cladelog-graph-engine-speedups",
                         "ext_modules": [Extension(MODULE, [str(source)])]})
    cmd = build_ext(dist)
    cmd.build_lib = str(work / "lib")
    cmd.build_temp = str(work / "tmp")
    cmd.ensure_finalized()
    cmd.run()
    return Path(cmd.get_ext_fullpath(MODULE))
