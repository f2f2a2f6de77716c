"""The event log's line format: this version's compact lines, read back whole, beside the
lines and stream entries earlier versions wrote (a tree may hold both during an upgrade)."""

from __future__ import annotations

import msgspec

from chatflow.runtime.state import LogEntry, decode_log, encode_log, outline_log, outline_of
from chatflow.schemas.wire import ErrorInfo

ROOT = "2-16edb9e2998374597e8a995d72d6740c"


def one_hop_entries() -> list[LogEntry]:
    child = ROOT + ".2"
    return [
        LogEntry("started", ROOT, 1_796_197_039_965, blockId="c",
                 detail={"publishedToolId": "bench", "inputs": {"n": "7"}, "variables": {"n": "7"}}),
        LogEntry("spawned", ROOT, 1_796_197_039_966, blockId="c", child=child),
        LogEntry("started", child, 1_796_197_039_966, blockId="r",
                 detail={"publishedToolId": "child", "parent": ROOT}),
        LogEntry("block", child, 1_796_197_039_966, blockId="r", blockType="return",
                 durationMs=0, ok=True, result="7"),
        LogEntry("finished", child, 1_796_197_039_966, ok=True, result="7"),
        LogEntry("block", ROOT, 1_796_197_039_966, blockId="c", blockType="callTool",
                 durationMs=0, ok=True, next="r", writes={"o": "7"}),
        LogEntry("aborted", ROOT, 1_796_197_039_970, ok=False,
                 error=ErrorInfo("TOOL_TIMEOUT", "took too long"), matchedConditionId="m"),
    ]


def test_a_line_of_this_version_decodes_to_the_entries_it_was_encoded_from() -> None:
    entries = one_hop_entries()
    assert decode_log(encode_log(entries)) == entries


def test_a_line_names_its_root_and_its_time_once_and_is_smaller_than_the_previous_format() -> None:
    entries = one_hop_entries()
    line = encode_log(entries)
    previous = msgspec.json.encode(entries) + b"\n"
    assert line.count(ROOT.encode()) == 1  # the child's "parent" is derived from its id
    assert line.count(b"1796197039") == 1
    assert len(line) < 0.6 * len(previous), (len(line), len(previous))


def test_a_log_mixing_lines_of_this_and_the_previous_version_reads_in_order() -> None:
    entries = one_hop_entries()
    previous = msgspec.json.encode(entries[:3]) + b"\n"
    assert decode_log(previous + encode_log(entries[3:])) == entries
    assert decode_log(encode_log(entries[:3]) + previous) == entries[:3] + entries[:3]


def test_a_stream_entry_of_the_version_before_still_decodes() -> None:
    entry = one_hop_entries()[1]
    assert decode_log(msgspec.json.encode(entry)) == [entry]


def test_an_entry_of_another_tree_or_an_unknown_type_keeps_its_whole_id_and_name() -> None:
    entries = [LogEntry("started", ROOT, 5, blockId="a"),
               LogEntry("custom", "7-other", 3, child="7-other.4")]
    assert decode_log(encode_log(entries)) == entries


def test_a_started_detail_that_repeats_the_parent_or_the_inputs_is_restored_in_its_order() -> None:
    child = ROOT + ".2"
    derived = LogEntry("started", child, 9, blockId="r", detail={
        "publishedToolId": "child", "parent": ROOT, "inputs": {"n": "7"}, "defHash": "h",
        "variables": {"n": "7"}})
    kept = LogEntry("started", child + ".4", 9, blockId="r", detail={
        "parent": ROOT, "inputs": {"n": "7"}, "variables": {"n": "8"}})
    line = encode_log([derived, kept])
    assert line.count(b'"n":"7"') == 2  # the first entry's variables are not written again
    decoded = decode_log(line)
    assert decoded == [derived, kept]
    assert [list((e.detail or {}).items()) for e in decoded] == [
        list((e.detail or {}).items()) for e in [derived, kept]]


def test_a_line_is_written_byte_for_byte_as_the_format_of_this_version_writes_it() -> None:
    """The encoder may get faster, never different: a line written today must read the same
    to every worker of this version (and to replay), so its bytes are pinned."""
    assert encode_log(one_hop_entries()) == (
        b'["2-16edb9e2998374597e8a995d72d6740c",1796197039965,[{"t":"s","b":"c","d":'
        b'{"publishedToolId":"bench","inputs":{"n":"7"},"variables":0}},{"t":"p","a":1,'
        b'"b":"c","c":".2"},{"t":"s","e":".2","a":1,"b":"r","d":{"publishedToolId":"child",'
        b'"parent":0}},{"t":"b","e":".2","a":1,"b":"r","y":"return","m":0,"o":true,"r":"7"},'
        b'{"t":"f","e":".2","a":1,"o":true,"r":"7"},{"t":"b","a":1,"b":"c","y":"callTool",'
        b'"m":0,"o":true,"n":"r","w":{"o":"7"}},{"t":"a","a":5,"o":false,"x":{"code":'
        b'"TOOL_TIMEOUT","message":"took too long"},"k":"m"}]]\n')
    assert encode_log([LogEntry("started", "2-ab", 5, blockId="a"),
                       LogEntry("custom", "7-other", 3, child="7-other.4"),
                       LogEntry("block", "2-ab.3", 6, child="2-ab")]) == (
        b'["2-ab",5,[{"t":"s","b":"a"},{"t":"custom","e":"7-other","a":-2,"c":"7-other.4"},'
        b'{"t":"b","e":".3","a":1,"c":""}]]\n')


def test_a_lines_outline_is_the_outline_of_what_it_decodes_to() -> None:
    """The spans read a log in outline (``outline_log``, its own decoder of the one-letter
    names): it must agree with ``decode_log`` entry for entry, nested and foreign ids, times,
    errors, children and the detail keys a span reads included."""
    entries = [*one_hop_entries(),
               LogEntry("block", ROOT + ".2.5", 1_796_197_039_971, blockId="h",
                        blockType="httpCall", durationMs=12, ok=False,
                        error=ErrorInfo("http_status", "503"),
                        detail={"url": "https://api.example.com/x", "method": "POST",
                                "status": 503, "attempts": [{"at": 1, "status": 503}],
                                "body": {"skipped": True}}),
               LogEntry("custom", "7-other", 3, child="7-other.4")]
    line = encode_log(entries)
    assert outline_log(line) == [outline_of(e) for e in decode_log(line)]
    assert outline_log(line + line) == [outline_of(e) for e in decode_log(line + line)]
