"""AES-256-CBC for secret headers and LLM API keys: ``key_id:iv_hex:cipher_hex``.

The keys come from the environment: ``CHATFLOW_ENCRYPTION_KEYS`` (comma-separated, the
current key first, older ones after) and ``CHATFLOW_ENCRYPTION_KEY`` (one key; an older one
after those when both are set). Each key is 64 hex chars or the base64 of 32 bytes. A secret
is always encrypted under the current key and carries that key's id (the first 8 hex digits
of a SHA-256 of the key, which tells nothing about it), so it is decrypted by exactly the
key that wrote it. A secret of the format before key ids (``iv_hex:cipher_hex``) is still
read: each key is tried, the current one first. ``chatflow keys rotate-encryption``
(:mod:`handlers.registry.rotation`) re-encrypts every stored secret under the current key,
after which older keys can be removed.

Only the registry's projector decrypts, to write the cache projections the runtime reads;
nothing the API returns holds a secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .errors import ApiCode, Invalid

if TYPE_CHECKING:
    from ..settings import Settings

KEY_ENV = "CHATFLOW_ENCRYPTION_KEY"
KEYS_ENV = "CHATFLOW_ENCRYPTION_KEYS"


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"chatflow encryption key id\0" + key).hexdigest()[:8]


class SecretBox:
    """Encrypts under the current key (``key``); decrypts under it or an ``older`` one."""

    def __init__(self, key: str | bytes | None, *, older: Sequence[str | bytes] = ()) -> None:
        self._keys = ([_parse_key(key)] if key else []) + [_parse_key(k) for k in older]
        self._by_id = {key_id(k): k for k in self._keys}

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        keys = settings.encryption_key_list()
        return cls(keys[0] if keys else None, older=keys[1:])

    @property
    def ready(self) -> bool:
        return bool(self._keys)

    @property
    def current_id(self) -> str | None:
        return key_id(self._keys[0]) if self._keys else None

    def _need_key(self) -> bytes:
        if not self._keys:
            raise Invalid(f"secrets need an encryption key: set {KEY_ENV} (64 hex chars) "
                          "on the API server", code=ApiCode.ENCRYPTION_KEY_MISSING)
        return self._keys[0]

    def encrypt(self, plain: str) -> str:
        key = self._need_key()
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        data = padder.update(plain.encode()) + padder.finalize()
        enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        return f"{key_id(key)}:{iv.hex()}:{(enc.update(data) + enc.finalize()).hex()}"

    @staticmethod
    def key_of(token: str) -> str | None:
        """The id of the key ``token`` was written with; None for the format before ids."""
        parts = token.split(":")
        return parts[0] if len(parts) == 3 else None

    def decrypt(self, token: str) -> str:
        self._need_key()
        parts = token.split(":")
        if len(parts) == 3:
            key = self._by_id.get(parts[0])
            if key is None:
                raise Invalid(f"a stored secret was written with key {parts[0]}, which is not "
                              f"among the configured keys ({KEYS_ENV}, {KEY_ENV}): keep the "
                              "old key listed until `chatflow keys rotate-encryption` ran",
                              code=ApiCode.SECRET_KEY_UNKNOWN)
            return _decrypt(key, parts[1], parts[2])
        if len(parts) == 2:
            for key in self._keys:  # written before key ids: whichever key reads it
                try:
                    return _decrypt(key, parts[0], parts[1])
                except Invalid:
                    continue
        raise Invalid("a stored secret cannot be decrypted with the configured keys "
                      f"(is {KEY_ENV} or {KEYS_ENV} the one it was written with?)",
                      code=ApiCode.SECRET_UNDECRYPTABLE)


def _decrypt(key: bytes, iv_hex: str, cipher_hex: str) -> str:
    try:
        dec = Cipher(algorithms.AES(key), modes.CBC(bytes.fromhex(iv_hex))).decryptor()
        data = dec.update(bytes.fromhex(cipher_hex)) + dec.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        return (unpadder.update(data) + unpadder.finalize()).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise Invalid("a stored secret cannot be decrypted with this key "
                      f"(is {KEY_ENV} the one it was written with?)",
                      code=ApiCode.SECRET_UNDECRYPTABLE) from exc


def _parse_key(key: str | bytes) -> bytes:
    if isinstance(key, bytes):
        raw = key
    elif len(key) == 64:
        try:
            raw = bytes.fromhex(key)
        except ValueError:
            raw = b""
    else:
        try:
            raw = base64.b64decode(key, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
    if len(raw) != 32:
        raise Invalid(f"{KEY_ENV} and each of {KEYS_ENV} must be 32 bytes: 64 hex chars or "
                      "base64", code=ApiCode.ENCRYPTION_KEY_INVALID)
    return raw


def new_key() -> str:
    """A fresh key, as 64 hex chars."""
    return os.urandom(32).hex()
