"""What a search chose: each model's setting by the one-standard-error rule over its study's
finished trials, the recommendation across the models of a corpus (with its runners-up within
noise and every trial that beats it on some objective), and the configs with the chosen settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from topicbench.core.metrics.stats import ALPHA, DETERMINISTIC, seed_interval
from topicbench.core.search_space import STABILITY, point_complexity, point_label, point_model, point_text
from topicbench.core.selection import PointSummary, beyond_noise, one_standard_error_choice, summarise_scores
from topicbench.tasks.report.study import chosen_config_name
from topicbench.tasks.search.study import ModelStudy
from topicbench.tasks.search.trial_results import fit_topics

from topicbench.flows.config.model import BenchmarkConfig
from .search_plan import SearchPlan

#: Seeds per point below which a standard error rests on too few values for the one-standard-error
#: rule (and "within noise") to mean much: with two, the se is |x₁ − x₂| / 2, itself very noisy.
FEW_SEEDS = 3


# -- choosing each model's setting ----------------------------------------------------------------


@dataclass(frozen=True)
class ModelChoice:
    """The setting chosen for one (corpus, model) and why.

    Attributes
    ----------
    corpus, label : str
    point : dict or None
        The chosen point (None: no trial finished).
    best : dict or None
        The point with the best mean of the first objective.
    rule : str
        Why this point, in a sentence.
    messages : tuple of str
        Warnings (the choice on the space's edge, failed seeds, one point).
    trials : list of dict
        Every finished trial: number, state, point, objective means and sds, seeds, run ids, fit seconds.
    topics : tuple of str
        The chosen fit's topics (its first finished seed's), each its top words; empty where not read.
    topics_seed : int or None
        The seed whose fit ``topics`` are.
    searched_topics : tuple of SearchedTopics
        The topics at each value of the first searched dimension (each K, where K is searched):
        there the chosen trial, or else the trial with the best mean first objective; in the
        dimension's order. Empty where not read.
    """

    corpus: str
    label: str
    point: dict | None
    best: dict | None
    rule: str
    messages: tuple
    trials: list
    topics: tuple = ()
    topics_seed: int | None = None
    searched_topics: tuple = ()


@dataclass(frozen=True)
class SearchedTopics:
    """A searched fit's topics, so a reader sees what each K found: the trial's ``point``, whether
    it is the ``chosen`` one, the ``seed`` whose fit they are (its first finished) and ``topics``,
    each its top words in one string."""

    point: dict
    chosen: bool
    seed: int
    topics: tuple


def choose(plan: SearchPlan, corpus: str, label: str, study: ModelStudy) -> ModelChoice:
    """The one-standard-error choice over the study's finished trials, by the first objective."""
    primary = plan.objectives[0]
    trials = [_trial_row(plan, trial) for trial in study.finished_trials()]
    scored = [row for row in trials if row["state"] == "COMPLETE"]
    if not scored:
        return ModelChoice(corpus, label, None, None, "no trial finished: every fit failed", (), trials)
    if len(scored) == 1:
        point = scored[0]["point"]
        return ModelChoice(corpus, label, point, point, "a single point was searched", (), trials)
    if primary.key == STABILITY and all(row["deterministic"] for row in scored):
        point = min((row["point"] for row in scored), key=point_complexity)
        return ModelChoice(corpus, label, point, None, f"stability does not apply ({DETERMINISTIC}: its seeds gave "
                           "the same fit, so no setting is more stable than another); the simplest point searched",
                           (), trials)
    points = [(row["point"], row["per_seed"][primary.key]) for row in scored]
    choice = one_standard_error_choice(points, higher_is_better=primary.higher_is_better, complexity=point_complexity,
                                       log_messages=False)  # the command prints them under the model's choice
    best = choice.summary(choice.best)
    direction = "above" if primary.higher_is_better else "below"
    rule = (f"the simplest point whose mean {primary.key} is within one standard error of the best "
            f"(best mean {best.mean:.4g}, se {best.se:.2g}, at {point_text(choice.best)}: {direction} {choice.threshold:.4g})"
            if choice.rule_applied else f"the best mean {primary.key} ("
            + (f"{DETERMINISTIC}: no standard error)" if best.deterministic else "one seed: no standard error)"))
    return ModelChoice(corpus, label, dict(choice.choice), dict(choice.best), rule, tuple(choice.messages), trials)


