"""Public benchmark corpora by name: where each one is published (pinned files and checksums) and
where the local cache keeps it.

Nothing here downloads: ``topicbench data fetch NAME`` does (``flows/data.py``), and only when asked.
A dataset is in the cache once its folder holds ``metadata.json``, the last file a fetch writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .proxann_release import (HUMAN_RESPONSES, PROXANN_BASE_URL, PROXANN_CITATION, PROXANN_SOURCE, STUDY_TOPICS,
                              release_files)
from .validation import InputError

#: Overrides the cache folder (``topicbench data fetch`` writes there; configs read from there).
DATA_HOME_VARIABLE = "TOPICBENCH_DATA"
#: The file a fetch writes last into a dataset's folder: its presence means the folder is complete.
COMPLETE_MARKER = "metadata.json"

ELDA_COMMIT = "7fec784ea1ba310aaac52037285edc29afff1c1f"
ELDA_BASE_URL = f"https://raw.githubusercontent.com/BreuerLabs/E-LDA/{ELDA_COMMIT}"
ELDA_SOURCE = f"BreuerLabs/E-LDA at {ELDA_COMMIT} (preprocessed_data/), the public data release of the ICML 2025 E-LDA paper"
OCTIS_COMMIT = "8f9a0ac5a12e3b72ecd77dcba4f181c77e4595f1"
OCTIS_BASE_URL = f"https://raw.githubusercontent.com/MIND-Lab/OCTIS/{OCTIS_COMMIT}"
HOYLE_COMMIT = "6c9c92cb06a4e98f18271666c0b6864aa9550400"
HOYLE_BASE_URL = f"https://raw.githubusercontent.com/ahoho/topics/{HOYLE_COMMIT}"
HOYLE_SOURCE = f"ahoho/topics at {HOYLE_COMMIT} (data/human/all_data/), the human judgments of Hoyle et al. 2021"
#: The file of a human-judgments dataset (layout ``human_judgments``), kept as published.
JUDGMENTS_FILE = "all_data.json"
OCTIS_SOURCE = f"MIND-Lab/OCTIS at {OCTIS_COMMIT} (preprocessed_datasets/), the OCTIS benchmark release"
#: The E-LDA paper's preprocessing, as the release's own code applied it.
ELDA_PREPROCESSING = (
    "lower-cased, punctuation, stop words and one-letter tokens removed, Snowball-stemmed; tokens separated "
    "by single spaces; vocabulary.txt lists the words in the paper's order (corpus frequency, most frequent first)"
)


class DatasetError(InputError):
    """A dataset cannot be fetched or found: the message names the file and how to provide it by hand."""


@dataclass(frozen=True)
class RemoteFile:
    """One published file: its path under the dataset's base URL, its SHA-256 and size in bytes."""

    path: str
    sha256: str
    size: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Dataset:
    """A corpus published at ``base_url``, converted on fetch into an OCTIS folder.

    Attributes
    ----------
    name : str
        The name used by ``topicbench data fetch NAME`` and ``source: NAME`` in configs.
    description : str
    documents : int
        Documents of the converted corpus.
    layout : {"octis", "elda_release", "human_judgments", "proxann_release"}
        ``octis``: the files are already ``corpus.tsv``, ``vocabulary.txt`` and ``metadata.json``;
        ``elda_release``: the E-LDA authors' ``<PREFIX>_D2Windexform.txt``, ``<PREFIX>_words.txt``
        and (for the word order) ``<PREFIX>_docs.txt``, converted by ``core/elda_release.py``;
        ``human_judgments``: not a corpus but people's judgments of topics (``all_data.json``, kept
        as published), which ``topicbench judge calibrate`` reads; ``documents`` counts its topics;
        ``proxann_release``: not a corpus but ProxAnn's user study (``core/proxann_release.py``),
        its files kept as published under their paths in the repository (several share a name),
        which ``topicbench judge calibrate --protocol proxann`` reads; ``documents`` counts its
        study topics.
    files : tuple of RemoteFile
    base_url : str
        The raw GitHub URL at the pinned commit; ``--url`` replaces it (mirrors, tests).
    source, citation : str
        Recorded in the converted ``metadata.json``.
    """

    name: str
    description: str
    documents: int
    layout: str
    files: tuple
    base_url: str
    source: str
    citation: str = ""

    @property
    def size(self) -> int:
        return sum(file.size for file in self.files)

    @property
    def is_corpus(self) -> bool:
        return self.layout not in ("human_judgments", "proxann_release")

    @property
    def content(self) -> str:
        """The file (path in the dataset's folder) whose presence, beside the marker, means fetched."""
        return {"human_judgments": JUDGMENTS_FILE, "proxann_release": HUMAN_RESPONSES}.get(self.layout, "corpus.tsv")

    def local_path(self, file: RemoteFile) -> str:
        """Where ``file`` is kept in the dataset's folders: its name, or its path for a release
        whose files share names (ProxAnn's answers, one folder a seed)."""
        return file.path if self.layout == "proxann_release" else file.name


