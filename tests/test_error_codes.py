"""The error tables are the one place codes are defined (runtime/errors.py for a tool run's,
handlers/registry/errors.py for the HTTP API's), and each side has one root: every exception
of the runtime and the handlers derives from ChatflowError, every one of the SDK from
ChatflowAgentError, and no class name is used twice."""

from __future__ import annotations

import ast
import re
import runpy
import string
import subprocess
import sys
from pathlib import Path

import pytest

from chatflow.handlers.registry.errors import ApiCode
from chatflow.runtime.errors import ErrorCode, ToolFailure, internal_error

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {".git", ".venv", ".venv-ci", "node_modules", ".typecheck", "site"}
# A ToolFailure made from a literal code, outside the table; in the product's code, a
# result's ErrorInfo too (tests may write wire data with any code).
LITERAL = re.compile(r"\bToolFailure\(\s*[\"']")
WIRE_LITERAL = re.compile(r"\b(ToolFailure|ErrorInfo)\(\s*[\"']")
DOCS = ROOT / "docs" / "errors.md"


def python_files() -> list[Path]:
    return [p for p in ROOT.rglob("*.py") if not SKIPPED & set(p.relative_to(ROOT).parts)]


def test_no_failure_is_made_from_a_literal_code_outside_the_table() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in python_files() if path != Path(__file__).resolve()
             for pattern in [LITERAL if path.is_relative_to(ROOT / "tests") else WIRE_LITERAL]
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == [], "add a row to ErrorCode (runtime/errors.py) and raise ErrorCode.X.failure()"


def test_the_literal_check_sees_a_literal() -> None:
    assert LITERAL.search('    raise ToolFailure("rate_limited", "too many")')
    assert WIRE_LITERAL.search("error=ErrorInfo('invalid_command', why)")
    assert not LITERAL.search("raise ErrorCode.RATE_LIMITED.failure(what=what)")


@pytest.mark.parametrize("table", [ErrorCode, ApiCode], ids=lambda t: t.__name__)
def test_each_code_is_one_row_and_each_row_says_when(table: type[ErrorCode | ApiCode]) -> None:
    assert len(table.__members__) == len(list(table)), "two rows share a code"
    for row in table:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", row), row
        assert row.when.startswith("Raised when ") and row.when.endswith("."), row
        assert row.name == row.upper(), f"{row.name} should be spelled {row.upper()}"


def test_a_code_is_the_runtimes_or_the_apis_not_both() -> None:
    assert {str(row) for row in ErrorCode} & {str(row) for row in ApiCode} == set()


def fields(template: str) -> dict[str, object]:
    """A value for each of the template's fields: a number where it has a format spec."""
    return {name: 1.5 if spec else "X"
            for _, name, spec, _ in string.Formatter().parse(template) if name}


@pytest.mark.parametrize("row", list(ErrorCode), ids=str)
def test_each_template_fills(row: ErrorCode) -> None:
    failure = row.failure(**fields(row.template))
    assert isinstance(failure, ToolFailure) and failure.code == str(row)
    assert type(failure.code) is str  # a plain string on the wire, not the enum member
    assert failure.fatal is row.fatal and "{" not in failure.message.replace("{{", "")


def test_a_missing_field_fails_at_once() -> None:
    with pytest.raises(KeyError):
        ErrorCode.TOOL_NOT_FOUND.failure()


def test_the_seed_rows_keep_their_verbatim_texts() -> None:
    assert ErrorCode.TOOL_TIMEOUT.failure(seconds=30, pt="pt-1").message == (
        "tool timeout (>30s): publishedToolId=pt-1")
    assert ErrorCode.TOOL_DEFINITION_INVALID.failure("blocks.a.url", pt="p").message == (
        "tool com definição inválida: publishedToolId=p (blocks.a.url)")
    assert internal_error("boom").message == "falha interna do runtime: boom"


def test_the_fatal_rows_are_the_tree_wide_ones() -> None:
    # A cancellation, like the deadline, is the whole tree's: fatal wherever it is raised
    # (Outbound's refusal of a request of an answered tree included).
    assert {str(r) for r in ErrorCode if r.fatal} == {
        "tool_timeout", "execution_cancelled", "internal_error"}


def test_a_recorded_failure_is_fatal_as_its_row_says() -> None:
    assert ToolFailure.recorded("execution_cancelled", "x").fatal
    assert not ToolFailure.recorded("http_status", "x").fatal
    assert not ToolFailure.recorded("a_code_of_a_later_version", "x").fatal


def test_every_code_the_sandbox_spells_is_a_row() -> None:
    prelude = (ROOT / "runtime" / "sandbox" / "_prelude.py").read_text()
    spelled = set(re.findall(r"\"(script_[a-z_]+)\"", prelude))
    assert spelled and {c for c in spelled if ErrorCode.lookup(c) is None} == set()


def test_the_docs_page_renders_every_row() -> None:
    hook = runpy.run_path(str(ROOT / "docs" / "hooks" / "error_table.py"))
    page = DOCS.read_text()
    assert page.count(hook["MARKER"]) == 1 and page.count(hook["API_MARKER"]) == 1
    rendered = hook["on_page_markdown"](page, page=None, config=None, files=None)
    runtime, api = rendered.split("## The HTTP API's codes")
    for text, table in ((runtime, ErrorCode), (api, ApiCode)):
        rows = [line for line in text.splitlines() if line.startswith("| `")]
        assert [line.split("`")[1] for line in rows] == [str(row) for row in table]
    assert "| `tool_timeout` | yes | `tool timeout (>{seconds}s): publishedToolId={pt}` |" in rendered
    assert ("| `too_many_held` | a long request would hold more connections than its key, its "
            "workspace or the API process may (`CHATFLOW_API_HELD_*`; 429). |") in rendered


