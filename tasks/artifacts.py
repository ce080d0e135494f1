"""A run's artifacts, written where the run was fitted and logged by the flow from there.

A fit scored on its worker writes its output (``output/`` with ``output.json`` and
``matrices.npz``, ``topics.json``, ``topics.csv``; ``topic_scores.csv``, each topic's own
scores) to a temporary folder and sends the flow its
:class:`ArtifactFolder`: the folder's path when the flow runs on the same host (a local cluster,
or in-process), or else the files' bytes, since the flow cannot read another host's disk. The
flow logs the folder to MLflow and then removes it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from topicbench.core.output import TopicModelOutput

#: Prefix of the temporary folders a fit's artifacts are written to.
FOLDER_PREFIX = "topicbench-run-"

#: Each topic's own scores: a row per topic (``topic``: its row in ``topics.json``), a column per
#: score key (``npmi@10``); the model-level scores are their means.
TOPIC_SCORES = "topic_scores.csv"


def write_output_artifacts(output: TopicModelOutput, folder) -> Path:
    """Write what a tracked run keeps of an output to ``folder``: ``output/`` (its matrices in
    their own form, :meth:`TopicModelOutput.save`), ``topics.json`` and ``topics.csv``."""
    import pandas as pd  # imported here for its import cost: only artifact writing needs it

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    output.save(folder / "output")
    labels = output.topic_labels or [None] * output.n_topics
    records = [{"topic": k, "label": labels[k], "words": " ".join(words)} for k, words in enumerate(output.topics)]
    (folder / "topics.json").write_text(json.dumps(records, indent=1, ensure_ascii=False), encoding="utf-8")
    pd.DataFrame(records).to_csv(folder / "topics.csv", index=False)
    return folder


def topic_scores_text(topic_scores: dict) -> str:
    """:data:`TOPIC_SCORES`'s text from score key -> one value per topic (NaN: an empty cell)."""
    import pandas as pd  # imported here for its import cost, as above

    frame = pd.DataFrame({key: list(values) for key, values in topic_scores.items()})
    frame.insert(0, "topic", range(len(frame)))
    return frame.to_csv(index=False, float_format="%.6g")


@dataclass(frozen=True)
class ArtifactFolder:
    """Where a run's artifacts are: ``path`` on ``host``, or, from another host, ``files``
    (relative path -> bytes) and no path.

    Attributes
    ----------
    host : str
        The host that wrote them.
    path : str or None
        Their temporary folder on ``host`` (None once packed into ``files``).
    files : dict of str -> bytes
        The files, when they were written on a host other than the flow's.
    """

    host: str
    path: str | None
    files: dict = field(default_factory=dict)

    @classmethod
    def write(cls, output: TopicModelOutput, flow_host: str, extra: dict | None = None) -> "ArtifactFolder":
        """Write ``output``'s artifacts (and ``extra``: relative path -> text) to a new temporary
        folder; pack them into bytes (and remove the folder) when ``flow_host`` is not this host."""
        folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        try:
            write_output_artifacts(output, folder)
            for name, text in (extra or {}).items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text, encoding="utf-8")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        host = socket.gethostname()
        if host == flow_host:
            return cls(host=host, path=str(folder))
        files = {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}
        shutil.rmtree(folder, ignore_errors=True)
        return cls(host=host, path=None, files=files)

    @contextlib.contextmanager
    def local_folder(self):
        """A folder on this host holding the artifacts, for the block: the written folder itself,
        or a temporary one the packed files are written to (removed after the block)."""
        if self.path is not None:
            if self.host != socket.gethostname() or not Path(self.path).is_dir():
                raise FileNotFoundError(
                    f"the run's artifacts folder {self.path} of host {self.host} is not on this host "
                    f"({socket.gethostname()}): they are sent as files only to a flow on another host"
                )
            yield Path(self.path)
            return
        with tempfile.TemporaryDirectory(prefix=FOLDER_PREFIX) as folder:
            for name, data in self.files.items():
                target = Path(folder) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            yield Path(folder)

    def remove(self) -> None:
        """Delete the written folder (when it is on this host); nothing else to free."""
        if self.path is not None and self.host == socket.gethostname():
            shutil.rmtree(self.path, ignore_errors=True)
