"""TopicGPT's prompts and the reading of their replies (Pham et al., NAACL 2024): pure functions,
no endpoint. :mod:`topicbench.baselines.topicgpt` asks the questions.

The prompt texts are the authors' files, shipped unchanged in ``topicgpt_prompts/`` (package
data) from ``github.com/chtmp223/topicGPT`` at commit :data:`PROMPTS_COMMIT`, folder ``prompt/``;
:data:`PROMPT_SHA256` records each file's SHA-256 as read from that commit. The reply formats and
the regular expressions that read them are the authors' (``topicgpt_python/generation_1.py``,
``refinement.py``, ``correction.py`` at that commit).

Only the top level of their topic hierarchy is built (their ``generation_1`` / ``refinement`` /
``assignment`` / ``correction`` steps; ``generation_2``'s subtopics are not), which is what the
paper scores against gold labels.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources

from .base import ModelError

logger = logging.getLogger(__name__)

#: The authors' repository and the commit the prompt files were taken from.
PROMPTS_REPOSITORY = "https://github.com/chtmp223/topicGPT"
PROMPTS_COMMIT = "e6499ef7f3db8bba2bcff30e4d636b11d2acc97d"
#: SHA-256 of each shipped prompt file, computed from ``prompt/<file>`` at :data:`PROMPTS_COMMIT`.
PROMPT_SHA256 = {
    "generation_1.txt": "65bf558a2a96d996e89e39a75c36d05a4adc0f0a5b8cb078c92a42b6c2c1bad7",
    "refinement.txt": "8aa17749d0d7f9fe1a85561e3af54aafed84dcb77bc7a052f348750f45ab22d4",
    "assignment.txt": "63718c171e1d396e431edfb2e1a878ab9201e5c65b46bd6a7d2e7312872198c3",
    "correction.txt": "19ef85392d0e4ed1df77d389c7f324e436136fc3128ba60d1feaf0d285cfbf84",
    "seed_1.md": "13fa4c790ad78a93ce33c5f656d38b99a1e68f33ac4e7e4d3aa33b6866a8c687",
}
#: The system message of every request (the authors' ``APIClient.iterative_prompt`` default).
SYSTEM_MESSAGE = "You are a helpful assistant."
#: Topics read from one generation reply at most. The prompt asks for the few top-level topics
#: one document mentions; a reply listing hundreds is not that, and each of them, proposed once
#: among thousands, would fall under the removal threshold (no topic left at all). The first ones
#: are read, the rest left out with a warning.
MAX_TOPICS_PER_REPLY = 20

# The authors' patterns: a generated topic line, a merge line with its originals, an assigned topic.
_GENERATED = re.compile(r"^\[(\d+)\] ([\w\s\+_#-]+):(.+)")
_MERGED = re.compile(r"^\[(\d+)\]([\w\s',_+#\-]+)[^:]*:([\w\s,\.\-\/;']+) \(([^)]+)\)$")
_MERGED_ORIGINAL = re.compile(r"\[(\d+)\]([\w\s',_+#\-]+),?")
_ASSIGNED = re.compile(r"^\[\d+\] ([\w\s\-'\&]+):", re.MULTILINE)
_SEED = re.compile(r"^\[(\d+)\] ([^:]+):?(.*)")


def prompt_text(file_name: str) -> str:
    """A shipped prompt file's text, as the authors wrote it."""
    return resources.files("topicbench.baselines").joinpath("topicgpt_prompts", file_name).read_text(encoding="utf-8")


@dataclass
class Topic:
    """A top-level topic: its label, description and how often generation proposed it."""

    label: str
    description: str
    count: int

    def line(self, *, description: bool = True) -> str:
        """The topic as the prompts show it: ``[1] Label: description`` (or ``[1] Label``)."""
        return f"[1] {self.label}: {self.description}" if description else f"[1] {self.label}"


def seed_topics(text: str) -> list[Topic]:
    """The topics of a seed file (``[1] Label: description`` a line), each at count 0: shown to
    the generator, kept only where it proposes them again (the authors' seed nodes carry no
    description and so are never written to their topic file)."""
    topics = []
    for line in text.splitlines():
        match = _SEED.match(line.strip())
        if match and match.group(1) == "1":
            topics.append(Topic(match.group(2).strip(), match.group(3).strip(), 0))
    return topics


def generation_prompt(template: str, topics: list[Topic], document: str) -> str:
    """The generation prompt: the topics so far by label only (as the authors show them)."""
    return template.format(Topics="\n".join(topic.line(description=False) for topic in topics), Document=document)


