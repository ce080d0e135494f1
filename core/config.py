"""Numeric constants and defaults, each with its source (spec = ../shared/docs/elda-spec.md)."""

import math

#: Smoothing added to document co-occurrence counts by the keyword generators (spec §2).
GENERATOR_EPSILON = 1e-5

#: Score of the "null topic" every document has from the start: beta = log(1e-100) (spec §1).
NULL_TOPIC_LOG_SCORE = math.log(1e-100)

#: Separator joining the keywords of candidate rows that are identical (spec §2: "color---colour").
LABEL_JOINER = "---"

#: Number of top words reported per topic by default.
DEFAULT_TOP_WORDS = 10

#: Words per topic in a model output's topic lists: enough for the coherence grid N = 5..25.
OUTPUT_TOP_WORDS = 25

#: Keyword topic generators implemented in :mod:`topicbench.core.generators` (spec §2).
GENERATORS = ("raw_umass", "exp_umass", "cooccurrence")

#: Partition names of the OCTIS corpus convention (corpus.tsv's second field).
OCTIS_PARTITIONS = ("train", "val", "test")
