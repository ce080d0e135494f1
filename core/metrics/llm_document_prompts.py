"""ProxAnn's questions to the judge: its prompts, the requests built from them, and how replies are read.

The prompts are ProxAnn's (Hoyle, Calvo-Bartolomé, Boyd-Graber and Resnik, ACL 2025; code
``ahoho/proxann`` at 3583fa4, each prompt naming its file under ``prompts/``): a topic's category
from its top words and exemplars (``q1``), a document's fit to it, 1 to 5 (``q2_mean``), and which
of two documents is closer to it (``q3_mean``). A score or a choice is read from the first token's
log-probabilities where the endpoint returns them, else from the reply's text, and a category
only where it reads as a label (:func:`parse_label`: "I am not sure." is none);
:func:`is_document_answer` tells :mod:`.llm_judging` which replies answer, so that a non-answer is
asked again and never cached. What is shown, and how the answers are scored against θ, is
:mod:`.llm_documents`'s job.
"""

from __future__ import annotations

import math
import re

from .llm_judging import ANSWER_CHECKS, JudgeReply, JudgeRequest, JudgeSettings

#: ProxAnn's q1 system prompt (``prompts/q1/system_prompt.txt``).
LABEL_SYSTEM_PROMPT = (
    "You are a helpful AI assistant tasked with creating descriptive labels for a set of keywords and a group of "
    "documents, each focused on a common topic, as similar as possible to how a human would do. The goal is to "
    "provide meaningful, concise labels that capture the central theme or key concepts represented by the keywords "
    "and documents."
)
#: ProxAnn's q1 question (``prompts/q1/instructions_question_prompt.txt``) without its examples.
LABEL_PROMPT = (
    "You will be provided with a set of keywords and a group of documents, each centered around a common topic. "
    "Your task is to analyze both the keywords and the content of the documents to create a clear, concise label "
    "that accurately reflects the overall theme they share.\n\nTask Breakdown:\n"
    "1. Examine the Keywords: Use the keywords as clues to identify the general subject area or themes present in "
    "the documents.\n"
    "2. Review the Documents: Skim the summaries provided to understand their main ideas and any recurring elements.\n"
    "3. Generate a Label: Based on the keywords and document content, come up with a single label that best "
    "describes the topic connecting all the documents.\n\n"
    "KEYWORDS: {keywords}\nDOCUMENTS: {documents}\n"
    "Based on the keywords and document content, come up with a single category that best describes the topic "
    "connecting all the documents. Return just the category.\nCATEGORY:"
)
#: ProxAnn's q2 prompts (``prompts/q2_mean/``).
FIT_SYSTEM_PROMPT = (
    "You are a helpful AI assistant tasked with determining if a document fits a given category, aiming to make "
    "judgments closely aligned with human reasoning."
)
FIT_PROMPT = (
    "Please act as an impartial judge and assign an integer score from 1 to 5 indicating how well the DOCUMENT fits "
    "the given CATEGORY. Do not provide any reasoning or explanation\n\n"
    "[[ ## CATEGORY ## ]]\n{category}\n\n[[ ## DOCUMENT ## ]]\n{document}"
)
#: ProxAnn's q3 prompts (``prompts/q3_mean/``).
RANK_SYSTEM_PROMPT = (
    "You are a helpful AI assistant tasked with comparing pairs of documents within a given category. Your goal is "
    "to determine which document in each pair is more closely related to the category, aiming to make judgments as "
    "closely aligned with human reasoning as possible."
)
RANK_PROMPT = (
    "Please act as an impartial judge and determine which of the two documents (A or B) is more closely related to "
    "the given CATEGORY. Avoid any positional bias, and ensure that the order in which the documents are presented "
    "does not influence your decision. Output your verdict strictly using this format: 'A' if DOCUMENT_A is more "
    "closely related to the CATEGORY, or 'B' if DOCUMENT_B is more closely related.\n\n"
    "[[ ## CATEGORY ## ]]\n{category}\n\n[[ ## DOCUMENT_A ## ]]\n{doc_a}\n\n[[ ## DOCUMENT_B ## ]]\n{doc_b}"
)
FIT_SCORES = ("1", "2", "3", "4", "5")
#: Reply token limits: a category, a score, a letter.
LABEL_TOKENS, FIT_TOKENS, RANK_TOKENS = 24, 5, 5
#: Top words shown with the exemplars (ProxAnn: 10).
LABEL_WORDS = 10
#: Tokens kept for what a chat template adds around the messages (role markers, separators).
TEMPLATE_TOKENS = 32


