"""AES-256-CBC for secret headers and LLM API keys: ``iv_hex:cipher_hex``.

The key comes from the environment (``CHATFLOW_ENCRYPTION_KEY``: 64 hex chars,
or the base64 of 32 bytes). Only the registry's projector decrypts, to write the
cache projections the runtime reads; nothing the API returns holds a secret.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .errors import Invalid

KEY_ENV = "CHATFLOW_ENCRYPTION_KEY"


class SecretBox:
    def __init__(self, key: str | bytes | None) -> None:
        self._key = _parse_key(key) if key else None

    @property
    def ready(self) -> bool:
        return self._key is not None

    def _need_key(self) -> bytes:
        if self._key is None:
            raise Invalid(f"secrets need an encryption key: set {KEY_ENV} (64 hex chars) "
                          "on the API server", code="encryption_key_missing")
        return self._key

    def encrypt(self, plain: str) -> str:
        key = self._need_key()
        iv = os.urandom(16)
        padder = padding.PKCS7(128).padder()
        data = padder.update(plain.encode()) + padder.finalize()
        enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        return f"{iv.hex()}:{(enc.update(data) + enc.finalize()).hex()}"

    def decrypt(self, token: str) -> str:
        key = self._need_key()
        try:
            iv_hex, cipher_hex = token.split(":", 1)
            dec = Cipher(algorithms.AES(key), modes.CBC(bytes.fromhex(iv_hex))).decryptor()
            data = dec.update(bytes.fromhex(cipher_hex)) + dec.finalize()
            unpadder = padding.PKCS7(128).unpadder()
            return (unpadder.update(data) + unpadder.finalize()).decode()
        except (ValueError, UnicodeDecodeError) as exc:
            raise Invalid("a stored secret cannot be decrypted with this key "
                          f"(is {KEY_ENV} the one it was written with?)",
                          code="secret_undecryptable") from exc


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
        raise Invalid(f"{KEY_ENV} must be 32 bytes: 64 hex chars or base64",
                      code="encryption_key_invalid")
    return raw


def new_key() -> str:
    """A fresh key, as 64 hex chars."""
    return os.urandom(32).hex()
