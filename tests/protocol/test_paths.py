"""Directory keys (:mod:`daemon_client.protocol.paths`): every spelling of one directory compares
equal, and relative or ``..``-heavy paths keep what cannot be resolved lexically."""

from __future__ import annotations

import pytest

from daemon_client.protocol.paths import directory_key, same_directory


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/repo/./sdk/", "/repo/sdk"),
        ("/repo/app/../sdk", "/repo/sdk"),
        ("/../etc", "/etc"),  # nothing above the root
        ("repo/../..", ".."),
        ("../../repo", "../../repo"),
        ("repo/app/..", "repo"),
        ("./", "."),
        ("", "."),
        ("/", "/"),
        ("c:\\Repo\\app\\", "C:/Repo/app"),
        ("\\\\?\\C:\\repo", "C:/repo"),
        ("\\\\.\\C:\\repo\\..", "C:"),
        ("\\\\?\\UNC\\server\\share\\dir", "//server/share/dir"),
        ("//./unc/server/share", "//server/share"),
        ("\\\\server\\share\\", "//server/share"),
        ("\\\\server", "//server"),
        ("///repo//x", "/repo/x"),
    ],
)
def test_every_spelling_of_a_directory_reduces_to_one_key_keeping_what_cannot_be_resolved(path: str, key: str) -> None:
    assert directory_key(path) == key


def test_same_directory_compares_keys_and_none_only_matches_none() -> None:
    assert same_directory("/repo/./sdk", "/repo/sdk/")
    assert same_directory(None, None)
    assert not same_directory(None, "/repo")
    assert not same_directory("/repo", None)
    assert not same_directory("/Repo", "/repo")
