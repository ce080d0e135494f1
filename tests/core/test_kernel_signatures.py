"""Kernels take a few named records, not long runs of positional arrays (issue 28).

An array's place in a list of 27 was defined in one file and relied on in another, where swapping
two arrays of the same type went unnoticed; the records (core/elda/kernels/records.py, and
SparseRows/RowMoments of core/metrics/stability_kernels.py) name them.
The check reads each kernel's Python signature (``py_func``) in every kernel module
``topicbench compile`` covers, each kernel under the module that defines it.
"""

from __future__ import annotations

import inspect

import pytest

from topicbench.core.precompile import KERNEL_MODULES, kernel_dispatchers

#: Most parameters a kernel may take.
MAX_KERNEL_PARAMETERS = 8

def _parameter_counts(module) -> dict:
    short = module.__name__.removeprefix("topicbench.core.")
    return {
        name: len(inspect.signature(kernel.py_func).parameters)
        for name, kernel in kernel_dispatchers().items()
        if name.rpartition(".")[0] == short
    }


@pytest.mark.parametrize("module", KERNEL_MODULES, ids=[m.__name__.removeprefix("topicbench.core.") for m in KERNEL_MODULES])
def test_no_kernel_takes_more_than_eight_parameters(module):
    counts = _parameter_counts(module)
    assert counts, f"{module.__name__} defines no kernel"
    too_many = {name: n for name, n in counts.items() if n > MAX_KERNEL_PARAMETERS}
    assert not too_many, f"kernels over {MAX_KERNEL_PARAMETERS} parameters: {too_many}"


def test_every_kernel_is_counted_once_under_the_module_that_defines_it():
    """A kernel imported by another kernel module is not counted (or compiled, or reported) twice."""
    dispatchers = kernel_dispatchers()
    assert len({id(kernel) for kernel in dispatchers.values()}) == len(dispatchers)
    for name, kernel in dispatchers.items():
        assert f"topicbench.core.{name.rpartition('.')[0]}" == kernel.py_func.__module__, name
