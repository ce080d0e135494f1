"""JSON Lines stay one record a line for every character ``str.splitlines`` breaks on (issue 46)."""

import json

import pytest

from topicbench.core.jsonl import json_line, json_lines, read_json_lines
from topicbench.core.validation import InputError

#: Every line boundary of ``str.splitlines`` (Python's docs), "\r\n" included.
LINE_BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_the_list_is_every_boundary_splitlines_knows():
    every = {chr(c) for c in range(0x110000) if len(f"a{chr(c)}b".splitlines()) == 2}
    assert every == set(LINE_BREAKS) - {"\r\n"}


@pytest.mark.parametrize("brk", LINE_BREAKS, ids=lambda c: f"U+{ord(c[0]):04X}")
def test_a_record_holding_any_line_break_is_one_line_and_reads_back(brk):
    record = {"reply": f"taxes{brk}budget", "word": f"w{brk}"}
    line = json_line(record)
    assert line.endswith("\n") and line.count("\n") == 1
    assert len(line.splitlines()) == 1                  # also for readers that split on every boundary
    assert read_json_lines(line * 2) == [record, record]
    assert json.loads(line) == record


def test_a_file_written_before_the_escape_still_reads():
    poisoned = '{"reply": "a\u2028b"}\n{"reply": "c\x85d"}\n'   # raw separators, as older versions wrote
    assert read_json_lines(poisoned) == [{"reply": "a\u2028b"}, {"reply": "c\x85d"}]


def test_a_line_that_is_not_json_is_named():
    with pytest.raises(InputError, match=r"requests.jsonl: line 2 is not JSON"):
        read_json_lines('{"a": 1}\n{"a": \n', where="requests.jsonl")


def test_json_lines_joins_records():
    assert json_lines([{"a": "\u2028"}, {"b": 2}]) == '{"a": "\\u2028"}\n{"b": 2}\n'


def test_the_trace_reader_recovers_an_old_poisoned_artifact(tmp_path):
    from topicbench.tasks.store.artifacts import LLM_RECORDS
    from topicbench.tasks.store.traces import read_records

    path = tmp_path / LLM_RECORDS
    path.parent.mkdir()
    path.write_text('{"task": "rating", "reply": "3\u2028because"}\n', encoding="utf-8")
    assert read_records(tmp_path) == [{"task": "rating", "reply": "3\u2028because"}]
