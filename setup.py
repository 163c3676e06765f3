"""setuptools' entry point; the metadata is in setup.cfg. With ``DAEMON_CLIENT_COMPILE=1``
(see ``_build/compile_switch.py``) the modules in ``daemon_client._compiled.COMPILED_MODULES``
are compiled with mypyc; otherwise the package is pure Python."""

from __future__ import annotations

import os
import runpy
from typing import Any

from setuptools import setup


def _ext_modules() -> list[Any]:
    if os.environ.get("DAEMON_CLIENT_COMPILE", "").strip().lower() not in {"1", "true", "yes", "on"}:
        return []
    from mypyc.build import mypycify

    modules = runpy.run_path(os.path.join("daemon_client", "_compiled.py"))["COMPILED_MODULES"]
    return list(mypycify([os.path.join(*name.split(".")) + ".py" for name in modules], opt_level="3"))


setup(ext_modules=_ext_modules())
