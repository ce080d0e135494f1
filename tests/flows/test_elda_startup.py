"""`topicbench elda` (exact greedy) starts without the orchestration and baseline stacks.

Start-up is part of what a user waits for: importing Prefect, MLflow, Dask or torch costs seconds
and the exact greedy needs none of them. Each check runs the command in a fresh interpreter, so
modules imported by other tests do not count.
"""

import json
import subprocess
import sys

import pytest

#: Never needed by exact greedy E-LDA: orchestration, tracking, clusters, baselines, Parquet output.
HEAVY_MODULES = ("prefect", "mlflow", "dask", "distributed", "torch", "sklearn", "gensim", "pandas", "pyarrow")

_RUN_AND_LIST_MODULES = """
import contextlib, io, json, sys
from topicbench.flows.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def elda_modules(tmp_path_factory):
    """The modules imported by one `topicbench elda` run on a small corpus, in a fresh interpreter."""
    folder = tmp_path_factory.mktemp("corpus")
    documents = ["budget tax cut budget", "tax cut vote budget", "war troops iraq vote", "iraq war troops budget"]
    (folder / "corpus.tsv").write_text("".join(f"{d}\ttrain\n" for d in documents))
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, "elda", "--corpus", str(folder), "--preprocessed",
         "--generator", "raw_umass", "--kappa", "2", "--top", "0"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    return set(result["modules"])


@pytest.mark.parametrize("heavy", HEAVY_MODULES)
def test_exact_elda_does_not_import(elda_modules, heavy):
    assert heavy not in elda_modules


def test_exact_elda_does_not_import_scipy_sparse(elda_modules):
    # the kernels read the corpus's CSR arrays; scipy.sparse only wraps them for other callers
    assert "scipy.sparse" not in elda_modules


def test_the_check_sees_imports(elda_modules):
    # the listing is real: what the command does use is in it
    assert {"numba", "topicbench.core.elda.greedy", "topicbench.core.elda.generators"} <= elda_modules


def test_exact_elda_does_not_load_numpy_f2py(elda_modules):
    # numba's BLAS check imports scipy.linalg, whose array-API layer touches every attribute of
    # numpy, numpy.f2py included; the command defers it (flows/cli/startup.py), so its modules never run
    assert "numpy.f2py" in elda_modules  # registered, lazily
    assert "numpy.f2py.crackfortran" not in elda_modules


_DEFER_THEN_USE = """
import sys
from topicbench.flows.cli.startup import defer_imports
deferred = defer_imports(("numpy.f2py", "not_a_module_anywhere.child"))
import scipy.linalg  # reads numpy.f2py through numpy's module __getattr__
loaded_by_scipy = "numpy.f2py.crackfortran" in sys.modules
import numpy
include = numpy.f2py.get_include()  # the first use runs the real import
print(deferred, loaded_by_scipy, "numpy.f2py.crackfortran" in sys.modules, include.endswith("src"))
"""


def test_a_deferred_module_loads_on_first_use():
    done = subprocess.run([sys.executable, "-c", _DEFER_THEN_USE], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['numpy.f2py']", "False", "True", "True"]
