"""The one masking policy: what of a value may be recorded where secrets must not go.

The run history, debug events, logs, an endpoint test's answer and every message that quotes
a URL mask through this module (docs/security.md, "One masking policy"):

* **by name**: a mapping's value whose key names a credential (:func:`is_secret_name`:
  ``Authorization``, ``X-Auth-Key``, ``apiKey``, ``client_secret``, ``sig``, ``pass``...),
  at any depth; a JSON text (a tool's ``result``) is read as JSON and masked the same way;
* **in text**: ``Bearer …`` and ``Basic …`` credentials, a URL's password
  (``scheme://user:***@host``), and every query parameter with a secret-like name
  (``?sig=***&pass=***``);
* **in a span**: a URL loses its user and password whole (:func:`span_url`);
* **by value**: any text equal to, or containing, one of the workspace's stored secret values
  (server secret headers, LLM API keys), so an upstream that echoes the credential it was
  sent, or a script that copies it, still records the mask;
* **by depth**: what lies deeper than :data:`MAX_DEPTH` is masked whole, never kept unread.

Pure code: the caller hands the secret values (``handlers.redaction.SecretIndex`` reads them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
MAX_DEPTH = 32
# A stored "secret" shorter than this would mask common words by accident; it is not looked for.
MIN_SECRET_CHARS = 6

# Words of a name (split at anything not a letter or digit, and at camelCase humps) that say
# its value is a credential. "tokens" is absent on purpose: maxTokens and promptTokens count.
_SECRET_WORDS = frozenset({
    "authorization", "auth", "apikey", "key", "secret", "token", "password", "passwd", "pass",
    "pwd", "passphrase", "cookie", "credential", "credentials", "signature", "sig", "jwt",
    "sessionid", "privatekey", "accesskey", "secretkey",
})
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")
# "api key", "access key", "private key", "session id" written as two words
_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key"), ("session", "id"),
                    ("client", "secret"), ("x", "key")})
_NAMES: dict[str, bool] = {}

_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@")
_PARAM = re.compile(r"(?<![A-Za-z0-9_.~-])([A-Za-z0-9_.~-]+)=([^&#\s\"']+)")


def is_secret_name(name: str) -> bool:
    """Whether a key, header, field or query parameter of this name holds a credential."""
    found = _NAMES.get(name)
    if found is None:
        words = [w.lower() for w in _NON_WORD.split(_HUMP.sub(" ", name)) if w]
        found = (any(w in _SECRET_WORDS for w in words)
                 or any(pair in _PAIRS for pair in pairwise(words)))
        if len(_NAMES) < 8192:  # names repeat; a flood of distinct ones is not remembered
            _NAMES[name] = found
    return found


def _param(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}={MASK}" if is_secret_name(name) else match.group(0)


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with credentials in it masked: stored secret values, ``Bearer``/``Basic``
    credentials, a URL's password, query parameters with secret-like names."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET_CHARS and secret in text:
            text = text.replace(secret, MASK)
    if "=" in text:
        text = _PARAM.sub(_param, text)
    if "@" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", text)
    return _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)


def mask_url(url: str) -> str:
    """A URL as a message may quote it: its password and secret-named parameters masked, the
    user name kept (``redis://default:***@host:6379/0``)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparseable URL>"
    if password is not None:
        parts = parts._replace(netloc=f"{parts.username or ''}:{MASK}@{_host(parts.netloc)}")
    if parts.query:
        parts = parts._replace(query=_PARAM.sub(_param, parts.query))
    return urlunsplit(parts)


def span_url(url: str, secrets: Iterable[str] = ()) -> str:
    """A URL as a span may hold it (``url.full``): masked as any text is (:func:`mask_text`:
    secret-named parameters, stored secret values), and without its user or password at all
    (``https://host/path``): a span names the server, never who logged in to it."""
    text = mask_text(url, secrets)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if "@" not in parts.netloc:
        return text
    return urlunsplit(parts._replace(netloc=_host(parts.netloc)))


def _host(netloc: str) -> str:
    """A URL's ``netloc`` without its user and password."""
    return netloc.rpartition("@")[2]


def mask(value: Any, secrets: Iterable[str] = (), *,
         keep: Callable[[str, Any], bool] | None = None) -> Any:
    """``value`` with every credential masked (the module's rules), at any depth; a value
    deeper than :data:`MAX_DEPTH` is masked whole. ``keep(name, value)``: a secret-named entry
    the caller keeps as it is (a definition's ``{{variable}}`` reference holds no secret)."""
    known = tuple(s for s in secrets if len(s) >= MIN_SECRET_CHARS)
    return _mask(value, known, keep, 0)


def _mask(value: Any, secrets: tuple[str, ...], keep: Callable[[str, Any], bool] | None,
          depth: int) -> Any:
    if isinstance(value, str):
        return _mask_string(value, secrets, depth)
    if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):
        return MASK
    if isinstance(value, dict):
        return {k: (_mask(v, secrets, keep, depth + 1)
                    if not (isinstance(k, str) and is_secret_name(k))
                    else v if keep is not None and keep(k, v) else MASK)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(v, secrets, keep, depth + 1) for v in value]
    return value


# A text longer than this is not read as JSON (masked as text): recorders cap what they keep.
_JSON_TEXT_MAX = 1024 * 1024


def _mask_string(text: str, secrets: tuple[str, ...], depth: int) -> str:
    """A text that is a JSON object or array (a tool's ``result``, a script's output kept as
    text) is masked as the value it holds and written back compact; any other as text."""
    if len(text) <= _JSON_TEXT_MAX and text.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict | list):
            return json.dumps(_mask(parsed, secrets, None, depth), ensure_ascii=False,
                              separators=(",", ":"))
    return mask_text(text, secrets)


def mask_json_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` masked: a JSON object or array as the value it holds, any other as text."""
    return _mask_string(text, tuple(s for s in secrets if len(s) >= MIN_SECRET_CHARS), 0)
