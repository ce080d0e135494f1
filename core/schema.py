"""Declared schemas (JSON Schema, draft 2020-12) and the check that turns their violations into
one readable line.

A setting's type and range are declared once, as JSON Schema, and checked by ``jsonschema``:
the same declaration validates a config before any work and is published for editors
(``topicbench schema``). Values are checked strictly, as YAML gives them: ``true`` is not an
integer, ``"no"`` is not a boolean and ``2.0`` is not a count.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from .redaction import redact
from .validation import InputError

DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: A name a person gives (an experiment, a corpus, a model's label): some visible text, no
#: control characters (they break tables, logs and file names), at most 200 characters.
NAME_SCHEMA = {"type": "string", "pattern": r"^(?=.*\S)[^\x00-\x1f\x7f]*$", "maxLength": 200}


def boolean() -> dict:
    return {"type": "boolean"}


def integer(minimum: int | None = None, maximum: int | None = None) -> dict:
    schema = {"type": "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def share() -> dict:
    """A share of something: a number in (0, 1]."""
    return {"type": "number", "exclusiveMinimum": 0, "maximum": 1}


def check_schema(value, schema: dict, where: str, *, noun: str | None = None) -> None:
    """Raise :class:`InputError` naming the first violation of ``schema`` by ``value``.

    The message reads ``WHERE: PATH must be EXPECTED, got VALUE``, with the path in the
    config's own terms (``models[1].settings.passes``); with ``noun`` a top-level key reads
    ``WHERE: NOUN 'KEY' must be ...`` (``gensim_lda: setting 'passes' must be an integer``).
    """
    error = _first_error(_validator(_schema_key(schema)), value)
    if error is not None:
        raise InputError(describe_error(error, where, noun=noun))


def _schema_key(schema: dict):
    import json

    return json.dumps(schema, sort_keys=True)


@functools.lru_cache(maxsize=64)
def _validator(schema_text: str):
    """A strict draft 2020-12 validator of the schema (cached: configs are checked repeatedly)."""
    import json

    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many({
        # a YAML list arrives as a list, a config rebuilt in Python may hold tuples
        "array": lambda _, value: isinstance(value, (list, tuple)),
        # strictly: true is not 1, and 2.0 is not a count
        "integer": lambda _, value: isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)),
        "number": lambda _, value: isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_)),
        "boolean": lambda _, value: isinstance(value, (bool, np.bool_)),
    })
    strict = jsonschema.validators.extend(base, type_checker=checker)
    return strict(json.loads(schema_text))


def _first_error(validator, value):
    """The violation a person should read first: the one earliest in the document, and among
    those at one place, the one ``jsonschema.exceptions.best_match`` ranks highest."""
    import jsonschema

    errors = list(validator.iter_errors(value))
    if not errors:
        return None
    earliest = min(_path_key(error.absolute_path) for error in errors)
    error = jsonschema.exceptions.best_match(e for e in errors if _path_key(e.absolute_path) == earliest)
    # a value an option of an anyOf rejects: the anyOf itself says what would do (a mapping whose
    # own setting is wrong keeps that error: its type was right)
    while (error.validator in _VALUE_KEYWORDS and error.parent is not None
           and list(error.parent.absolute_path) == list(error.absolute_path)):
        error = error.parent
    return error


_VALUE_KEYWORDS = ("type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern",
                   "minLength", "maxLength", "anyOf", "oneOf")


def _path_key(path) -> tuple:
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, str(part)) for part in path)


def describe_path(path) -> str:
    """``models[1].settings.passes`` for the path ('models', 1, 'settings', 'passes')."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def describe_error(error, where: str, *, noun: str | None = None) -> str:
    """One line for a ``jsonschema`` violation, in the config's terms."""
    path = describe_path(error.absolute_path)
    if noun and len(error.absolute_path) == 1:
        path = f"{noun} {path!r}"
    at = f"{where}: {path}" if path else where
    keyword, value, schema = error.validator, error.instance, error.schema
    if keyword == "additionalProperties":
        known = ", ".join(sorted(schema.get("properties", {})))
        extra = sorted(set(value) - set(schema.get("properties", {})), key=str)
        if "title" in schema:  # a model's settings
            return f"{at}: {schema['title']} has no setting {extra[0]!r}; its settings: {known}"
        return f"{at}: unknown setting {extra[0]!r}; known: {known}"
    if keyword == "required":
        missing = [name for name in error.validator_value if name not in value]
        return f"{at}: {missing[0]!r} is missing" + (f" ({schema['description']})" if "description" in schema else "")
    if keyword == "minItems" and not value:
        return f"{at} is empty: list at least one"
    if keyword == "uniqueItems":
        seen, repeated = [], None
        for item in value:
            if item in seen:
                repeated = item
                break
            seen.append(item)
        return f"{at} lists {repeated!r} twice: {list(value)}"
    if keyword == "enum" and "title" in schema:
        return f"{at}: Unknown {schema['title']} {value!r}. Available: {', '.join(map(str, error.validator_value))}"
    return f"{at} must be {expected(schema)}, got {_shown(value)}"


