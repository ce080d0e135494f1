"""Text in reports: what a user named (an experiment, a corpus, a label, a corpus's words, an
error) is shown as given, never read as markup.

Every piece of text a report shows is plain text, unless it is a :class:`Markdown` paragraph this
project wrote, whose user text is marked as :class:`Text` or :class:`Code`. The Markdown renderer
writes plain text with :func:`markdown_text`; the HTML renderer with :func:`display_text` and
``html.escape``; both show the same characters. :func:`display_text` is what both share: a word
longer than :data:`LONGEST_WORD` is shortened with an ellipsis, and a bidirectional control
character (which reorders the text shown around it: "Trojan Source") is shown as its code point.

:func:`markdown_text` escapes what would change the meaning of Markdown (CommonMark and GitHub's
extensions): ``<``, ``>`` and ``&`` as entities (raw HTML, autolinks); and a backslash before a
backslash, a backtick, ``*``, ``[``, ``]``, ``#``, ``|`` (a table cell's end), ``~``
(strikethrough), ``$`` (GitHub's maths), a URL scheme's ``:`` (``javascript:``) and an ``_`` that
can open or close emphasis (one between two letters or digits cannot). With every ``[`` and ``]``
escaped, a ``(`` or ``!`` can start no link or image (a link needs an unescaped ``](``), so those
stay as they are, and so do numbers such as ``-0.40 (N=5)``. A line break becomes a space (Markdown shows it as
one; in a table it would end the row); a paragraph's first character is escaped where it would
start a list, a heading or a quote (:func:`markdown_paragraph`).
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

#: The longest word shown whole; a longer one is cut to this many characters, the last an ellipsis.
LONGEST_WORD = 80
ELLIPSIS = "…"
#: Bidirectional embedding, override and isolate controls, and the implicit direction marks.
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_LONG_WORD = re.compile(rf"\S{{{LONGEST_WORD + 1},}}")
_LINE_BREAKS = re.compile("[\r\n\v\f\x85\u2028\u2029]+")
#: Characters a backslash makes literal wherever they are (besides ``_`` and a scheme's ``:``).
_ALWAYS_ESCAPED = frozenset("\\`*[]#|~$")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: A URL scheme's colon (``javascript:x``, ``https://``): the scheme at a word's start, text after it.
_SCHEME_COLON = re.compile(r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]*:(?=\S)")
#: What a paragraph must not start with: a list item, a heading, a quote, a setext underline.
_BLOCK_START = re.compile(r"^(\d{1,9})([.)])|^([-+=])")


def neutral_bidi(text: str) -> str:
    """``text`` with each bidirectional control character shown as its code point (``⟨U+202E⟩``)."""
    return BIDI_CONTROLS.sub(lambda match: f"⟨U+{ord(match.group()):04X}⟩", text)


def visible_controls(text) -> str:
    """``text`` with every control or format character (Unicode Cc and Cf: bidirectional controls,
    zero-width characters, line breaks, escape) shown as its code point, as an HTML attribute or a
    table header must show it: there no character may reorder, hide or break what follows."""
    return "".join(f"⟨U+{ord(c):04X}⟩" if unicodedata.category(c) in ("Cc", "Cf") else c for c in str(text))


def html_attribute(text) -> str:
    """``text`` for an HTML attribute's value (``title="..."``): controls visible, quotes escaped."""
    return html.escape(visible_controls(text), quote=True)


def display_text(text) -> str:
    """``text`` as a report shows it: bidirectional controls as their code points, each word
    longer than :data:`LONGEST_WORD` characters cut with an ellipsis."""
    text = neutral_bidi(str(text))
    return _LONG_WORD.sub(lambda match: match.group()[:LONGEST_WORD - 1] + ELLIPSIS, text)


def _escaped_character(text: str, index: int, scheme_colons: set) -> str:
    character = text[index]
    if character in _ENTITIES:
        return _ENTITIES[character]
    if character in _ALWAYS_ESCAPED or index in scheme_colons:
        return "\\" + character
    if character == "_":
        before = text[index - 1] if index > 0 else ""
        after = text[index + 1] if index + 1 < len(text) else ""
        inside_a_word = before.isalnum() and after.isalnum()  # CommonMark: no emphasis there
        return character if inside_a_word else "\\_"
    return character


