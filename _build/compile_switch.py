"""The build backend: setuptools, with a switch for the compiled build.

``pip install .`` builds the pure-Python package (the reference, and what ``pip install -e .``
always installs). With ``DAEMON_CLIENT_COMPILE=1`` in the environment, a wheel build also asks
for mypyc (it comes with mypy) and the packages the type checker reads, and ``setup.py``
compiles ``daemon_client._compiled.COMPILED_MODULES`` into extension modules for this platform.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every hook not redefined here is setuptools'

SWITCH = "DAEMON_CLIENT_COMPILE"
COMPILE_REQUIRES = [
    "mypy==2.4.1",  # the mypyc the compiled build is tested with
    "attrs>=23.1",
    "cattrs>=23.2",
    "websocket-client>=1.6",
    "orjson>=3.9",
    "pynacl>=1.5",
]


def _on(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


@contextlib.contextmanager
def _switched_off() -> Iterator[bool]:
    """While setuptools runs ``setup.py`` only to read requirements or metadata (before mypyc
    is installed, and with nothing to compile): the switch is off. Yields whether it was on."""
    switch = os.environ.get(SWITCH)
    os.environ[SWITCH] = "0"
    try:
        yield switch is not None and _on(switch)
    finally:
        if switch is None:
            del os.environ[SWITCH]
        else:
            os.environ[SWITCH] = switch


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' own requirements, and mypyc's (with the packages it reads) when compiling."""
    with _switched_off() as on:
        required = _setuptools.get_requires_for_build_wheel(config_settings)
    return [*required, *(COMPILE_REQUIRES if on else [])]


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with _switched_off():
        return str(_setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings))


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    """An editable install is always the pure package: its sources are what runs."""
    os.environ[SWITCH] = "0"
    return str(_setuptools.build_editable(wheel_directory, config_settings, metadata_directory))
