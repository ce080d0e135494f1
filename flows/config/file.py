"""Reading a YAML config file with nothing accepted silently: a regular UTF-8 file of bounded size,
no key given twice, and no more values than a config can mean (anchors and aliases expand).

``yaml.safe_load`` builds no objects but plain ones, yet it keeps the last of two equal keys
without a word, and its aliases share one object, so a few hundred bytes of nested aliases (the
"billion laughs") describe 10^9 values, which any later walk over the config (its fingerprint,
its check) then visits. Both are refused here, before the config is looked at.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from topicbench.core.io import read_text
from topicbench.core.validation import InputError

#: The largest config file read: configs are a few KB; a stop-word list of 10^5 words is ~1 MB.
MAX_CONFIG_BYTES = 16 * 2**20
#: The most values (mappings, lists and scalars, each alias counted as what it expands to) a
#: config may hold: a 10^5-word stop-word list is 10^5; nested aliases reach 10^9 in 600 bytes.
MAX_CONFIG_VALUES = 1_000_000


class _ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (merge keys ``<<`` may
    still be overridden, as YAML intends)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node)
                if key in first_seen:
                    raise yaml.constructor.ConstructorError(
                        None, None,
                        f"the key {key!r} is given twice (first at line {first_seen[key].line + 1}); "
                        "YAML would keep only the last: remove one",
                        key_node.start_mark,
                    )
                first_seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def read_yaml_config(path) -> dict:
    """The mapping in the YAML file ``path``, or an :class:`InputError` naming what is wrong
    (missing, a folder or not a regular file, too large, not UTF-8, not YAML, a key twice,
    too many values, not a mapping)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(f"config file not found: {path}") from None
    except OSError as error:
        raise InputError(f"cannot read the config file {path}: {error.strerror or error}") from None
    if size > MAX_CONFIG_BYTES:
        raise InputError(f"config file {path} is {size / 2**20:.0f} MiB; a config is at most {MAX_CONFIG_BYTES // 2**20} MiB")
    text = read_text(path, "config file")
    try:
        data = yaml.load(text, Loader=_ConfigLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{path} is not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise InputError(f"{path}: the config is nested too deeply to be a config") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: the config must be a mapping of settings, got {type(data).__name__}")
    count_values(data, MAX_CONFIG_VALUES, str(path))
    return data


def count_values(data, limit: int, where: str) -> int:
    """How many values ``data`` holds with every shared (aliased) value counted each time it is
    used; an :class:`InputError` past ``limit`` or for a value that contains itself. Linear in
    the distinct values (each is counted once, then remembered)."""
    totals: dict = {}
    in_progress: set = set()
    # an explicit stack: a deeply nested config must not exhaust Python's recursion
    stack = [(data, False)]
    while stack:
        value, expanded = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        key = id(value)
        if key in totals:
            continue
        children = list(value.keys()) + list(value.values()) if isinstance(value, dict) else value
        if not expanded:
            if key in in_progress:
                raise InputError(f"{where}: a value of the config contains itself (a YAML alias to its own anchor)")
            in_progress.add(key)
            stack.append((value, True))
            stack.extend((child, False) for child in children if isinstance(child, (dict, list)) and id(child) not in totals)
            continue
        in_progress.discard(key)
        total = 1 + sum(totals.get(id(child), 1) for child in children)
        if total > limit:
            raise InputError(
                f"{where}: the config expands to more than {limit:,} values (through YAML anchors and "
                "aliases); a config this large is a mistake or an attack"
            )
        totals[key] = total
    return totals.get(id(data), 1)