CLASSES = """
import collections, importlib, inspect, pkgutil
from chatflow.runtime.errors import ChatflowError
from chatflow_agent.errors import ChatflowAgentError
outside, untold, defined = [], [], collections.defaultdict(set)
for package in ("chatflow.runtime", "chatflow.handlers", "chatflow.schemas", "chatflow_agent"):
    root = ChatflowAgentError if package == "chatflow_agent" else ChatflowError
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if ".migrations" in info.name or info.name.endswith("__main__"):
            continue  # alembic's env.py runs a migration when imported; __main__ runs the CLI
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == info.name:
                error = issubclass(obj, BaseException)
                defined[name].add((info.name, error))
                if error and not issubclass(obj, root):
                    outside.append(f"{info.name}.{name}")
                if error and not (obj.__doc__ or "").strip().startswith("Raised when"):
                    untold.append(f"{info.name}.{name}")
reused = sorted(f"{name}: {sorted(m for m, _ in where)}" for name, where in defined.items()
                if len(where) > 1 and any(error for _, error in where))
print(repr((sorted(outside), reused, sorted(untold))))
"""


def test_one_root_per_side_no_error_name_used_twice_and_each_says_when() -> None:
    run = subprocess.run([sys.executable, "-c", CLASSES], capture_output=True, text=True,
                         timeout=240, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    outside, reused, untold = ast.literal_eval(run.stdout.strip().splitlines()[-1])
    assert outside == [], "derive these from ChatflowError (runtime, handlers) or ChatflowAgentError"
    assert reused == [], "an exception's name is one class (and no other class of the tree)"
    assert untold == [], "each exception's docstring opens with 'Raised when ...'"


def test_the_renamed_names_still_import_with_a_warning() -> None:
    import chatflow_agent.errors as sdk_errors
    from chatflow.schemas import wire

    with pytest.warns(DeprecationWarning, match="ErrorInfo"):
        assert wire.ToolError is wire.ErrorInfo
    with pytest.warns(DeprecationWarning, match="SettingsError"):
        assert sdk_errors.ConfigurationError is sdk_errors.SettingsError
    with pytest.raises(AttributeError):
        _ = wire.NoSuchName


# -- the HTTP API's codes: ApiCode (handlers/registry/errors.py) ----------------------------

def api_literals(source: str) -> list[str]:
    """Where ``source`` gives an API error a literal code: ``code="..."`` passed to any call
    (under handlers/ a ``code=`` is an API code: the RegistryError family's, ForkRefused's),
    ``code = "..."`` in a class body, ``"error": "..."`` in a dict (an error body), or a
    ``.code`` compared with a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        literal = None
        if isinstance(node, ast.Call):
            literal = next((k.value for k in node.keywords
                            if k.arg == "code" and _is_text(k.value)), None)
        elif isinstance(node, ast.ClassDef):
            literal = next((s.value for s in node.body if isinstance(s, ast.Assign | ast.AnnAssign)
                            and "code" in _targets(s) and s.value is not None
                            and _is_text(s.value)), None)
        elif isinstance(node, ast.Dict):
            literal = next((v for k, v in zip(node.keys, node.values, strict=True)
                            if isinstance(k, ast.Constant) and k.value == "error"
                            and _is_text(v)), None)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "code" for s in sides):
                literal = next((s for s in sides if _is_text(s)), None)
        if literal is not None:
            found.append(f"{literal.lineno}: {ast.unparse(node).splitlines()[0][:90]}")
    return found


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                               and isinstance(node.value, str))


def _targets(statement: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def handler_sources() -> dict[Path, str]:
    return {p: p.read_text() for p in python_files() if p.is_relative_to(ROOT / "handlers")}


def test_no_api_error_is_made_from_a_literal_code() -> None:
    found = [f"{path.relative_to(ROOT)}:{where}"
             for path, source in handler_sources().items() for where in api_literals(source)]
    assert found == [], "add a row to ApiCode (handlers/registry/errors.py) and pass ApiCode.X"


def test_the_api_literal_check_sees_each_kind_of_literal() -> None:
    caught = api_literals('''
raise Conflict(f"tool {t!r} is in the trash", code="in_trash")
raise NotFound("no run", problems=[], code=f"{kind}_not_found")
class Busy(RegistryError):
    status = 429
    code = "busy"
class Typed(RegistryError):
    code: str = "typed"
body = {"error": "invalid_request", "message": text}
if exc.code == "secret_key_unknown": pass
''')
    assert sorted(int(line.split(":")[0]) for line in caught) == [2, 3, 6, 8, 9, 10]
    assert api_literals('''
raise Conflict(f"tool {t!r} is in the trash", code=ApiCode.IN_TRASH)
raise Invalid(str(exc), code=exc.code)
class Busy(RegistryError):
    code = ApiCode.IMPORT_BUSY
body = {"error": ApiCode.INVALID_REQUEST, "message": "a literal message is fine"}
if exc.code == ApiCode.SECRET_KEY_UNKNOWN: pass
out = {"error": error, "result": "text"}
''') == []


def test_each_api_code_is_raised_somewhere() -> None:
    used = {node.attr for source in handler_sources().values()
            for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "ApiCode"}
    assert {row.name for row in ApiCode} - used == set(), "a row nothing raises: drop it"
    assert used - {row.name for row in ApiCode} == set()