def _elda(name, prefix, description, documents, citation, files) -> Dataset:
    folder = f"preprocessed_data/{prefix}"
    return Dataset(
        name=name, description=description, documents=documents, layout="elda_release",
        files=tuple(RemoteFile(f"{folder}/{prefix}_{kind}.txt", sha256, size) for kind, sha256, size in files),
        base_url=ELDA_BASE_URL, source=ELDA_SOURCE, citation=citation,
    )


def _octis(name, description, documents, files) -> Dataset:
    return Dataset(
        name=name, description=description, documents=documents, layout="octis",
        files=tuple(RemoteFile(f"preprocessed_datasets/{name}/{file}", sha256, size) for file, sha256, size in files),
        base_url=OCTIS_BASE_URL, source=OCTIS_SOURCE,
    )


# Checksums computed from the published files at the pinned commits. OCTIS's 20NewsGroup is left
# out: its corpus.tsv is a large file that no public snapshot available to us held, so no checksum
# could be computed from the real file.
DATASETS = {dataset.name: dataset for dataset in (
    _elda("congress", "CONGRESS", "US congressional floor-debate speeches (stemmed; the E-LDA paper)", 3852,
          "Thomas, Pang and Lee. Get out the vote. EMNLP 2006.", (
              ("D2Windexform", "2052d6b676914b865d9f5abfecd0c26365b8343cfda6bd08fc68e6b797228d9d", 2207955),
              ("words", "681fbb52be7f1105d45614429af15461de0b78003a492790302cf6ce94069d71", 107638),
              ("docs", "6e4fca2fb823e073dac8ddb60468b8542ec283515e2dcd4814df0dec3e77cc23", 3719091))),
    _elda("reuters", "REUTERS", "Reuters-21578 news (stemmed, bag of words; the E-LDA paper)", 10727,
          "Lewis. Reuters-21578 text categorization test collection, 1997.", (
              ("D2Windexform", "8caccd8513a0f9daa9643038fc2de74efe80ed18b480c87a7f7482cd7d1dbf7b", 3214970),
              ("words", "79ebef816b3d92bfa1f3eabddc0d2c4d60f1e744d9cc97c280ca10dc659e5121", 177430))),
    _elda("20ng_politics", "20NEWSGROUPSPOL", "20 Newsgroups, politics groups (stemmed; the E-LDA paper)", 1575,
          "Lang. Newsweeder: learning to filter netnews. ICML 1995.", (
              ("D2Windexform", "9dbe3ffd4008db78cc71be9239860261c625be03854979d5388de94f9066ffd2", 1477659),
              ("words", "9b658c07d80be10fd60725113f9266812aee10524f19bf59722f7e462f7c3296", 157565),
              ("docs", "d1b7600b61d821004c87a2f50e6b7f0e64a58cb5cc46c0acff7d306bb64480bc", 2331736))),
    Dataset("hoyle2021", "people's ratings and intrusion answers for 300 topics (Hoyle et al. 2021; not a corpus)", 300,
            "human_judgments", (RemoteFile(f"data/human/all_data/{JUDGMENTS_FILE}",
                                           "870b445862d7b970e70c04c02cb2113311bff28f5c60ed4bfbfc24004671bbde", 174975),),
            HOYLE_BASE_URL, HOYLE_SOURCE,
            "Hoyle, Goel, Hian-Cheong, Peskov, Boyd-Graber and Resnik. Is automated topic model evaluation broken? "
            "The incoherence of coherence. NeurIPS 2021."),
    Dataset("proxann", "people's and 7 LLMs' document-level answers on 24 Bills topics (ProxAnn; not a corpus)",
            STUDY_TOPICS, "proxann_release", tuple(RemoteFile(*pinned) for pinned in release_files()),
            PROXANN_BASE_URL, PROXANN_SOURCE, PROXANN_CITATION),
    _octis("BBC_News", "BBC news articles, 5 classes (lemmatized; OCTIS)", 2225, (
        ("corpus.tsv", "f76c715babb4b1decbe0d929454d1f2fd902c67d118cecaf7fbf39f1b376c624", 1881385),
        ("vocabulary.txt", "7aaf24bf24073a3eeb6b255dac054a40c5b3deda3dbcb0317e502e8b9f2ec8aa", 22743),
        ("metadata.json", "982dd8f8e5bfa3d573fad200a1b5b4c45440dd83110d2e38e9b2e5a06920dca1", 545))),
    _octis("DBLP", "DBLP paper titles, 4 classes (lemmatized; OCTIS)", 54595, (
        ("corpus.tsv", "4f45f91db9795324d876317e9b8e63d4f792059c9291a0a1af1aecd82c98c883", 2884437),
        ("vocabulary.txt", "a32a86e91fc7dfa18ea38b34c861664dc79cc19401e77947093a77b9af16a0b9", 13341),
        ("metadata.json", "f496cf18e7da64f8fee2e607595cfd5b83f5141d7103cc7cca366b24d131951e", 1505))),
    _octis("M10", "CiteSeer-M10 paper titles, 10 classes (lemmatized; OCTIS)", 8355, (
        ("corpus.tsv", "9c891e2674a4d3bf80d6cfa56bbe877e56d3daa5e14b4779193230d205f2584a", 472372),
        ("vocabulary.txt", "b48778cab3b446786f0ab83f0d946cdae201719c2fb323bed23ad1c747982fcf", 14693),
        ("metadata.json", "0796dc5f66e7068e56c29fbaef0e8dbf56b89ae403f147c71b66b8635f3574c5", 1522))),
)}


