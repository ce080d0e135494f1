"""What ``topicbench search`` will do, read from the config's ``search:`` block and checked whole
before any fit: each model's space, the objectives and their directions, the sampler, the batch.

Every mistake is one line naming the field: an empty space or list, K below 2, a setting the
model does not have (or a value it refuses, by building the model at the space's points), a grid
over a range without a step, an objective no configured metric returns, or one that cannot apply
to a model (held-out likelihood of a model that cannot infer held-out documents, a posterior
metric of a model that assigns no topics to tokens, stability with one seed).
"""

from __future__ import annotations

from dataclasses import dataclass

from topicbench.core.constants import MAX_SEED
from topicbench.core.metrics.stability import MEASURES
from topicbench.core.schema import integer
from topicbench.core.search_space import NUM_TOPICS, STABILITY, SearchSpace, parse_objective, point_model
from topicbench.core.validation import InputError

SAMPLERS = ("grid", "tpe", "nsga2")
#: Trials per model a sampler (tpe, nsga2) runs unless ``trials`` says otherwise.
DEFAULT_TRIALS = 20

SEARCH_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["objectives", "spaces"],
    "description": "topicbench search: each model's space (K and its settings), the objectives, the sampler",
    "properties": {
        "sampler": {"enum": list(SAMPLERS), "default": "grid",
                    "description": "grid: every point; tpe: Optuna's TPE; nsga2: Optuna's NSGA-II (several objectives)"},
        "objectives": {"type": "array", "minItems": 1, "uniqueItems": True,
                       "items": {"type": "string", "minLength": 1},
                       "description": "score keys (npmi@10, perplexity, llm_rating) or stability; the first picks the "
                                      "setting by the one-standard-error rule"},
        "trials": {**integer(1, 100_000), "description": f"trials per model for tpe and nsga2 (default {DEFAULT_TRIALS})"},
        "batch": {**integer(1, 10_000), "description": "trials per model asked at once (default: a grid's every point; "
                                                      "a sampler's: the workers)"},
        "seed": {**integer(0, MAX_SEED), "default": 0, "description": "the sampler's seed"},
        "stability_measure": {"enum": list(MEASURES), "default": "jensen_shannon"},
        "storage": {"type": "string", "minLength": 1,
                    "description": "where the studies' state is kept (an Optuna RDB URL, or a .journal file); "
                                   "default: beside the tracking store"},
        "spaces": {
            "type": "object", "minProperties": 1,
            "description": "by model label: {num_topics or a setting: [values] or {low, high, step, log}}",
            "additionalProperties": {"type": "object"},
        },
    },
}


