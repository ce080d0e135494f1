"""ProxAnn's study questions asked of a scripted judge: answers map back to the documents people
rated, and score beside people's."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from topicbench.core.metrics.llm_judging import JudgeReply, JudgeSettings
from topicbench.core.metrics.proxann_agreement import judge_topic_agreement
from topicbench.core.metrics.proxann_questions import study_answers, study_questions

THETA = (0.9, 0.6, 0.3, 0.1)


class ScriptedJudge:
    """Answers as a reader who likes documents by the number in their text ("doc 3": fit 3):
    a category for every topic but ``silent``, the expected fit from log-probabilities, and in a
    pair the document with the larger number."""

    def __init__(self, silent=()):
        self.silent = set(silent)
        self.asked = []

    def ask(self, requests):
        self.asked.extend(requests)
        return [self._reply(request) for request in requests]

    def _reply(self, request):
        user = request.messages[-1][1]
        if request.task == "label":
            return JudgeReply(None if any(word in user for word in self.silent) else "CATEGORY: farm bills")
        numbers = [int(n) for n in re.findall(r"doc (\d)", user)]
        if request.task == "fit":
            return JudgeReply(str(numbers[0]), (("1", -9.0), (str(numbers[0]), -0.01)))
        return JudgeReply("A" if numbers[0] > numbers[1] else "B")


def _study():
    topics = pd.DataFrame({"topic": ["bills-labeled/ctm/1", "bills-labeled/ctm/2"],
                           "words": [("farm", "crop"), ("tax", "credit")]})
    rows = []
    for topic, words in zip(topics["topic"], topics["words"]):
        rows.append({"topic": topic, "role": "exemplar", "position": 0, "text": f"{words[0]} exemplar", "theta": 0.95})
        rows += [{"topic": topic, "role": "evaluation", "position": p, "text": f"doc {4 - p} about {words[0]}",
                  "theta": theta, "assigned": int(theta > 0.5)} for p, theta in enumerate(THETA)]
    return topics, pd.DataFrame(rows)


def test_answers_map_back_to_the_rated_documents():
    topics, documents = _study()
    judge = ScriptedJudge()
    settings = JudgeSettings(exemplar_documents=1, evaluation_documents=4)
    questions = study_questions(topics, documents, judge, settings)
    assert [q.category for q in questions] == ["farm bills", "farm bills"]
    answers = study_answers(topics, questions, judge, settings)
    first = answers[answers["topic"] == "bills-labeled/ctm/1"]
    assert first["position"].tolist() == [0, 1, 2, 3]
    assert first["fit"].tolist() == pytest.approx([4, 3, 2, 1], abs=1e-3)  # expected over "1" and the score
    assert first["rank"].tolist() == [4.0, 3.0, 2.0, 1.0]  # 4 = most related
    asked = pd.Series([request.task for request in judge.asked]).value_counts().to_dict()
    assert asked == {"label": 2, "fit": 8, "rank": 24}  # 6 pairs x 2 orders x 2 topics
    people = pd.DataFrame([{"topic": t, "response": r, "position": p, "fit": 4 - p, "rank": p + 1}
                           for t in topics["topic"] for r in (0, 1) for p in range(4)])
    agreement = judge_topic_agreement(answers, people, documents[documents["role"] == "evaluation"])
    assert agreement["fit_tau"].tolist() == pytest.approx([1.0, 1.0])
    assert agreement["rank_tau_people"].tolist() == pytest.approx([1.0, 1.0])


def test_a_topic_without_a_category_has_no_answers():
    topics, documents = _study()
    judge = ScriptedJudge(silent=("tax",))
    settings = JudgeSettings(exemplar_documents=1, evaluation_documents=4, retries=1)
    questions = study_questions(topics, documents, judge, settings)
    assert [q.category for q in questions] == ["farm bills", None]
    answers = study_answers(topics, questions, judge, settings)
    assert answers[answers["topic"] == "bills-labeled/ctm/2"][["fit", "rank"]].isna().all().all()
    assert sum(request.task == "label" for request in judge.asked) == 3  # the silent topic asked again once
