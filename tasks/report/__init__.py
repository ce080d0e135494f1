"""The report: a benchmark's runs -> ``report.md``, a self-contained ``report.html`` and plots.

A pipeline of three steps, each in its own modules; only the two ends touch anything outside.

**Read** (side effects: a store or a bundle)

- :mod:`.sources` -- the one interface a report reads runs through (:class:`~.sources.RunSource`):
  :class:`~.sources.StoreSource` (an MLflow store) or
  :class:`~topicbench.tasks.results.bundle_source.BundleSource` (a result bundle, no store needed).
- :mod:`.store` -- the run table, config and per-topic scores read from an MLflow store.
- :mod:`.stability` -- each model's stability across seeds, read from the runs' outputs and
  scored (the numbers are pure: :func:`~.stability.model_stability`).

**Build** (pure functions of the run table)

- :mod:`.lead` -- the opening lines (what the report rests on, what is not finished yet).
- :mod:`.sections` -- the section registry and :func:`~.sections.build_report`: the config names
  the sections, each a function of :class:`~.sections.ReportData`.
- :mod:`.summary` -- the summary: K and seeds per cell, the caution on K, matched-K scores, gaps
  and their reasons.
- :mod:`.tables` -- the table blocks (estimates with their ± labelled, best rows, shares).
- :mod:`.statistics` -- rankings and their agreement (Set 1, Kendall tau with its caveats).
- :mod:`.llm_judged` -- the LLM section's texts: the judge's calibrations against people (on
  words; on documents, ProxAnn) and what the document-level means rest on.
- :mod:`.topics` -- the topics a reader judges: prevalent topics, examples, by label, matched.
- :mod:`.text` -- text blocks (Markdown, code) and their rendering in both formats.
- :mod:`.study` -- the search report (a study's trials), from the same blocks.

**Write** (side effects: files)

- :mod:`.plots` -- static plots (PNG, matplotlib), :mod:`.interactive` -- the HTML's plots.
- :mod:`.plot_cache` -- plots already drawn, kept in the report folder (an unchanged report
  redraws nothing).
- :mod:`.render` -- Markdown and HTML from the built report.
- :mod:`.write` -- the report's files, each written whole or not at all.

The entry point is :func:`topicbench.flows.report.report_from` (any source) or
:func:`topicbench.flows.report.report` (a store).
"""
