"""Sandboxed JavaScript for ``executeScript`` blocks (V8 via mini-racer).

Script form
-----------
The block's ``source`` is the *body of a function* run in strict mode; ``return`` gives
the output::

    const total = items.reduce((a, b) => a + b.price, 0);
    return { total, currency: input.currency };

Inputs are available as the object ``input`` (``input.name``, ``input["odd-name"]``) and,
when the name is an ASCII JavaScript identifier that is not a reserved word (nor
``input``, ``eval`` or ``arguments``), also as a bare local binding (``name``).

The result must be JSON: string, number, boolean, null, array or object (``undefined``
gives ``None``; ``NaN``/``Infinity`` become ``null`` and ``Date`` an ISO string, as with
``JSON.stringify``). Functions, symbols, BigInt, cyclic structures and Promises give an
error with code ``script_result``.

There is no filesystem, network, module loading, timer, WebAssembly, ``eval`` or
``Function`` constructor, and no host object; intrinsics and ``globalThis`` are frozen, so
nothing one script does is visible to the next. Each script is bounded in time
(``script_timeout``) and memory (``script_memory``); other failures are ``script_error``
(thrown errors, including stack overflow) and ``script_syntax``. See docs/sandbox.md.
"""

from ._types import ScriptJob, ScriptLimits, ScriptOutcome
from .sandbox import ScriptSandbox

__all__ = ["ScriptJob", "ScriptLimits", "ScriptOutcome", "ScriptSandbox"]