def _trial_row(plan: SearchPlan, trial) -> dict:
    per_seed = {key: [math.nan if v is None else v for v in values]
                for key, values in trial.user_attrs.get("per_seed", {}).items()}
    row = {"number": trial.number, "state": trial.state.name, "point": dict(trial.params), "per_seed": per_seed,
           "seeds": trial.user_attrs.get("seeds", []), "run_ids": trial.user_attrs.get("run_ids", []),
           "fit_seconds": trial.user_attrs.get("fit_seconds", []),
           "deterministic": bool(trial.user_attrs.get("deterministic", False))}
    for objective in plan.objectives:
        values = [v for v in per_seed.get(objective.key, []) if math.isfinite(v)]
        row[objective.key] = sum(values) / len(values) if values else math.nan
    if row["state"] == "FAIL" and row["deterministic"] and all(
            math.isfinite(row[o.key]) for o in plan.objectives if o.key != STABILITY):
        row["state"] = "COMPLETE"  # failed in the study only for a stability that does not apply to identical fits
    return row


def seed_warnings(seeds) -> tuple:
    """What holds for every choice of a search over ``seeds``: too few seeds make its standard errors loose."""
    if len(seeds) >= FEW_SEEDS or len(seeds) < 2:  # one seed: each choice says it has no standard error
        return ()
    return (f"{len(seeds)} seeds per point: each standard error rests on {len(seeds)} values, so the "
            "one-standard-error rule and 'within noise' are loose (a lucky pair of seeds decides); "
            f"run {FEW_SEEDS} or more seeds (e.g. --seeds {' '.join(map(str, range(FEW_SEEDS)))}) before trusting a choice",)


def with_chosen_topics(client, choice: ModelChoice, objective=None) -> ModelChoice:
    """``choice`` with the topics of its chosen fit and, given the first ``objective``, of a fit
    at each value of the first searched dimension (:func:`trials_per_value`), each its first
    finished seed's, read from the store."""
    chosen = chosen_trial(choice)
    searched = []
    for trial in trials_per_value(choice, objective) if objective is not None else [chosen] if chosen else []:
        found = _first_topics(client, trial)
        if found is not None:
            searched.append(SearchedTopics(dict(trial["point"]), trial is chosen, *found))
    mine = next((item for item in searched if item.chosen), None)  # None: its topics could not be read
    return replace(choice, topics=mine.topics if mine else (), topics_seed=mine.seed if mine else None,
                   searched_topics=tuple(searched))


def _first_topics(client, trial: dict) -> tuple | None:
    """(seed, topics) of the trial's first finished seed whose topics can be read, else None."""
    for seed, run_id in zip(trial["seeds"], trial["run_ids"]):
        topics = fit_topics(client, run_id)
        if topics is not None:
            return seed, tuple(topics)
    return None


def trials_per_value(choice: ModelChoice, objective) -> list:
    """One finished trial per value of the first searched dimension (K where it is searched), in
    its order: the chosen trial at its value, the best mean ``objective`` at every other."""
    complete = [t for t in choice.trials if t["state"] == "COMPLETE"]
    if not complete:
        return []
    chosen, dimension = chosen_trial(choice), next(iter(complete[0]["point"]), None)
    groups = {}
    for trial in complete:
        groups.setdefault(trial["point"].get(dimension), []).append(trial)
    sign = 1.0 if objective.higher_is_better else -1.0

    def merit(trial):
        values = [v for v in trial["per_seed"].get(objective.key, []) if math.isfinite(v)]
        return sign * sum(values) / len(values) if values else -math.inf

    picked = [chosen if chosen in members else max(members, key=merit) for members in groups.values()]
    return sorted(picked, key=lambda t: (isinstance(t["point"].get(dimension), str), t["point"].get(dimension)))