@dataclass(frozen=True)
class SearchPlan:
    """A checked ``search:`` block.

    Attributes
    ----------
    sampler : str
        ``grid``, ``tpe`` or ``nsga2``.
    objectives : tuple of Objective
        The first one picks each model's setting (one-standard-error rule).
    trials : int or None
        Trials per model (samplers); None for a grid (its size).
    batch : int or None
        Trials per model asked at once.
    seed : int
    stability_measure : str
    storage : str or None
    spaces : dict
        Model label -> :class:`SearchSpace` (a model without a space is one point: as configured).
    """

    sampler: str
    objectives: tuple
    trials: int | None
    batch: int | None
    seed: int
    stability_measure: str
    storage: str | None
    spaces: dict

    @classmethod
    def from_config(cls, config, where: str = "config") -> "SearchPlan":
        """The plan of ``config`` (a validated :class:`~topicbench.flows.config.model.BenchmarkConfig`),
        every model built at its space's points (its own checks) before any fit."""
        from topicbench.baselines.registry import MODELS
        from topicbench.core.metrics.registry import METRICS

        block = config.search
        where = f"{where}: search"
        if block is None:
            raise InputError(f"{where}: the config has no search: block (each model's space and the objectives; "
                             "see examples/search.yaml)")
        sampler = block.get("sampler", "grid")
        if sampler == "grid" and "trials" in block:
            raise InputError(f"{where}.trials: a grid runs each of its points once; trials is for sampler tpe or nsga2")
        labels = {spec.name: spec for spec in config.models}
        unknown = sorted(set(block["spaces"]) - set(labels))
        if unknown:
            raise InputError(f"{where}.spaces: no model is labelled {unknown[0]!r}; the config's models: {', '.join(labels)}")
        spaces = {label: SearchSpace.from_dict(label, data, where=f"{where}.spaces") for label, data in block["spaces"].items()}
        objectives = tuple(
            parse_objective(name, config.metrics, config.top_n, lambda m: METRICS.get(m).higher_is_better,
                            f"{where}.objectives[{i}]")
            for i, name in enumerate(block["objectives"])
        )
        if sampler == "nsga2" and len(objectives) < 2:
            raise InputError(f"{where}.sampler: nsga2 searches several objectives at once; with one, use tpe")
        plan = cls(sampler, objectives, block.get("trials", DEFAULT_TRIALS) if sampler != "grid" else None,
                   block.get("batch"), block.get("seed", 0), block.get("stability_measure", "jensen_shannon"),
                   block.get("storage"), spaces)
        plan._check_models(config, MODELS, where)
        return plan

    def space_of(self, label: str) -> SearchSpace | None:
        return self.spaces.get(label)

    def largest_num_topics(self, models) -> list:
        """(where, K) of the largest K each of ``models`` (ModelSpec) is fitted with: its space's
        (the grid's largest, a sampler's range's high end) or, where K is not searched, its own
        (None: the model chooses); checked against each corpus before any fit."""
        largest = []
        for spec in models:
            space = self.space_of(spec.name)
            if space is not None and NUM_TOPICS in space.names:
                values = [point[NUM_TOPICS] for point in space.checked_points(self.sampler)]
                largest.append((f"search.spaces.{spec.name}.{NUM_TOPICS}", max(values)))
            else:
                largest.append((f"model {spec.name!r}: num_topics", spec.num_topics))
        return largest

    def _check_models(self, config, models, where: str) -> None:
        """Each searched dimension is the model's, each checked point builds, each objective can
        apply to each model."""
        if any(o.key == STABILITY for o in self.objectives) and len(config.seeds) < 2:
            raise InputError(f"{where}.objectives: stability compares seeds: give two or more seeds (seeds: [0, 1])")
        for spec in config.models:
            model_class = models.get(spec.model)
            space = self.space_of(spec.name)
            if spec.matched_label is not None:  # a trial's K would depend on another model's trial
                raise InputError(f"{where}: model {spec.name!r} has num_topics: {{match: {spec.matched_label}}}, which "
                                 "topicbench run fits and a search does not: give it a K, or search its num_topics")
            if space is not None:
                for name in space.names:
                    if name != NUM_TOPICS and name not in model_class.defaults:
                        raise InputError(f"{where}.spaces.{spec.name}.{name}: {spec.model} has no setting {name!r}; "
                                         f"its settings: num_topics, {', '.join(sorted(model_class.defaults))}")
                for point in space.checked_points(self.sampler, f"{where}.spaces"):
                    _check_point(spec, point, models, f"{where}.spaces.{spec.name}")
            for objective in self.objectives:
                problem = objective_problem(objective.key, model_class, spec)
                if problem:
                    raise InputError(f"{where}.objectives: {objective.key!r} does not apply to {spec.name!r}: {problem}")

    def check_corpus(self, corpus_name: str, corpus, heldout) -> None:
        """The objectives that need something of the corpus (labels, a held-out split), once it is
        read and before any fit."""
        from topicbench.core.metrics.registry import METRICS, metric_for_key

        for objective in self.objectives:
            if objective.key == STABILITY:
                continue
            needs = METRICS.get(metric_for_key(objective.key).name).needs
            if "heldout" in needs and heldout is None:
                raise InputError(f"search.objectives: {objective.key!r} needs held-out documents and corpus "
                                 f"{corpus_name!r} has no 'test' partition beside 'train'")
            if "labels" in needs and (corpus.labels is None or len(set(corpus.labels)) < 2):
                raise InputError(f"search.objectives: {objective.key!r} needs document labels of two or more classes "
                                 f"and corpus {corpus_name!r} has none")


def objective_problem(key: str, model_class, spec) -> str | None:
    """Why objective ``key`` cannot score ``model_class``'s outputs whatever the fit, or None."""
    from topicbench.core.metrics.registry import metric_for_key

    if key == STABILITY:
        return None
    metric = metric_for_key(key)
    if spec.metrics is not None and metric.name not in spec.metrics:
        return f"its metrics ({', '.join(spec.metrics)}) leave out {metric.name!r}"
    if "token_topics" in metric.needs and not model_class.assigns_token_topics:
        return f"{metric.name} needs a topic per token, which {spec.model} does not assign"
    if "heldout" in metric.needs and not model_class.supports_transform:
        return f"{metric.name} needs the topics of held-out documents, which {spec.model} cannot infer"
    if "probability_model" in metric.needs and getattr(model_class, "not_a_probability_model", ""):
        return f"{metric.name} needs a probability model of words; {spec.model}: {model_class.not_a_probability_model}"
    return None


def _check_point(spec, point: dict, models, where: str) -> None:
    """The model at ``point`` builds (its own checks of K and every setting; cheap: nothing loads)."""
    num_topics, settings = point_model(spec.num_topics, spec.settings, point)
    at = ", ".join(f"{name}={value}" for name, value in point.items())
    try:
        models.get(spec.model)(num_topics, random_state=0, **settings)
    except InputError as error:
        raise InputError(f"{where} at {at}: {error}") from None