# -- what is asked ------------------------------------------------------------------------------


def _temperature(settings: JudgeSettings, sample: int) -> float:
    return 0.0 if sample == 0 else settings.temperature  # ProxAnn asks at 0; further samples vary


def label_request(shown, excerpts, settings: JudgeSettings, sample: int = 0) -> JudgeRequest:
    """The category question of a topic: its top words (``shown.words``, of a
    :class:`~.llm_documents.TopicDocuments`) and its exemplars' excerpts."""
    documents = "".join(f"\n- {text}" for text in excerpts)
    user = LABEL_PROMPT.format(keywords=" ".join(shown.words), documents=documents)
    return JudgeRequest("label", (("system", LABEL_SYSTEM_PROMPT), ("user", user)), max_tokens=LABEL_TOKENS,
                        sample=sample, temperature=_temperature(settings, sample))


def fit_request(category: str, document: str, settings: JudgeSettings, sample: int = 0) -> JudgeRequest:
    """How well one document fits the category, 1 to 5."""
    user = FIT_PROMPT.format(category=category, document=document)
    return JudgeRequest("fit", (("system", FIT_SYSTEM_PROMPT), ("user", user)), max_tokens=FIT_TOKENS,
                        sample=sample, temperature=_temperature(settings, sample))


def rank_request(category: str, doc_a: str, doc_b: str, settings: JudgeSettings, sample: int = 0) -> JudgeRequest:
    """Which of two documents is more closely related to the category."""
    user = RANK_PROMPT.format(category=category, doc_a=doc_a, doc_b=doc_b)
    return JudgeRequest("rank", (("system", RANK_SYSTEM_PROMPT), ("user", user)), max_tokens=RANK_TOKENS,
                        sample=sample, temperature=_temperature(settings, sample))


# -- reading replies ----------------------------------------------------------------------------


#: A category is a concise label (ProxAnn asks for "a clear, concise label" and "just the category",
#: within :data:`LABEL_TOKENS`): at most this many words and characters; longer is prose.
LABEL_MAX_WORDS, LABEL_MAX_CHARACTERS = 12, 100
#: Replies that decline to name a category, wherever they appear in the line ("I am not sure",
#: "cannot determine") or as the whole line ("N/A", "none", "unknown").
_NON_ANSWER = re.compile(
    r"\b(?:not\s+sure|unsure|(?:don't|do\s+not|does\s+not|doesn't)\s+know|no\s+idea|(?:cannot|can't|can\s+not|"
    r"unable\s+to|impossible\s+to|hard\s+to|difficult\s+to)\s+(?:determine|tell|say|identify|decide|label|"
    r"categori[sz]e)|cannot\s+be\s+determined|not\s+(?:enough|sufficient)\s+information|insufficient\s+"
    r"information|sorry|as\s+an\s+ai|language\s+model)\b", re.IGNORECASE)
_NON_ANSWER_LINE = re.compile(r"(?:n/?a|none|null|nothing|unknown|unclear|undetermined|undefined|not\s+applicable|"
                              r"no\s+(?:category|label|topic|answer))", re.IGNORECASE)
#: Words of a clause, never of a label: a speaker ("I am", "I'm", "we", "you") or a verb phrase
#: ("is not", "here's"). A bare "I" is not one of them: "World War I" and "Title I" are labels.
_CLAUSE = re.compile(
    r"^(?:I|we|you)\s|\b(?:I'm|I've|I'd|we're|you're|it's|here's|there's|that's|here\s+is|there\s+is|"
    r"(?:is|are|was|were|am)\s+(?:not|no|a|an|the|about|unclear|difficult|hard|impossible))\b", re.IGNORECASE)


