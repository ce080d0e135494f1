"""Declared schemas and their one-line messages (``core/schema.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from topicbench.core.schema import NAME_SCHEMA, boolean, check_schema, describe_path, expected, integer, share
from topicbench.core.validation import InputError

SETTINGS = {
    "type": "object", "additionalProperties": False,
    "properties": {"count": integer(1), "flag": boolean(), "share": {"anyOf": [integer(1), share()]},
                   "names": {"type": "array", "items": {"type": "string"}}, "name": NAME_SCHEMA},
}


@pytest.mark.parametrize("value, message", [
    ({"count": True}, "where: count must be an integer >= 1, got True"),
    ({"count": 2.0}, "where: count must be an integer >= 1, got 2.0"),
    ({"count": 0}, "where: count must be an integer >= 1, got 0"),
    ({"flag": "no"}, "where: flag must be true or false, got 'no'"),
    ({"flag": 1}, "where: flag must be true or false, got 1"),
    ({"share": 1.5}, "where: share must be an integer >= 1 or a number in (0, 1], got 1.5"),
    ({"names": ["a", 5]}, "where: names[1] must be a string, got 5"),
    ({"name": "a\nb"}, "where: name must be a name (visible text without control characters"),
    ({"name": "   "}, "where: name must be a name"),
    ({"colour": 1}, "where: unknown setting 'colour'; known: count, flag, name, names, share"),
])
def test_violations_read_as_one_line_naming_the_path(value, message):
    with pytest.raises(InputError) as raised:
        check_schema(value, SETTINGS, "where")
    assert str(raised.value).startswith(message)


def test_numpy_numbers_are_numbers_and_tuples_are_lists():
    check_schema({"count": np.int64(3), "share": np.float64(0.5), "names": ("a", "b"), "flag": np.bool_(True)}, SETTINGS, "w")


def test_the_first_violation_in_the_document_is_the_one_named():
    with pytest.raises(InputError, match="count must be"):
        check_schema({"share": 7.5, "count": "x"}, {**SETTINGS, "propertyNames": {}}, "w")
    with pytest.raises(InputError, match=r"items\[0\] must be"):
        check_schema({"items": ["x", 7]}, {"type": "object", "properties": {"items": {"type": "array", "items": integer()}}}, "w")


def test_a_noun_names_a_top_level_key():
    with pytest.raises(InputError, match="^gensim_lda: setting 'count' must be an integer >= 1, got 'x'$"):
        check_schema({"count": "x"}, SETTINGS, "gensim_lda", noun="setting")


def test_paths_and_expectations_in_words():
    assert describe_path(["models", 1, "settings", "passes"]) == "models[1].settings.passes"
    assert expected({"anyOf": [{"type": "number"}, {"enum": ["auto"]}]}) == "a number or 'auto'"
    assert expected(integer(0, 2**32 - 1)) == "an integer in [0, 4294967295]"
    assert expected({"type": "array", "items": integer(2)}) == "a list of integers >= 2"
