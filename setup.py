"""setuptools' entry point; the metadata is in setup.cfg. With ``DAEMON_CLIENT_COMPILE=1``
(see ``_build/compile_switch.py``) the modules in ``daemon_client._compiled.COMPILED_MODULES``
are compiled with mypyc; otherwise the package is pure Python.

Each build has its own build directory (``build/pure``, ``build/compiled``), and the compiled
one starts empty, so no extension module of an earlier build can reach a wheel."""

from __future__ import annotations

import os
import runpy
import shutil
from typing import Any

from setuptools import setup

COMPILING = os.environ.get("DAEMON_CLIENT_COMPILE", "").strip().lower() in {"1", "true", "yes", "on"}
BUILD_BASE = os.path.join("build", "compiled" if COMPILING else "pure")


def _ext_modules() -> list[Any]:
    if not COMPILING:
        return []
    from mypyc.build import mypycify

    shutil.rmtree(BUILD_BASE, ignore_errors=True)
    modules = runpy.run_path(os.path.join("daemon_client", "_compiled.py"))["COMPILED_MODULES"]
    paths = [os.path.join(*name.split(".")) + ".py" for name in modules]
    return list(mypycify(paths, opt_level="3", target_dir=os.path.join(BUILD_BASE, "c"), group_name="daemon_client"))


setup(ext_modules=_ext_modules(), options={"build": {"build_base": BUILD_BASE}})