def add_generated(topics: list[Topic], reply: str | None) -> int:
    """Read a generation reply into ``topics`` (in place): a top-level topic already listed
    (label compared without case) counts once more, a new one joins with count 1; lines not in
    the format and lower levels are skipped, as the authors skip them, and so are the topics
    after the first :data:`MAX_TOPICS_PER_REPLY` of the reply (a warning says how many). Returns
    how many lines were read as topics."""
    read = left_out = 0
    for line in (reply or "").split("\n"):
        match = _GENERATED.match(line.strip())
        if match is None or int(match.group(1)) != 1:
            continue
        if read == MAX_TOPICS_PER_REPLY:
            left_out += 1
            continue
        read += 1
        label, description = match.group(2).strip(), match.group(3).strip()
        same = [topic for topic in topics if topic.label.lower() == label.lower()]
        if same:
            same[0].count += 1
        else:
            topics.append(Topic(label, description, 1))
    if left_out:
        logger.warning("a TopicGPT generation reply listed %d topics for one document; the first %d were read, %d "
                       "left out (the prompt asks for the few topics a document mentions)", read + left_out, read,
                       left_out)
    return read


def similar_pairs(similarity, lines: list[str], asked: list, threshold: float, pairs: int = 2) -> list[str]:
    """The authors' ``topic_pairs``: the ``pairs`` most similar topic pairs above ``threshold``
    not asked before (``asked`` grows in place), flattened to their lines."""
    n = len(lines)
    scored = sorted(((float(similarity[i][j]), i, j) for i in range(n) for j in range(i + 1, n)), key=lambda s: -s[0])
    chosen = []
    for score, i, j in scored:
        if len(chosen) >= pairs:
            break
        pair = sorted([lines[i], lines[j]])
        if score > threshold and pair not in asked:
            chosen.append((lines[i], lines[j]))
            asked.append(pair)
    return [line for pair in chosen for line in pair]


def apply_merges(topics: list[Topic], reply: str | None) -> list[Topic]:
    """Read a refinement reply (``[1] New label: description ([1] Old, [1] Other)`` a line)
    and merge: the originals (labels without case) leave the list and their counts go to the new
    label, added at the end or added to a topic of that label. A line naming no listed topic
    changes nothing. Returns the new list."""
    topics = list(topics)
    for line in (reply or "").split("\n"):
        match = _MERGED.match(line.strip())
        if match is None:
            continue
        label, description = match.group(2).strip(), match.group(3).strip()
        originals = {found[1].strip(", ").lower() for found in _MERGED_ORIGINAL.findall(match.group(4))}
        merged = [topic for topic in topics if topic.label.lower() in originals]
        if not merged:
            continue
        total = sum(topic.count for topic in merged)
        topics = [topic for topic in topics if topic not in merged]
        existing = next((topic for topic in topics if topic.label == label), None)
        if existing is not None:
            existing.count += total
        else:
            topics.append(Topic(label, description, total))
    return topics


def drop_rare(topics: list[Topic], threshold: float) -> list[Topic]:
    """The authors' ``remove_topics``: drop topics proposed less often than ``threshold`` times
    the total count (and, here, topics never proposed: seeds the generator did not return).

    Raises
    ------
    ModelError
        Topics were proposed but every one of them falls under the threshold (each proposed about
        once among many): said as such, not as no topic in the format.
    """
    total = sum(topic.count for topic in topics)
    kept = [topic for topic in topics if topic.count > 0 and topic.count >= total * threshold]
    proposed = [topic for topic in topics if topic.count > 0]
    if proposed and not kept:
        raise ModelError(f"TopicGPT: each of the {len(proposed)} topics the LLM proposed was proposed fewer than "
                         f"removal_threshold {threshold:g} x {total} = {total * threshold:g} times (at most "
                         f"{max(topic.count for topic in proposed)}), so none is kept: lower removal_threshold, or "
                         "sample more documents (sample_size)")
    return kept


def assigned_labels(reply: str | None) -> list[str]:
    """The topic labels an assignment reply names, in order (the authors' ``topic_parser``)."""
    return [label.strip() for label in _ASSIGNED.findall(reply or "")]


def read_assignment(reply: str | None, labels: list[str]) -> tuple[int | None, bool]:
    """(index in ``labels`` of the first listed topic the reply names, or None; whether the reply
    needs the correction prompt: it names no topic, or one not in the list, as the authors'
    ``topic_parser`` flags errors and hallucinations)."""
    named = assigned_labels(reply)
    index = {label: i for i, label in enumerate(labels)}
    first = next((index[label] for label in named if label in index), None)
    return first, not named or any(label not in index for label in named)


def correction_message(previous: str | None) -> str:
    """The authors' message to the correction prompt about the previous assignment."""
    return (f"Previously, this document was assigned to: {previous}. Please reassign it to an existing topic "
            "in the hierarchy.")


def excerpt(text: str, words: int) -> str:
    """The document's first ``words`` whitespace-separated words (the prompts' length limit)."""
    parts = text.split()
    return " ".join(parts[:words])