def _shown(value) -> str:
    text = redact(repr(value))  # a URL's user-info or a key is never shown
    return text if len(text) <= 80 else text[:77] + "..."


def expected(schema: dict) -> str:
    """What ``schema`` accepts, in words: 'an integer >= 1', 'true or false', 'a number in (0, 1]'."""
    if "anyOf" in schema or "oneOf" in schema:
        return " or ".join(expected(option) for option in schema.get("anyOf", schema.get("oneOf")))
    if "enum" in schema:
        choices = schema["enum"]
        return repr(choices[0]) if len(choices) == 1 else "one of " + ", ".join(repr(choice) for choice in choices)
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(expected({**schema, "type": single}) for single in kind)
    if kind == "boolean":
        return "true or false"
    if kind == "null":
        return "null (left out)"
    if kind in ("integer", "number"):
        return _article(kind) + _range(schema)
    if kind == "string":
        if schema.get("pattern") == NAME_SCHEMA["pattern"]:
            return f"a name (visible text without control characters, at most {schema.get('maxLength', 200)} characters)"
        if "pattern" in schema:
            return f"a string matching {schema['pattern']}"
        return "a non-empty string" if schema.get("minLength") else "a string"
    if kind == "array":
        items = schema.get("items")
        if items and "title" in items:
            return f"a list of {items['title']} names"
        return "a list" + (f" of {_plural(expected(items))}" if items and expected(items) != "anything" else "")
    if kind == "object":  # a mapping of exactly its required keys is named by them ("{low, high, step}")
        keys = schema.get("required") or []
        exact = keys and schema.get("additionalProperties") is False and sorted(keys) == sorted(schema.get("properties", {}))
        return f"{{{', '.join(keys)}}}" if exact else "a mapping of settings"
    if kind is None and _range(schema):  # a bound on whatever numbers a setting of no one type takes
        return "a number" + _range(schema)
    return "anything"


def _article(kind: str) -> str:
    return "an integer" if kind == "integer" else "a number"


def _range(schema: dict) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    low_open, high_open = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if low_open is not None:
        low = low_open
    if high_open is not None:
        high = high_open
    if low is not None and high is not None:
        return f" in {'(' if low_open is not None else '['}{_number(low)}, {_number(high)}{')' if high_open is not None else ']'}"
    if low is not None:
        return f" {'>' if low_open is not None else '>='} {_number(low)}"
    if high is not None:
        return f" {'<' if high_open is not None else '<='} {_number(high)}"
    return ""


def _number(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _plural(text: str) -> str:
    """'an integer >= 0' -> 'integers >= 0' (for 'a list of ...')."""
    match = re.match(r"^(an?) (\w+)(.*)$", text)
    if match is None:
        return text
    return f"{match.group(2)}s{match.group(3)}"