def chosen_trial(choice: ModelChoice) -> dict | None:
    """The finished trial at the choice's point (None where nothing was chosen)."""
    return next((t for t in choice.trials if t["state"] == "COMPLETE" and t["point"] == choice.point), None)


# -- recommending across models -------------------------------------------------------------------


@dataclass(frozen=True)
class Recommendation:
    """What to use on one corpus, across its models.

    Each model stands at its chosen setting (the one-standard-error rule, :func:`choose`); the
    recommendation is the one with the best mean of the first objective. A runner-up is not told
    apart from it by Welch's t-test over seeds at α = 0.05 (:func:`~topicbench.core.selection.beyond_noise`,
    the report's test; against a deterministic model, the one-sample t of the other's seeds). A
    disagreement is a trial of any model and setting that beats the recommendation on some
    objective by that test.

    Attributes
    ----------
    corpus, objective : str
        The corpus; the objective that decides (the first).
    label : str or None
        The recommended model (None: no model has a finished trial).
    point : dict or None
        Its chosen setting.
    summary : PointSummary or None
        Its first objective over seeds.
    runners_up : tuple of (label, point, PointSummary)
        Models within noise of it, best first.
    undecided : tuple of (label, point, PointSummary)
        Models it cannot be tested against: one finite score on a side, or both deterministic.
    disagreements : tuple of str
        One sentence per trial that beats it on some objective beyond noise (its best on each).
    """

    corpus: str
    objective: str
    label: str | None
    point: dict | None
    summary: PointSummary | None
    runners_up: tuple = ()
    undecided: tuple = ()
    disagreements: tuple = ()

    @property
    def rule(self) -> str:
        return (f"each model at its chosen setting; of these, the best mean {self.objective}; a runner-up is not "
                f"told apart from it by Welch's t-test over seeds at α = {ALPHA:g} (against a deterministic model, the "
                "one-sample t of the other's seeds); ± is the half-width of the 95% Student-t interval over the seeds")

    def headline(self) -> str:
        """The recommendation in a line, e.g. ``use gibbs_lda at K=10 (npmi@10 mean 0.12 ± 0.025, 95% Student-t
        interval, n = 3 seeds)``."""
        if self.label is None:
            return "no recommendation: no model has a finished trial"
        text = f"use {self.label} at {point_text(self.point)} ({self.objective} {_mean_se(self.summary)})"
        if self.runners_up:
            text += "; within noise of it: " + ", ".join(f"{label} at {point_text(point)} ({_mean_se(summary)})"
                                                        for label, point, summary in self.runners_up)
        if self.undecided:
            text += "; not testable against it (one seed, or both deterministic): " + ", ".join(
                f"{label} at {point_text(point)}" for label, point, _ in self.undecided)
        return text


def recommend(plan: SearchPlan, choices: list) -> Recommendation:
    """The :class:`Recommendation` across the ``choices`` of one corpus."""
    primary = plan.objectives[0]
    corpus = choices[0].corpus if choices else ""
    standing = []
    for choice in choices:
        trial = chosen_trial(choice)
        if trial is not None and trial["per_seed"].get(primary.key):
            summary = summarise_scores(choice.point, trial["per_seed"][primary.key])
            if summary.n:
                standing.append((choice.label, choice.point, summary))
    if not standing:
        return Recommendation(corpus, primary.key, None, None, None)
    sign = 1.0 if primary.higher_is_better else -1.0
    standing.sort(key=lambda item: -sign * item[2].mean)  # stable: ties keep the config's order
    label, point, summary = standing[0]
    runners_up, undecided = [], []
    for other in standing[1:]:
        separated = beyond_noise(summary, other[2], higher_is_better=primary.higher_is_better)
        if separated is None:
            undecided.append(other)
        elif not separated:
            runners_up.append(other)
    disagreements = _disagreements(plan, choices, label, point)
    return Recommendation(corpus, primary.key, label, point, summary, tuple(runners_up), tuple(undecided), disagreements)