def get_dataset(name: str) -> Dataset:
    """The registry's dataset ``name`` (case-insensitive: ``m10`` is ``M10``)."""
    for known, dataset in DATASETS.items():
        if known.lower() == str(name).lower():
            return dataset
    raise DatasetError(f"Unknown dataset {name!r}. Available: {', '.join(DATASETS)}")


def is_dataset_name(name) -> bool:
    """Whether ``name`` is a corpus of the registry (a ``source:`` a config may name)."""
    return any(known.lower() == str(name).lower() and dataset.is_corpus for known, dataset in DATASETS.items())


def data_home() -> Path:
    """The cache folder: ``$TOPICBENCH_DATA``, else the user's cache folder (platformdirs when
    installed, else ``$XDG_CACHE_HOME`` or ``~/.cache``) + ``topicbench/data``."""
    configured = os.environ.get(DATA_HOME_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    try:
        import platformdirs
    except ImportError:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cache / "topicbench" / "data"
    return Path(platformdirs.user_cache_dir("topicbench")) / "data"


def dataset_folder(name: str, home=None) -> Path:
    """Where dataset ``name`` lives under ``home`` (default :func:`data_home`), fetched or not."""
    return Path(home if home is not None else data_home()) / get_dataset(name).name


def is_cached(name: str, home=None) -> bool:
    folder = dataset_folder(name, home)
    return (folder / get_dataset(name).content).is_file() and (folder / COMPLETE_MARKER).is_file()


def cached_dataset_folder(name: str, home=None) -> Path:
    """The folder of a fetched dataset; a clear error saying how to fetch it when it is not there."""
    folder = dataset_folder(name, home)
    if not is_cached(name, home):
        raise DatasetError(
            f"dataset {get_dataset(name).name!r} is not in the data cache ({folder.parent}): run "
            f"`topicbench data fetch {get_dataset(name).name}` (or set ${DATA_HOME_VARIABLE} to where it was fetched)"
        )
    return folder
