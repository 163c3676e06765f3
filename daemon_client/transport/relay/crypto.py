"""The relay's end-to-end encryption: NaCl ``crypto_box`` through PyNaCl (protocol-relay.md 5.1, 6.1).

X25519 keys, the shared key ``K = crypto_box_beforenm(peer_public, own_secret)`` and, per
frame, ``base64(nonce[24] || XSalsa20-Poly1305(K, nonce, plaintext))`` with a fresh nonce from
the operating system's random source. PyNaCl (libsodium) is the optional ``relay`` extra:
:func:`require_nacl` raises :class:`~daemon_client.errors.MissingExtra` naming it. No cipher
is implemented here. Stateless apart from the key a :class:`FrameBox` holds; any thread may
call every function.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import os
import sys
from types import ModuleType
from typing import Any

import attrs

from daemon_client.errors import MissingExtra

KEY_BYTES = 32
NONCE_BYTES = 24
TAG_BYTES = 16
RELAY_EXTRA_HINT = "pip install 'daemon-client[relay]'"
_P = 2**255 - 19
_ORDER_8 = (  # the two points of order 8, as their bytes read left to right
    0xE0EB7A7C3B41B8AE1656E3FAF19FC46ADA098DEB9C32B1FD866205165F49B800,
    0x5F9C95BCA3508C24B1D0B1559C83EF5B04445CC4581C8E86D8224EDDD09F1157,
)
_BIG_ENDIAN_ORDER_8 = tuple(int.from_bytes(v.to_bytes(KEY_BYTES, "big"), "little") for v in _ORDER_8)
LOW_ORDER_KEYS: frozenset[bytes] = frozenset(
    (value | high).to_bytes(KEY_BYTES, "little")
    for value in (0, 1, *_BIG_ENDIAN_ORDER_8, _P - 1, _P, _P + 1)
    for high in (0, 1 << 255)
)
"""The 7 canonical low-order Curve25519 points and the same 7 with bit 255 set (14 keys)."""
_STRICT_B64 = sys.version_info >= (3, 11)
_URLSAFE = str.maketrans("-_", "+/")


class DecryptError(Exception):
    """A frame is not base64, too short, or fails authentication under the channel's key."""


class InvalidPeerKey(ValueError):
    """A public key no honest peer sends: wrong length, a low-order point, or an all-zero result."""


def require_nacl() -> ModuleType:
    """``nacl.bindings``, or :class:`MissingExtra` telling how to install it."""
    try:
        return importlib.import_module("nacl.bindings")
    except ImportError as exc:
        raise MissingExtra(
            f"Relay connections need PyNaCl, which is not installed ({exc}): {RELAY_EXTRA_HINT}"
        ) from None


def check_public_key(key: bytes) -> None:
    """Refuse a key of the wrong length or a low-order point (:class:`InvalidPeerKey`)."""
    if len(key) != KEY_BYTES:
        raise InvalidPeerKey(f"a public key has {KEY_BYTES} bytes, this one {len(key)}")
    if bytes(key) in LOW_ORDER_KEYS:
        raise InvalidPeerKey("the public key is a low-order Curve25519 point")


@attrs.frozen
class KeyPair:
    """An X25519 keypair; the secret never appears in the repr."""

    public_key: bytes
    secret_key: bytes = attrs.field(repr=False)

    @classmethod
    def generate(cls) -> KeyPair:
        """A fresh keypair from the operating system's random source."""
        nacl = require_nacl()
        secret = os.urandom(KEY_BYTES)
        return cls(bytes(nacl.crypto_scalarmult_base(secret)), secret)

    @classmethod
    def from_secret(cls, secret_key: bytes) -> KeyPair:
        """The keypair of a known secret (tests, test vectors)."""
        nacl = require_nacl()
        if len(secret_key) != KEY_BYTES:
            raise ValueError(f"a secret key has {KEY_BYTES} bytes")
        return cls(bytes(nacl.crypto_scalarmult_base(secret_key)), bytes(secret_key))

    @property
    def public_key_b64(self) -> str:
        """The public key as it travels in ``e2ee_hello``: standard base64 with padding."""
        return base64.b64encode(self.public_key).decode("ascii")


