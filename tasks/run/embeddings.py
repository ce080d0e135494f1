"""Prefect task: sentence embeddings of a corpus's documents, computed once before the fits that read them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefect import task
from prefect.cache_policies import NONE

if TYPE_CHECKING:  # numba (core.threads) is imported where the task runs, not by the flow that sends it
    from topicbench.core.corpus import Corpus


@task(name="embed_documents", retries=0, cache_policy=NONE)
def embed_documents(corpus: Corpus, model_path: str | None = None) -> str | None:
    """Fill the on-disk cache of ``corpus``'s document embeddings (one model, ``model_path``).

    Models that embed documents run concurrently; without this step each would embed the same
    corpus at the same time. A failure here is returned, not raised: the fits then embed on their
    own and any error is recorded against each of them. Returns None, or the error's message.
    """
    from topicbench.baselines.embeddings import document_embeddings
    from topicbench.core.threads import worker_threads

    with worker_threads():
        try:
            document_embeddings(corpus, model_path=model_path)
        except Exception as error:  # noqa: BLE001 - reported by the fits that need the embeddings
            return f"{type(error).__name__}: {error}"
    return None
