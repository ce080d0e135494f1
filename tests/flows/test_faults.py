"""A table of bad inputs against the command line: each must end, before any work, with a non-zero
exit, one clear last line that names the problem, no traceback, and nothing created or lost.

The cases run ``topicbench`` in this process (``main(argv)``); none of them may start a flow, a
Dask cluster or a Prefect server, which is what keeps them fast. Faults that need a running flow
(a killed worker, Ctrl-C, two processes on one store) are in ``test_run_claims.py`` and
``test_exit_paths.py``.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from topicbench.flows.cli.main import main

GOOD_CONFIG = """\
experiment: faults
corpora:
  - {name: tiny, source: {corpus}, preprocessing: {preprocessed: true}}
models:
  - {model: elda}
  - {model: gensim_lda, num_topics: 4}
seeds: [0, 1]
"""


@dataclass
class Case:
    """``argv`` with ``{corpus}``, ``{tmp}``, ``{config}``, ``{store}`` and ``{closed_port}`` filled in;
    ``config`` is YAML written to ``{tmp}/config.yaml`` (with ``{corpus}`` filled in) when given."""

    name: str
    argv: list
    message: str
    config: str | None = None
    exit_code: int = 2
    corpus: str = "good"
    extra: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)  # environment variables set for the case (filled in too)


def _config(**replace) -> str:
    text = GOOD_CONFIG
    for old, new in replace.items():
        text = text.replace(old.replace("__", " "), new)
    return text


ELDA = ["elda", "--corpus", "{corpus}", "--preprocessed"]
CALIBRATE = ["judge", "calibrate", "--llm-base-url", "http://127.0.0.1:{closed_port}/v1", "--llm-model", "m",
             "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db", "--judgments"]
RUN = ["run", "{config}", "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db", "--out", "{tmp}/report"]
SEARCH = ["search", "{config}", "--tracking-uri", "{store}", "--out", "{tmp}/report"]
SEARCH_CONFIG = GOOD_CONFIG + "metrics: [npmi]\ntop_n: [5]\nsearch: {objectives: [npmi@5], spaces: {gensim_lda: {num_topics: [2, 3]}}}\n"

CASES = [
    # -- topicbench elda: the corpus ----------------------------------------------------------------
    Case("elda: corpus path missing", ["elda", "--corpus", "{tmp}/nowhere"], "corpus not found"),
    Case("elda: empty text file", ["elda", "--corpus", "{tmp}/empty.txt"], "is empty"),
    Case("elda: folder without corpus.tsv", ["elda", "--corpus", "{tmp}/no_tsv"], "corpus.tsv"),
    Case("elda: malformed corpus.tsv line", ELDA, "line 2", corpus="malformed"),
    Case("elda: corpus.tsv with only empty documents", ELDA, "no document has 1 or more tokens", corpus="blank_documents"),
    Case("elda: unknown words against vocabulary.txt", ELDA, "not in", corpus="unknown_words"),
    Case("elda: min-df removes every word", [*ELDA[:3], "--min-df", "1000"], "", corpus="raw"),
    # -- topicbench elda: numbers -------------------------------------------------------------------
    Case("elda: kappa < 1", [*ELDA, "--kappa", "0.5"], "--kappa: must be a number >= 1"),
    Case("elda: kappa not a number", [*ELDA, "--kappa", "two"], "--kappa: expected a number"),
    Case("elda: kappa nan", [*ELDA, "--kappa", "nan"], "--kappa: must be a number >= 1"),
    Case("elda: kappa inf", [*ELDA, "--kappa", "inf"], "--kappa: must be a number >= 1"),
    Case("elda: kappa above documents x topics", [*ELDA, "--kappa", "1000"], "larger than documents x topics"),
    Case("elda: epsilon 0", [*ELDA, "--algorithm", "parallel", "--epsilon", "0"], "--epsilon: must lie in (0, 1)"),
    Case("elda: epsilon 1.5", [*ELDA, "--algorithm", "parallel", "--epsilon", "1.5"], "--epsilon: must lie in (0, 1)"),
    Case("elda: min-df 0", [*ELDA, "--min-df", "0"], "--min-df: must be an integer >= 1"),
    Case("elda: top-words 0", [*ELDA, "--top-words", "0"], "--top-words: must be an integer >= 1"),
    Case("elda: negative seed", [*ELDA, "--seed", "-1"], "--seed: must be an integer >= 0"),
    Case("elda: zero workers", [*ELDA, "--algorithm", "parallel", "--workers", "0"], "--workers: must be an integer >= 1"),
    Case("elda: unknown generator", [*ELDA, "--generator", "magic"], "invalid choice: 'magic'"),
    Case("elda: connect timeout 0", [*ELDA, "--connect-timeout", "0"], "--connect-timeout: must be a number > 0"),
    # -- topicbench elda: outputs and the scheduler ------------------------------------------------
    Case("elda: --json under /proc", [*ELDA, "--json", "/proc/topicbench.json"], "--json: cannot write in /proc"),
    Case("elda: --json is a folder", [*ELDA, "--json", "{tmp}"], "is a folder; give a file name"),
    Case("elda: --parquet is a file", [*ELDA, "--parquet", "{tmp}/empty.txt"], "is not a folder (it is a regular file)"),
    Case("elda: --parquet under /proc", [*ELDA, "--parquet", "/proc/topicbench"], "--parquet: cannot write in /proc"),
    Case("elda: scheduler with exact greedy", [*ELDA, "--scheduler", "tcp://127.0.0.1:1"], "apply to --algorithm parallel only"),
    Case("elda: scheduler address malformed", [*ELDA, "--algorithm", "parallel", "--scheduler", "not an address"], "is not a Dask address"),
    Case("elda: scheduler unreachable", [*ELDA, "--algorithm", "parallel", "--scheduler", "tcp://127.0.0.1:{closed_port}",
                                         "--connect-timeout", "2"], "cannot reach the Dask scheduler"),
    Case("elda: scheduler address of something else", [*ELDA, "--algorithm", "parallel", "--scheduler",
                                                       "tcp://127.0.0.1:{garbage_port}"], "answered, but not as a Dask scheduler"),
    # -- topicbench run: the config ----------------------------------------------------------------
    Case("run: config file missing", ["run", "{tmp}/missing.yaml"], "config file not found"),
    Case("run: config not YAML", RUN, "is not valid YAML", config="experiment: [unclosed\n"),
    Case("run: config a list", RUN, "must be a mapping", config="- elda\n"),
    Case("run: unknown top-level key", RUN, "has no setting 'sedes'", config=_config(seeds="sedes")),
    Case("run: seeds [true]", RUN, "seeds[0] must be an integer in [0, 4294967295], got True", config=_config(**{"[0, 1]": "[true]"})),
    Case("run: negative seed", RUN, "seeds[0] must be an integer in [0, 4294967295], got -3", config=_config(**{"[0, 1]": "[-3]"})),
    Case("run: repeated seeds", RUN, "seeds lists 1 twice: [1, 1]", config=_config(**{"[0, 1]": "[1, 1]"})),
    Case("run: seeds not a list", RUN, "seeds must be a list", config=_config(**{"[0, 1]": "7"})),
    Case("run: corpora []", RUN, "corpora is empty", config="experiment: x\ncorpora: []\nmodels: [{model: elda}]\n"),
    Case("run: no models", RUN, "models is empty: list at least one", config="experiment: x\nmodels: []\n"),
    Case("run: corpus source missing", RUN, "corpus source not found", config=_config(**{"{corpus}": "/nonexistent/corpus"})),
    Case("run: corpus without a name", RUN, "corpora[0]: 'name' is missing", config=_config(**{"name: tiny,": ""})),
    Case("run: unknown model", RUN, "Unknown model 'lda'", config=_config(**{"model: elda": "model: lda"})),
    Case("run: unknown model setting", RUN, "models[0].settings: model 'elda' has no setting 'passes'", config=_config(**{"{model: elda}": "{model: elda, settings: {passes: 3}}"})),
    Case("run: num_topics -5", RUN, "models[1].num_topics must be an integer >= 1 or null (left out) or a list of integers >= 2 or {{low, high, step}} or {{match}}, got -5", config=_config(**{"num_topics: 4": "num_topics: -5"})),
    Case("run: num_topics missing", RUN, "num_topics must be an integer >= 1, got None", config=_config(**{", num_topics: 4": ""})),
    Case("run: num_topics true", RUN, "models[1].num_topics must be an integer >= 1 or null (left out) or a list of integers >= 2 or {{low, high, step}} or {{match}}, got True", config=_config(**{"num_topics: 4": "num_topics: true"})),
    Case("run: iterations 'many'", RUN, "models[1].settings.iterations must be an integer <= 100000, got 'many'",
         config=_config(**{"num_topics: 4}": "num_topics: 4, settings: {iterations: many}}"})),
    Case("run: passes true", RUN, "models[1].settings.passes must be an integer <= 100000, got True",
         config=_config(**{"num_topics: 4}": "num_topics: 4, settings: {passes: true}}"})),
    Case("run: num_topics for elda", RUN, "models[0] (elda): num_topics does not apply to elda, which chooses how many "
         "topics it uses from kappa", config=_config(**{"{model: elda}": "{model: elda, num_topics: 10}"})),
    Case("run: kappa 0.5", RUN, "kappa must be >= 1", config=_config(**{"{model: elda}": "{model: elda, settings: {kappa: 0.5}}"})),
    Case("run: generator unknown", RUN, "generator must be one of", config=_config(**{"{model: elda}": "{model: elda, settings: {generator: magic}}"})),
    Case("run: settings not a mapping", RUN, "settings must be a mapping", config=_config(**{"{model: elda}": "{model: elda, settings: [1]}"})),
    Case("run: duplicate labels", RUN, "share the label", config=_config(**{"num_topics: 4}": "num_topics: 4}\n  - {model: gensim_lda, num_topics: 8}"})),
    Case("run: unknown metric", RUN, "Unknown metric 'coherence'", config=_config(seeds="metrics: [coherence]\nseeds")),
    Case("run: top_n [1]", RUN, "top_n[0] must be an integer >= 2, got 1", config=_config(seeds="top_n: [1]\nseeds")),
    Case("run: workers 0", RUN, "workers must be an integer >= 1", config=_config(seeds="workers: 0\nseeds")),
    Case("run: workers true", RUN, "workers must be an integer >= 1", config=_config(seeds="workers: true\nseeds")),
    Case("run: scheduler malformed", RUN, "is not a Dask address", config=_config(seeds="scheduler: somewhere\nseeds")),
    Case("run: empty experiment name", RUN, "experiment must be a name (visible text without control characters", config=_config(**{"experiment: faults": "experiment: ''"})),
    # -- topicbench run: where it writes ------------------------------------------------------------
    Case("run: --out is a file", ["run", "{config}", "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db", "--out", "{tmp}/empty.txt"],
         "is not a folder (it is a regular file)", config=GOOD_CONFIG),
    Case("run: --seeds -1", [*RUN, "--seeds", "-1"], "--seeds: must be an integer >= 0", config=GOOD_CONFIG),
    Case("run: --workers 0", [*RUN, "--workers", "0"], "--workers: must be an integer >= 1", config=GOOD_CONFIG),
    Case("run: scheduler unreachable", [*RUN, "--scheduler", "tcp://127.0.0.1:{closed_port}", "--connect-timeout", "2"],
         "cannot reach the Dask scheduler", config=GOOD_CONFIG),
    Case("run: tracking server unreachable", ["run", "{config}", "--tracking-uri", "http://127.0.0.1:{closed_port}", "--out", "{tmp}/report"],
         "unreachable", config=GOOD_CONFIG),
    Case("run: sqlite store under /proc", ["run", "{config}", "--tracking-uri", "sqlite:////proc/topicbench/mlflow.db", "--out", "{tmp}/report"],
         "/proc/topicbench", config=GOOD_CONFIG),
    # -- topicbench report / ui / paper -------------------------------------------------------------
    Case("report: store does not exist", ["report", "--experiment", "nope", "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db"],
         "no tracking database at"),
    Case("report: experiment does not exist", ["report", "--experiment", "nope", "--tracking-uri", "{store}"],
         "no experiment named 'nope'"),
    Case("report: --out is a file", ["report", "--experiment", "kept", "--tracking-uri", "{store}", "--out", "{tmp}/empty.txt"],
         "is not a folder (it is a regular file)"),
    Case("ui: store does not exist", ["ui", "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db"], "no tracking database at"),
    Case("ui: port out of range", ["ui", "--port", "70000"], "--port: must be a port number in 1..65535"),
    Case("ui: port in use", ["ui", "--tracking-uri", "{store}", "--port", "{busy_port}"], "is in use"),
    Case("paper: data folder missing", ["paper", "--data", "{tmp}/nodata", "--out", "{tmp}/paper",
                                         "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db"], "paper corpora missing from"),
    Case("paper: unknown baseline", ["paper", "--data", "{tmp}/paperdata", "--baselines", "lda", "--out", "{tmp}/paper",
                                      "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db"], "Unknown model 'lda'"),
    Case("paper: unknown corpus", ["paper", "--data", "{tmp}/paperdata", "--corpora", "nyt", "--out", "{tmp}/paper",
                                    "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db"], "paper corpora missing from"),
    Case("paper: iterations 0", ["paper", "--data", "{tmp}/paperdata", "--iterations", "0"], "--iterations: must be an integer >= 1"),
    # -- round two (issue 29): the config file itself ----------------------------------------------
    Case("run: config is a folder", ["run", "{tmp}/cfgdir"], "is a folder; give a file"),
    Case("run: config is a symlink loop", ["run", "{tmp}/loop.yaml"], "Too many levels of symbolic links"),
    Case("run: config with Latin-1 bytes", ["run", "{tmp}/latin1.yaml"], "line 1 is not UTF-8 text"),
    Case("run: config with a NUL byte", ["run", "{tmp}/nul.yaml"], "line 2: holds a NUL byte"),
    Case("run: config is a FIFO", ["run", "{tmp}/fifo"], "is not a regular file (it is a pipe)"),
    Case("run: config is /dev/zero", ["run", "/dev/zero"], "is not a regular file (it is a device)"),
    Case("run: config of 17 MiB", ["run", "{tmp}/huge.yaml"], "a config is at most 16 MiB"),
    Case("run: key given twice (experiment)", RUN, "the key 'experiment' is given twice (first at line 1)",
         config=GOOD_CONFIG + "experiment: other\n"),
    Case("run: key given twice (seeds)", RUN, "the key 'seeds' is given twice", config=GOOD_CONFIG + "seeds: [5]\n"),
    Case("run: key given twice inside a model", RUN, "the key 'num_topics' is given twice",
         config=_config(**{"num_topics: 4": "num_topics: 4, num_topics: 5"})),
    Case("run: alias bomb inside preprocessing.stopwords", RUN, "expands to more than 1,000,000 values",
         config=_config(**{"preprocessed: true": "preprocessed: true, stopwords: *l9"}).replace("experiment: faults", "experiment: faults\n" + "\n".join(
             ["x0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
             + [f"x{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]))),
    Case("run: alias that contains itself", RUN, "contains itself", config="experiment: &a [*a]\n"),
    Case("run: nested 100,000 deep", ["run", "{tmp}/deep.yaml"], "nested too deeply"),
    # -- preprocessing settings, typed before any work ------------------------------------------------
    *[Case(f"run: preprocessing {setting}", RUN, message, config=_config(**{"preprocessed: true": setting}))
      for setting, message in [
          ("min_df: two", "preprocessing.min_df must be an integer >= 1 or a number in (0, 1], got 'two'"),
          ("min_df: true", "preprocessing.min_df must be an integer >= 1 or a number in (0, 1], got True"),
          ("max_df: 1.5", "preprocessing.max_df must be an integer >= 1 or a number in (0, 1], got 1.5"),
          ("min_doc_length: x", "preprocessing.min_doc_length must be an integer >= 1, got 'x'"),
          ("stopwords: 5", "preprocessing.stopwords must be one of 'english', 'none' or a list of strings, got 5"),
          ("stopwords: [tax, 5]", "preprocessing.stopwords[1] must be a string, got 5"),
          ("token_pattern: 5", "preprocessing.token_pattern must be a non-empty string, got 5"),
          ("token_pattern: '('", "is not a regular expression"),
          ("preprocessed: 'no'", "preprocessing.preprocessed must be true or false, got 'no'"),
          ("lowercase: 'false'", "preprocessing.lowercase must be true or false, got 'false'"),
          ("unknown_words: skip", "preprocessing.unknown_words must be one of 'error', 'drop', got 'skip'"),
          ("colour: red", "preprocessing: unknown setting 'colour'"),
      ]],
    # -- names, seeds and metrics -----------------------------------------------------------------------
    Case("run: corpus name with a newline", RUN, "corpora[0].name must be a name (visible text without control characters",
         config=_config(**{"name: tiny": 'name: "ti\\nny"'})),
    Case("run: label of 201 characters", RUN, "models[0].label must be a name", config=_config(**{"{model: elda}": "{model: elda, label: " + "x" * 201 + "}"})),
    Case("run: empty --experiment", [*RUN, "--experiment", ""], "argument --experiment: an experiment name is visible text", config=GOOD_CONFIG),
    Case("report: empty --experiment", ["report", "--experiment", "", "--tracking-uri", "{store}"], "argument --experiment: an experiment name"),
    Case("run: seed 2^32 in the config", RUN, "seeds[0] must be an integer in [0, 4294967295], got 4294967296",
         config=_config(**{"[0, 1]": "[4294967296]"})),
    Case("run: --seeds 2^32", [*RUN, "--seeds", "4294967296"], "--seeds: must be an integer in [0, 4294967295], got 4294967296", config=GOOD_CONFIG),
    Case("elda: --seed 2^32", [*ELDA, "--seed", "4294967296"], "--seed: must be an integer in [0, 4294967295]"),
    Case("run: metrics [umass, umass]", RUN, "metrics lists 'umass' twice", config=_config(seeds="metrics: [umass, umass]\nseeds")),
    Case("run: a model's metrics twice", RUN, "models[0].metrics lists 'umass' twice",
         config=_config(**{"{model: elda}": "{model: elda, metrics: [umass, umass]}"})),
    # -- corpora that are not files -------------------------------------------------------------------
    Case("elda: corpus /dev/zero", ["elda", "--corpus", "/dev/zero"], "/dev/zero is not a regular file (it is a device)"),
    Case("elda: corpus a FIFO", ["elda", "--corpus", "{tmp}/fifo"], "is not a regular file (it is a pipe)"),
    Case("elda: corpus with a NUL byte", ["elda", "--corpus", "{tmp}/nul.txt"], "line 2: holds a NUL byte"),
    Case("run: corpus source a FIFO", RUN, "is not a regular file (it is a pipe)", config=_config(**{"{corpus}": "{tmp}/fifo"})),
    Case("run: corpus source /dev/zero", RUN, "is not a regular file (it is a device)", config=_config(**{"{corpus}": "/dev/zero"})),
    # -- the environment ------------------------------------------------------------------------------
    Case("run: PREFECT_API_URL not a URL", RUN, "PREFECT_API_URL='not a url' is not the http(s) URL", config=GOOD_CONFIG,
         env={"PREFECT_API_URL": "not a url"}),
    Case("run: PREFECT_API_URL nobody answers", RUN, "does not answer", config=GOOD_CONFIG,
         env={"PREFECT_API_URL": "http://127.0.0.1:{closed_port}/api"}),
    Case("run: PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=abc", RUN,
         "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS='abc' is not valid", config=GOOD_CONFIG,
         env={"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "abc"}),
    # -- data fetch -----------------------------------------------------------------------------------
    Case("data fetch: --dest is a file", ["data", "fetch", "congress", "--dest", "{tmp}/empty.txt"], "is not a folder"),
    Case("data fetch: TOPICBENCH_DATA is a file", ["data", "fetch", "congress"], "$TOPICBENCH_DATA or its default): {tmp}/empty.txt is not a folder",
         env={"TOPICBENCH_DATA": "{tmp}/empty.txt"}),
    Case("data fetch: --dest under /proc", ["data", "fetch", "congress", "--dest", "/proc/x"], "--dest: cannot write in /proc: /proc/x is under /proc"),
    Case("data fetch: --timeout 0", ["data", "fetch", "congress", "--timeout", "0"], "--timeout: must be a number > 0"),
    Case("data fetch: --deadline -1", ["data", "fetch", "congress", "--deadline", "-1"], "--deadline: must be a number > 0"),
    # -- the LLM judge (issue 25): the endpoint is checked before any fit -------------------------
    Case("run: LLM metrics without an endpoint", RUN, "ask an LLM, and its llm.base_url is not given",
         config=_config(seeds="metrics: [umass, llm_rating]\nseeds")),
    Case("run: --llm-base-url without --llm-model", [*RUN, "--llm-base-url", "http://127.0.0.1:{closed_port}/v1"],
         "--llm-model is needed too", config=GOOD_CONFIG),
    Case("run: llm.base_url not http", RUN, "llm.base_url must be a string matching ^https?://",
         config=_config(seeds="llm: {base_url: 'ftp://x', model: m}\nseeds")),
    Case("run: llm.concurrency 0", RUN, "llm.concurrency must be an integer in [1, 256], got 0",
         config=_config(seeds="llm: {base_url: 'http://x', model: m, concurrency: 0}\nseeds")),
    Case("run: unknown llm setting", RUN, "llm: unknown setting 'key'",
         config=_config(seeds="llm: {base_url: 'http://x', model: m, key: sk-123}\nseeds")),
    Case("run: LLM endpoint unreachable", [*RUN, "--llm-base-url", "http://127.0.0.1:{closed_port}/v1", "--llm-model", "m"],
         "the LLM endpoint at http://127.0.0.1:{closed_port}/v1 is unreachable",
         config=_config(seeds="metrics: [llm_rating]\nseeds")),
    Case("run: the key's variable is not set", [*RUN, "--llm-base-url", "http://127.0.0.1:{closed_port}/v1", "--llm-model", "m",
                                                "--llm-api-key-env", "TOPICBENCH_NO_SUCH_KEY"],
         "llm.api_key_env names $TOPICBENCH_NO_SUCH_KEY, which is not set", config=_config(seeds="metrics: [llm_rating]\nseeds")),
    Case("judge calibrate: no endpoint", ["judge", "calibrate", "--judgments", "{tmp}/empty.txt"], "give the endpoint"),
    Case("judge calibrate: judgments missing", ["judge", "calibrate", "--llm-base-url", "http://127.0.0.1:{closed_port}/v1",
                                                "--llm-model", "m", "--judgments", "{tmp}/none.json"], "none.json is not a file"),
    # -- the LLM judge's settings (issue 37): nonsense timeouts, a cache that is not its own, a key in the URL
    *[Case(f"run: llm.timeout {value}", RUN, f"llm.timeout must be a number in [0.1, 3600], got {shown}",
           config=_config(seeds=f"metrics: [llm_rating]\nllm: {{base_url: 'http://127.0.0.1:9/v1', model: m, timeout: {value}}}\nseeds"))
      for value, shown in ((".nan", "nan"), (".inf", "inf"), ("0", "0"), ("-3", "-3"), ("1.0e+300", "1e+300"))],
    Case("run: llm.cache is the tracking store's database", RUN, "the tracking store's database",
         config=_config(seeds="metrics: [llm_rating]\nllm: {base_url: 'http://127.0.0.1:9/v1', model: m, cache: '{tmp}/new/mlflow.db'}\nseeds")),
    Case("run: llm.cache a folder", RUN, "llm.cache: {tmp} is a folder; give a file name",
         config=_config(seeds="metrics: [llm_rating]\nllm: {base_url: 'http://127.0.0.1:9/v1', model: m, cache: '{tmp}'}\nseeds")),
    Case("run: llm.cache under /proc", RUN, "llm.cache: cannot write in /proc",
         config=_config(seeds="metrics: [llm_rating]\nllm: {base_url: 'http://127.0.0.1:9/v1', model: m, cache: /proc/tb/c.sqlite}\nseeds")),
    Case("run: TOPICBENCH_LLM_CACHE a folder", [*RUN, "--llm-base-url", "http://127.0.0.1:{closed_port}/v1", "--llm-model", "m"],
         "$TOPICBENCH_LLM_CACHE: {tmp} is a folder", config=_config(seeds="metrics: [llm_rating]\nseeds"),
         env={"TOPICBENCH_LLM_CACHE": "{tmp}"}),
    Case("run: llm.base_url with a key in it", RUN, "llm.base_url http://[redacted]@127.0.0.1:9/v1 holds a user name or key",
         config=_config(seeds="metrics: [llm_rating]\nllm: {base_url: 'http://me:sk-in-url-123@127.0.0.1:9/v1', model: m}\nseeds")),
    Case("run: --llm-base-url with a key in it", [*RUN, "--llm-base-url", "http://sk-in-url-123@127.0.0.1:{closed_port}/v1",
                                                  "--llm-model", "m"], "holds a user name or key before the host", config=GOOD_CONFIG),
    Case("run: llm.base_url not http, with a key in it", RUN, "got 'ftp://[redacted]@x'",
         config=_config(seeds="llm: {base_url: 'ftp://me:sk-in-url-123@x', model: m}\nseeds")),
    # -- judge calibrate: the judgments file (issue 37), read before the endpoint (a closed port) is asked
    Case("judge calibrate: judgments not JSON", [*CALIBRATE, "{tmp}/judgments/cut.json"], "cut.json is not JSON (line 1, column"),
    Case("judge calibrate: judgments a list", [*CALIBRATE, "{tmp}/judgments/list.json"],
         "list.json: the file is a list, expected an object of datasets"),
    Case("judge calibrate: a rating missing", [*CALIBRATE, "{tmp}/judgments/null_rating.json"],
         "null_rating.json: wikitext.mallet.metrics.ratings_scores_avg[1] is missing"),
    Case("judge calibrate: a rating NaN", [*CALIBRATE, "{tmp}/judgments/nan_rating.json"],
         "nan_rating.json: wikitext.mallet.metrics.ratings_scores_avg[0] is missing"),
    Case("judge calibrate: fewer ratings than topics", [*CALIBRATE, "{tmp}/judgments/short_ratings.json"],
         "wikitext.mallet.metrics.ratings_scores_avg has 1 values for 2 topics"),
    Case("judge calibrate: a rating off the scale", [*CALIBRATE, "{tmp}/judgments/off_scale.json"],
         "wikitext.mallet.metrics.ratings_scores_avg[1] is 7, outside 1-3"),
    Case("judge calibrate: no intrusion scores", [*CALIBRATE, "{tmp}/judgments/no_intrusion.json"],
         "wikitext.mallet.metrics.intrusion_scores_avg is missing"),
    Case("judge calibrate: an empty topic", [*CALIBRATE, "{tmp}/judgments/empty_topic.json"],
         "wikitext.mallet.topics[1] is an empty list, expected a non-empty list of words"),
    Case("judge calibrate: a word that is not a string", [*CALIBRATE, "{tmp}/judgments/number_word.json"],
         "wikitext.mallet.topics[0][1] is 3, expected a word"),
    Case("judge calibrate: judgments too large", [*CALIBRATE, "{tmp}/judgments/huge.json"],
         "huge.json is 65 MiB; a judgments file is at most 64 MiB"),
    # -- topicbench search: where the studies are kept (issue 37), never the tracking store itself
    Case("search: --storage is the tracking database", [*SEARCH, "--storage", "{store}"],
         "the search storage {store} is the tracking database", config=SEARCH_CONFIG),
    Case("search: --storage is the tracking database's file", [*SEARCH, "--storage", "{store_file}"],
         "the search storage {store_file} is the tracking database", config=SEARCH_CONFIG),
    Case("search: search.storage is the new tracking database", ["search", "{config}", "--tracking-uri", "sqlite:///{tmp}/new/mlflow.db"],
         "is the tracking database: give --storage (or search.storage) another file",
         config=SEARCH_CONFIG.replace("num_topics: [2, 3]}}", "num_topics: [2, 3]}}, storage: 'sqlite:///{tmp}/new/mlflow.db'")),
    Case("search: --storage neither a URL nor a journal", [*SEARCH, "--storage", "{tmp}/studies.db"],
         "is neither an Optuna RDB URL (sqlite:///PATH, postgresql://USER@HOST/DATABASE) nor a .journal file",
         config=SEARCH_CONFIG),
]


def _write_corpora(tmp: Path) -> dict:
    good = tmp / "good"
    good.mkdir()
    docs = ["budget tax cut budget", "tax cut vote budget", "war troops iraq vote", "iraq war troops budget",
            "school teacher education", "education school budget teacher"]
    (good / "corpus.tsv").write_text("".join(f"{d}\ttrain\n" for d in docs))
    malformed = tmp / "malformed"
    malformed.mkdir()
    (malformed / "corpus.tsv").write_text("tax cut\ttrain\ntax\ttrain\tlabel\textra\n")
    blank = tmp / "blank_documents"
    blank.mkdir()
    (blank / "corpus.tsv").write_text("\ttrain\n\ttrain\n")
    unknown = tmp / "unknown_words"
    unknown.mkdir()
    (unknown / "corpus.tsv").write_text("tax cut\ttrain\nwar troops\ttrain\n")
    (unknown / "vocabulary.txt").write_text("tax\ncut\nwar\n")
    raw = tmp / "raw.txt"
    raw.write_text("The budget and the tax cut.\nWar and troops in Iraq.\n")
    (tmp / "empty.txt").write_text("")
    (tmp / "no_tsv").mkdir()
    _write_hostile_files(tmp, good)
    _write_judgments_files(tmp / "judgments")
    for name in ("congress", "reuters", "20ng_politics"):  # stand-ins: these cases must fail before reading them
        (tmp / "paperdata" / name).mkdir(parents=True)
        (tmp / "paperdata" / name / "corpus.tsv").write_text((good / "corpus.tsv").read_text())
    return {"good": good, "malformed": malformed, "blank_documents": blank, "unknown_words": unknown, "raw": raw}


def _write_hostile_files(tmp: Path, good: Path) -> None:
    """Files that are not what a command expects: a folder, a symbolic-link loop, a pipe, bytes
    that are not UTF-8, a NUL byte, a config of 17 MiB (sparse) and one nested 100,000 deep."""
    import os

    (tmp / "cfgdir").mkdir()
    (tmp / "loop.yaml").symlink_to(tmp / "loop.yaml")
    os.mkfifo(tmp / "fifo")
    (tmp / "latin1.yaml").write_bytes("experiment: caf\xe9\n".encode("latin-1"))
    (tmp / "nul.yaml").write_bytes(b"experiment: x\nseeds: [0]\x00\n")
    (tmp / "nul.txt").write_bytes(b"budget tax cut\nwar \x00 troops\n")
    with open(tmp / "huge.yaml", "wb") as huge:
        huge.truncate(17 * 2**20)
    (tmp / "deep.yaml").write_text("experiment: " + "[" * 100_000 + "]" * 100_000 + "\n")


def _write_judgments_files(folder: Path) -> None:
    """Human-judgments files (``judge calibrate --judgments``), each wrong in one place."""
    import json

    def judgments(change) -> str:
        data = {"wikitext": {"mallet": {"topics": [["river", "lake"], ["vote", "party"]],
                                        "metrics": {"ratings_scores_avg": [2.5, 1.5], "intrusion_scores_avg": [0.9, 0.3]}}}}
        change(data["wikitext"]["mallet"])
        return json.dumps(data)

    folder.mkdir()
    (folder / "cut.json").write_text(judgments(lambda model: None)[:40])
    (folder / "list.json").write_text("[1]")
    (folder / "null_rating.json").write_text(judgments(lambda model: model["metrics"]["ratings_scores_avg"].__setitem__(1, None)))
    (folder / "nan_rating.json").write_text(judgments(lambda model: model["metrics"]["ratings_scores_avg"].__setitem__(0, float("nan"))))
    (folder / "short_ratings.json").write_text(judgments(lambda model: model["metrics"]["ratings_scores_avg"].pop()))
    (folder / "off_scale.json").write_text(judgments(lambda model: model["metrics"]["ratings_scores_avg"].__setitem__(1, 7)))
    (folder / "no_intrusion.json").write_text(judgments(lambda model: model["metrics"].pop("intrusion_scores_avg")))
    (folder / "empty_topic.json").write_text(judgments(lambda model: model["topics"].__setitem__(1, [])))
    (folder / "number_word.json").write_text(judgments(lambda model: model["topics"][0].__setitem__(1, 3)))
    with open(folder / "huge.json", "wb") as huge:  # sparse: no disk used
        huge.truncate(65 * 2**20)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nobody listens once the probe closes


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """An existing sqlite store holding one experiment, 'kept', with one finished run."""
    from mlflow.tracking import MlflowClient

    folder = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = MlflowClient(uri)
    run = client.create_run(client.create_experiment("kept"))
    client.log_metric(run.info.run_id, "kept_metric", 1.0)
    client.set_terminated(run.info.run_id, "FINISHED")
    return uri


@pytest.fixture
def garbage_port():
    """A TCP server that answers every connection with bytes that are not Dask's protocol."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.sendall(b"\xff" * 64)

    threading.Thread(target=answer, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def busy_port():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_ends_with_one_clear_line_before_any_work(case, tmp_path, store, busy_port, garbage_port, capsys,
                                                            monkeypatch):
    corpora = _write_corpora(tmp_path)
    fill = {
        "corpus": str(corpora[case.corpus]), "tmp": str(tmp_path), "config": str(tmp_path / "config.yaml"),
        "store": store, "store_file": store[len("sqlite:///"):], "closed_port": str(_closed_port()), "busy_port": str(busy_port),
        "garbage_port": str(garbage_port),
    }
    for name, value in case.env.items():
        monkeypatch.setenv(name, value.format(**fill))
    if case.config is not None:
        (tmp_path / "config.yaml").write_text(case.config.replace("{corpus}", str(corpora["good"])).replace("{tmp}", str(tmp_path)))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    store_before = _store_snapshot(store)

    started = time.monotonic()
    code = main([part.format(**fill) for part in case.argv])
    seconds = time.monotonic() - started

    captured = capsys.readouterr()
    lines = [line for line in captured.err.strip().splitlines() if line.strip()]
    assert code == case.exit_code, captured.err
    assert lines, "no error message"
    assert case.message.format(**fill) in lines[-1], lines[-1]
    assert "Traceback" not in captured.err
    # nothing created where it failed (no store, no report folder, no half-written result) ...
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before
    # ... and nothing already tracked changed
    assert _store_snapshot(store) == store_before
    # checked before any work: no cluster, no server, no fit started (those take many seconds)
    assert seconds < 30, f"took {seconds:.0f} s to fail"


def _store_snapshot(uri: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("kept").experiment_id])
    return sorted((r.info.run_id, r.info.status, tuple(sorted(r.data.metrics.items()))) for r in runs)


def test_the_table_covers_every_fault_found_so_far():
    """73 cases before issue 29, 48 more from its hostile-input review, 9 for the LLM judge."""
    assert len(CASES) >= 130 and len({case.name for case in CASES}) == len(CASES)


def test_a_result_that_cannot_be_written_after_the_fit_is_kept(tmp_path, capsys, monkeypatch):
    """The output path passed its check but fails at the end (the disk filled up): the fit's
    result goes to a temporary file that the last line names."""
    import json

    from topicbench.core.elda.solution import Solution

    corpora = _write_corpora(tmp_path)
    original = Solution.to_json
    target = tmp_path / "out.json"

    def fail_once(self, path, **kwargs):
        if Path(path) == target:
            raise OSError(28, "No space left on device")
        return original(self, path, **kwargs)

    monkeypatch.setattr(Solution, "to_json", fail_once)
    code = main(["elda", "--corpus", str(corpora["good"]), "--preprocessed", "--json", str(target)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert "No space left on device" in err[-1] and "the result is kept at" in err[-1]
    kept = Path(err[-1].split("the result is kept at ")[1])
    assert json.loads(kept.read_text())["num_links"] == 12