def shared_key(peer_public_key: bytes, own_secret_key: bytes) -> bytes:
    """``K = HSalsa20(X25519(own_secret, peer_public), 0^16)`` (``crypto_box_beforenm``).

    Raises :class:`InvalidPeerKey` for a low-order peer key or an all-zero X25519 result.
    """
    nacl = require_nacl()
    check_public_key(peer_public_key)
    try:
        key: bytes = nacl.crypto_box_beforenm(bytes(peer_public_key), bytes(own_secret_key))
    except Exception:  # noqa: BLE001 - libsodium refuses an all-zero result with a generic error
        raise InvalidPeerKey("the key agreement with this public key gives an all-zero secret") from None
    return key


def decode_frame_text(text: str | bytes) -> bytes:
    """The bytes of a base64 frame: standard or URL-safe alphabet, padding optional."""
    data = text.encode("ascii", "strict") if isinstance(text, str) else text
    if _STRICT_B64:
        try:
            return binascii.a2b_base64(data, strict_mode=True)  # type: ignore[call-arg,unused-ignore]
        except binascii.Error:
            pass
    normal = data.decode("ascii").translate(_URLSAFE).rstrip("=")
    return base64.b64decode(normal + "=" * (-len(normal) % 4), validate=True)


class FrameBox:
    """Seals and opens the frames of one channel under its shared key ``K``."""

    __slots__ = ("_key", "_open", "_seal")

    def __init__(self, key: bytes) -> None:
        nacl = require_nacl()
        if len(key) != KEY_BYTES:
            raise ValueError(f"a shared key has {KEY_BYTES} bytes")
        self._key = bytes(key)
        self._seal: Any = nacl.crypto_secretbox
        # tag || ciphertext either way; the _easy form (PyNaCl 1.6) skips a copy and a padding step
        self._open: Any = getattr(nacl, "crypto_secretbox_open_easy", None) or nacl.crypto_secretbox_open

    def __repr__(self) -> str:
        return "<FrameBox>"

    def seal(self, plaintext: bytes, nonce: bytes | None = None) -> str:
        """One text frame: ``base64(nonce || tag || ciphertext)``, standard alphabet, padded.

        ``nonce`` is for test vectors only; by default it is 24 fresh bytes of ``os.urandom``.
        """
        if nonce is None:
            nonce = os.urandom(NONCE_BYTES)
        elif len(nonce) != NONCE_BYTES:
            raise ValueError(f"a nonce has {NONCE_BYTES} bytes")
        return base64.b64encode(nonce + self._seal(plaintext, nonce, self._key)).decode("ascii")

    def seal_bytes(self, plaintext: bytes) -> bytes:
        """``nonce || tag || ciphertext`` without base64 (a binary frame of newer daemons)."""
        nonce = os.urandom(NONCE_BYTES)
        return nonce + bytes(self._seal(plaintext, nonce, self._key))

    def open(self, frame: str | bytes) -> bytes:
        """The plaintext of a base64 frame; :class:`DecryptError` if it is not one of this channel's."""
        try:
            raw = decode_frame_text(frame)
        except (binascii.Error, ValueError):
            raise DecryptError("the frame is not base64") from None
        return self.open_bytes(raw)

    def open_bytes(self, raw: bytes) -> bytes:
        """The plaintext of ``nonce || tag || ciphertext``; :class:`DecryptError` otherwise."""
        if len(raw) < NONCE_BYTES + TAG_BYTES:
            raise DecryptError(f"the frame has {len(raw)} bytes, fewer than nonce and tag")
        try:
            return bytes(self._open(raw[NONCE_BYTES:], raw[:NONCE_BYTES], self._key))
        except Exception:  # noqa: BLE001 - PyNaCl raises CryptoError; any failure means "not ours"
            raise DecryptError("the frame does not authenticate under this channel's key") from None