def parse_label(text: str | None) -> str | None:
    """The category a reply names: its first non-empty line, without a leading "CATEGORY:",
    quotes or markup, when that looks like a label; None otherwise (a non-answer, asked again
    and never cached).

    ProxAnn's prompt asks for "a clear, concise label" and to "return just the category", so a
    label is a short noun phrase: at most :data:`LABEL_MAX_WORDS` words and
    :data:`LABEL_MAX_CHARACTERS` characters with a letter in it; not a question (ending in
    "?"); not a sentence (the words of a clause, such as "I am", "I'm", "it's", "is not", or a
    line ending in "." or "!" of more than six words); and not a refusal or hedge ("I am not
    sure", "I don't know", "cannot determine", "sorry", or the whole line "N/A", "none",
    "unknown", "no category"). "Farming." and "Title I funding" are labels; "I am not sure."
    is not.
    """
    for line in (text or "").splitlines():
        cleaned = re.sub(r"^\s*(?:\*\*)?category(?:\*\*)?\s*:\s*", "", line, flags=re.IGNORECASE)
        cleaned = cleaned.strip().strip("\"'`*#").strip()
        if cleaned:
            return cleaned if _is_label(cleaned) else None
    return None


def _is_label(line: str) -> bool:
    words = line.split()
    if len(words) > LABEL_MAX_WORDS or len(line) > LABEL_MAX_CHARACTERS or not re.search(r"[^\W\d_]", line):
        return False
    if line.endswith("?") or (line.endswith((".", "!")) and len(words) > 6):
        return False
    bare = line.rstrip(".!").strip()
    return not (_NON_ANSWER.search(line) or _NON_ANSWER_LINE.fullmatch(bare) or _CLAUSE.search(line))


def parse_fit(text: str | None) -> int | None:
    """The score a reply gives: its only standalone 1 to 5 ("4", "Score: 2."); None otherwise."""
    found = re.findall(r"(?<![\d.])([1-5])(?!\d|\.\d)", text or "")
    return int(found[0]) if found and len(set(found)) == 1 else None


def expected_fit(top_logprobs) -> float | None:
    """The expected score under the first token's probabilities of "1" to "5", renormalised over
    the five; None when none of them is among the top log-probabilities."""
    probabilities = _choice_probabilities(top_logprobs, FIT_SCORES)
    if probabilities is None:
        return None
    return sum((k + 1) * p for k, p in enumerate(probabilities)) / sum(probabilities)


def parse_choice(text: str | None) -> str | None:
    """The document a ranking reply picks, "A" or "B" ("A", "'B'.", "Document A"); None otherwise."""
    match = re.fullmatch(r"\W*(?:document[ _]?)?([AB])\W*", (text or "").strip(), flags=re.IGNORECASE)
    return match.group(1).upper() if match else None


def choice_probabilities(top_logprobs) -> tuple | None:
    """(p(A), p(B)) of the first token, each summed over its spellings (" A", "a"); None when
    neither is among the top log-probabilities."""
    return _choice_probabilities(top_logprobs, ("a", "b"))


def _choice_probabilities(top_logprobs, choices) -> tuple | None:
    sums = dict.fromkeys(choices, 0.0)
    for token, logprob in top_logprobs or ():
        key = re.sub(r"[^\w]", "", str(token)).lower()
        if key in sums and logprob is not None and math.isfinite(logprob):
            sums[key] += math.exp(float(logprob))
    return tuple(sums.values()) if any(sums.values()) else None


def is_document_answer(request: JudgeRequest, reply: JudgeReply) -> bool:
    """Whether ``reply`` answers a document-level question (a category, a score, a choice)."""
    if reply.error is not None:
        return False
    if request.task == "label":
        return parse_label(reply.text) is not None
    if request.task == "fit":
        return expected_fit(reply.top_logprobs) is not None or parse_fit(reply.text) is not None
    return choice_probabilities(reply.top_logprobs) is not None or parse_choice(reply.text) is not None


# registered where the questions are built, so before any is asked (llm_judging.is_answer reads it)
ANSWER_CHECKS.update(dict.fromkeys(("label", "fit", "rank"), is_document_answer))