def _disagreements(plan: SearchPlan, choices: list, label: str, point: dict) -> tuple:
    """Per trial that beats the recommendation (``label`` at ``point``) beyond noise on some
    objective, a sentence naming the objectives (each objective's best such trial only)."""
    trials = [(c.label, t) for c in choices for t in c.trials if t["state"] == "COMPLETE"]
    recommended = next(t for name, t in trials if name == label and t["point"] == point)
    beaten = {}
    for objective in plan.objectives:
        ours = summarise_scores(point, recommended["per_seed"].get(objective.key) or [math.nan])
        sign = 1.0 if objective.higher_is_better else -1.0
        better = [(name, trial, summarise_scores(trial["point"], trial["per_seed"][objective.key]))
                  for name, trial in trials if trial is not recommended and trial["per_seed"].get(objective.key)]
        better = [item for item in better
                  if beyond_noise(item[2], ours, higher_is_better=objective.higher_is_better)]
        if better:
            name, trial, theirs = max(better, key=lambda item: sign * item[2].mean)
            beaten.setdefault((name, trial["number"]), (trial, []))[1].append(
                f"{objective.key} ({theirs.mean:.4g} vs {ours.mean:.4g})")
    return tuple(f"{name} at {point_text(trial['point'])} beats it beyond noise on {' and '.join(found)}"
                 for (name, _), (trial, found) in beaten.items())


def _mean_se(summary: PointSummary) -> str:
    """A mean over seeds with its interval labelled (:func:`~topicbench.core.metrics.stats.seed_interval`):
    ``mean 0.12 ± 0.025, 95% Student-t interval, n = 3 seeds``; never an se of 0."""
    interval = seed_interval(summary.scores)
    if interval.has_interval:
        half = interval.high - interval.mean
        return f"mean {summary.mean:.4g} ± {half:.2g}, {interval.level:.0%} Student-t interval, n = {summary.n} seeds"
    seeds = f"{summary.n} seed{'s' if summary.n != 1 else ''}"
    return f"mean {summary.mean:.4g}, " + (f"{DETERMINISTIC} ({seeds})" if interval.deterministic
                                          else f"{seeds}: no interval under 3")


# -- the chosen configs ----------------------------------------------------------------------------


def chosen_configs(config: BenchmarkConfig, choices: list) -> dict:
    """File name -> chosen config (:func:`chosen_config`): ``chosen.yaml`` for a search of one
    corpus; for several, one file per corpus (``chosen-<corpus>.yaml``), each with that corpus
    and its own choices. Not one file: a benchmark fits every model on every corpus, so one
    corpus's choice would be fitted on the others too (fits the search did not make, with a
    sampler) and each corpus's summary would mix settings."""
    corpora = [corpus.name for corpus in config.corpora]
    if len(corpora) == 1:
        return {chosen_config_name(None): chosen_config(config, choices)}
    return {chosen_config_name(corpus): chosen_config(config, choices, corpus) for corpus in corpora}


def chosen_config(config: BenchmarkConfig, choices: list, corpus: str | None = None) -> dict:
    """The benchmark config with each model at its chosen setting on ``corpus`` (where several
    corpora were searched: that corpus alone; None: the config's only corpus), the search block
    left out: ready for ``topicbench run``.

    It keeps the search's experiment, seeds and metrics, and labels each model as its search did
    (``gensim_lda[num_topics=10]``), so each of its runs has the run key of a fit the search
    already finished: ``topicbench run chosen.yaml`` on the same store fits nothing the search
    fitted, and its report finds those runs under the config's labels."""
    data = config.to_dict()
    data.pop("search", None)
    if corpus is not None:
        data["corpora"] = [item for item in data["corpora"] if item["name"] == corpus]
    picked = {choice.label: choice.point for choice in choices if corpus is None or choice.corpus == corpus}
    models = []
    for item in data["models"]:
        label = item.get("label") or item["model"]
        point = picked.get(label) or {}
        num_topics, settings = point_model(item.get("num_topics"), item.get("settings") or {}, point)
        models.append({key: value for key, value in {**item, "label": point_label(label, point), "num_topics": num_topics,
                                                      "settings": settings}.items() if value is not None})
    data["models"] = models
    return {key: value for key, value in data.items() if value is not None}