def markdown_text(text) -> str:
    """``text`` as Markdown that shows exactly ``text`` (as :func:`display_text` does), on one line."""
    text = _LINE_BREAKS.sub(" ", display_text(text))
    scheme_colons = {match.end() - 1 for match in _SCHEME_COLON.finditer(text)}
    return "".join(_escaped_character(text, index, scheme_colons) for index in range(len(text)))


def markdown_paragraph(markdown: str) -> str:
    """A paragraph of Markdown that cannot start another kind of block: a first ``-``, ``+``,
    ``=`` or ``1.`` is escaped (``#`` and ``>`` are escaped everywhere already)."""
    markdown = markdown.lstrip()
    return _BLOCK_START.sub(lambda m: f"{m.group(1)}\\{m.group(2)}" if m.group(1) else f"\\{m.group(3)}", markdown,
                            count=1)


def _backtick_fence(text: str, shortest: int) -> str:
    longest_run = max((len(run) for run in re.findall("`+", text)), default=0)
    return "`" * max(shortest, longest_run + 1)


def markdown_code(text) -> str:
    """``text`` as an inline code span showing it verbatim (a command to copy: not shortened),
    its fence longer than any run of backticks in it; bidirectional controls as their code points."""
    text = _LINE_BREAKS.sub(" ", neutral_bidi(str(text)))
    fence = _backtick_fence(text, 1)
    padding = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def markdown_code_block(text) -> str:
    """``text`` (lines kept) as a fenced code block that shows it verbatim."""
    text = neutral_bidi(str(text))
    fence = _backtick_fence(text, 3)
    return f"{fence}text\n{text}\n{fence}\n"


@dataclass(frozen=True)
class Text:
    """User text inside a :class:`Markdown` paragraph, shown as plain text."""

    value: str


@dataclass(frozen=True)
class Code:
    """User text inside a :class:`Markdown` paragraph, shown verbatim as code (a command)."""

    value: str


@dataclass(frozen=True)
class Markdown:
    """A paragraph written in Markdown by this project, with user text in it kept as text.

    ``Markdown("**", Text(model), " has not been calibrated.** Run ", Code(command), ".")``: the
    ``str`` parts are Markdown, :class:`Text` and :class:`Code` parts are what a user named.
    """

    parts: tuple

    def __init__(self, *parts):
        object.__setattr__(self, "parts", parts)

    def to_markdown(self) -> str:
        return "".join(markdown_text(part.value) if isinstance(part, Text) else
                       markdown_code(part.value) if isinstance(part, Code) else part for part in self.parts)

    def to_html(self) -> str:
        """The paragraph's HTML: its Markdown parts' ``**`` as bold (the only mark this project's
        paragraphs use; a bold span may enclose user text), the user's text as text, code as
        ``<code>``."""
        pieces, bold = [], False
        for part in self.parts:
            if isinstance(part, Text):
                pieces.append(html.escape(display_text(part.value)))
            elif isinstance(part, Code):
                pieces.append(f"<code>{html.escape(neutral_bidi(str(part.value)))}</code>")
            else:
                for index, piece in enumerate(part.split("**")):
                    if index:
                        pieces.append("</strong>" if bold else "<strong>")
                        bold = not bold
                    pieces.append(html.escape(piece))
        return "".join(pieces) + ("</strong>" if bold else "")

    def __str__(self) -> str:
        return "".join(str(part.value) if isinstance(part, (Text, Code)) else part for part in self.parts)


def to_markdown(text) -> str:
    """Any text of a report as Markdown: a :class:`Markdown` paragraph as written, anything else
    as plain text (:func:`markdown_text`)."""
    return text.to_markdown() if isinstance(text, Markdown) else markdown_text(text)


def to_html(text) -> str:
    """Any text of a report as HTML: a :class:`Markdown` paragraph's :meth:`Markdown.to_html`,
    anything else escaped as shown (:func:`display_text`)."""
    return text.to_html() if isinstance(text, Markdown) else html.escape(display_text(text))
