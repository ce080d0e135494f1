"""A config chooses its report's sections, checked against the section registry at the door."""

from __future__ import annotations

import pytest

from topicbench.core.validation import InputError
from topicbench.flows.config.model import BenchmarkConfig
from topicbench.flows.report import report_sections
from topicbench.tasks.report.sections import DEFAULT_REPORT_SECTIONS


def _config(**changes):
    return BenchmarkConfig.from_dict({"models": [{"model": "elda"}], **changes})


def test_report_sections_default_to_the_ordinary_ones():
    config = _config()
    assert config.report_sections is None
    assert report_sections(config.to_dict()) == DEFAULT_REPORT_SECTIONS
    assert report_sections(None, ["coherence"]) == ("coherence",)  # asked for beats the config


def test_a_config_lists_its_sections_including_the_papers():
    config = _config(report_sections=["changed_settings", "paper_set1", "coherence"])
    assert config.report_sections == ("changed_settings", "paper_set1", "coherence")
    assert report_sections(config.to_dict()) == config.report_sections


@pytest.mark.parametrize("sections, message", [
    (["coherence", "nope"], r"report_sections\[1\]: Unknown report section 'nope'. Available: .*robustness"),
    ("coherence", "report_sections must be a list of report section names or null"),
    ([], "report_sections is empty: list at least one"),
])
def test_bad_report_sections_fail_with_the_choices(sections, message):
    with pytest.raises(InputError, match=message):
        _config(report_sections=sections)
