"""Numeric constants and defaults, each with its source (spec = ../shared/docs/elda-spec.md)."""

import math

#: Smoothing added to document co-occurrence counts by the keyword generators (the E-LDA paper's keyword generators).
GENERATOR_EPSILON = 1e-5

#: Score of the "null topic" every document has from the start: beta = log(1e-100) (the E-LDA paper's objective).
NULL_TOPIC_LOG_SCORE = math.log(1e-100)

#: Separator joining the keywords of candidate rows that are identical (the E-LDA paper's keyword generators: "color---colour").
LABEL_JOINER = "---"

#: Number of top words reported per topic by default.
DEFAULT_TOP_WORDS = 10

#: Words per topic in a model output's topic lists: enough for the coherence grid N = 5..25.
OUTPUT_TOP_WORDS = 25

#: Accuracy parameter of the parallel algorithm: thresholds descend by 1 - epsilon (the E-LDA paper's algorithms; the
#: round target is stated at epsilon = 0.1). The default of every entry point (estimator, CLI).
DEFAULT_EPSILON = 0.1

#: Names of the keyword topic generators (the E-LDA paper's keyword generators), in the paper's order: the one list of them.
#: :mod:`topicbench.core.elda.generators` implements each; the estimator, the model's settings, the
#: CLI and the paper's configs read it from here (this module is cheap to import, the kernels not).
GENERATORS = ("raw_umass", "exp_umass", "cooccurrence")

#: Keyword topic generator of E-LDA when none is named: the paper's best generator, Co-Occurrence
#: (the E-LDA paper's keyword generators), which the benchmark's ``elda`` has always run, so tracked runs keep their meaning.
#: The default of every entry point (the ``elda`` model, the estimator, the CLI).
DEFAULT_GENERATOR = "cooccurrence"

#: Partition names of the OCTIS corpus convention (corpus.tsv's second field).
OCTIS_PARTITIONS = ("train", "val", "test")

#: The largest seed: numpy's legacy RandomState (gensim's LDA) and tomotopy take 32-bit seeds.
MAX_SEED = 2**32 - 1

# ------------------------------------------------------------------------------------------------
# Metrics (core/metrics)
# ------------------------------------------------------------------------------------------------

#: Smoothing of the coherence confirmations: gensim's ``direct_confirmation_measure.EPSILON``
#: (Röder, Both & Hinneburg 2015), used by UMass (the E-LDA paper's experiments), NPMI, UCI and C_V alike.
UMASS_EPSILON = 1e-12

#: Sliding-window sizes of the window-based coherence measures: gensim's
#: ``coherencemodel.SLIDING_WINDOW_SIZES`` (Röder et al. 2015: C_V 110; NPMI and UCI 10).
#: UMass counts whole documents (no window).
SLIDING_WINDOW = {"npmi": 10, "uci": 10, "cv": 110}

#: Exponent gamma of C_V's NPMI context vectors (gensim ``cosine_similarity(gamma=1)``).
CV_GAMMA = 1

#: The grid of top-N words scored by default (the paper's Experiment Set 2: N = 5, 10, ..., 25).
COHERENCE_TOP_N = (5, 10, 15, 20, 25)

#: A topic is scored over the top words the reference has (its other top words out of the
#: reference) only where at least this many are left: every measure confirms word pairs.
IN_REFERENCE_MIN_WORDS = 2

#: Co-occurrence counts are kept as a dense |W| x |W| int64 matrix up to this many words W
#: (8 * 4096^2 bytes = 128 MiB); above it only the word pairs that share a topic are counted.
DENSE_COUNTS_MAX_WORDS = 4096

#: RandK draws per model (the paper's Experiment Set 1: 30 random cyclic shifts of the labels).
RANDK_DRAWS = 30

#: Floor of probabilities before taking logs in the posterior and held-out metrics:
#: log(1e-100) = beta, the null topic's score (the E-LDA paper's objective).
PROBABILITY_FLOOR = 1e-100

#: Top-N of topic diversity: Dieng, Ruiz & Blei (2020) define TD on each topic's top 25 words.
DIVERSITY_TOP_N = 25

#: Top-N and persistence p of inverted rank-biased overlap: OCTIS ``em_invertedRBO`` defaults
#: (topk = 10, weight = 0.9; Webber, Moffat & Zobel 2010; Bianchi et al. 2021).
RBO_TOP_N = 10
RBO_PERSISTENCE = 0.9

#: Document x vocabulary cells of p(w | d) materialised at once by the held-out likelihood
#: (32 MB of float64): bounds its memory on large test splits.
HELDOUT_CHUNK_CELLS = 4_000_000

#: The output's ``extra`` key under which a model that is not a probability model over words
#: (NMF, LSI, c-TF-IDF topics) says why: its held-out likelihood does not apply (the need
#: ``probability_model`` of :mod:`topicbench.core.metrics.needs`).
NOT_A_PROBABILITY_MODEL = "not_a_probability_model"

#: Share of documents held out for the label-based classification score when the corpus has no
#: OCTIS train/test partitions.
LABEL_TEST_FRACTION = 0.25

#: Inverse regularisation strength and iteration cap of the logistic regression on
#: document-topic features (scikit-learn defaults for C; enough iterations to converge).
LABEL_CLASSIFIER_C = 1.0
LABEL_CLASSIFIER_MAX_ITER = 2000

#: Document-level LLM judging (core/metrics/llm_documents.py): where the endpoint has no
#: tokenizer to ask, a text's tokens are estimated at one per this many characters (OpenAI's rule
#: of thumb for English under BPE tokenizers).
LLM_CHARS_PER_TOKEN = 4.0

#: Bradley-Terry's L2 penalty on the strengths, which keeps a document that won every comparison
#: finite (choix's fallback in ProxAnn's code: ``ilsr_pairwise(..., alpha=0.001)``).
BRADLEY_TERRY_ALPHA = 1e-3
