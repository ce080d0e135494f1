"""The report: a benchmark's runs -> ``report.md``, a self-contained ``report.html`` and plots.

A pipeline of three steps, each in its own modules; only the two ends touch anything outside.

**Read** (side effects: a store or a bundle) -- in :mod:`topicbench.tasks.results`, the read
side a report shares with bundles and the leaderboard: :class:`~topicbench.tasks.results.sources.RunSource`
(a store's :class:`~topicbench.tasks.results.sources.StoreSource`, or a bundle's
:class:`~topicbench.tasks.results.bundle_source.BundleSource`), with each model's stability across
seeds scored once (:mod:`topicbench.tasks.results.stability`).

**Build** (pure functions of the run table)

- :mod:`.lead` -- the opening lines (what the report rests on, what is not finished yet).
- :mod:`.parts` -- a report before rendering: :class:`~.parts.ReportData`, what every section is
  built from, and the :class:`~.parts.Report` (sections of blocks and plots) the sections build.
- :mod:`.sections` -- the section registry and :func:`~.sections.build_report`: the config names
  the sections, each a function of :class:`~.parts.ReportData`.
- :mod:`.summary` -- the summary: K and seeds per cell, the caution on K, gaps and their reasons.
- :mod:`.verdict` -- the verdict in words that opens the summary (who leads where, how strongly
  by the stated test, at what K, what to try next), and the caution on K-sensitive scores.
- :mod:`.data_and_settings` -- what the numbers rest on: corpora, preprocessing, labels, each
  model's settings, seeds and versions, printed with their types.
- :mod:`.reasons` -- why a section, a plot or a table leaves something out, and why counts differ.
- :mod:`.k_curves`, :mod:`.k_section` -- the K section: every score against K, verdicts only from
  fits at the same K, the prevalence-weighted mean where K differ (:mod:`.k_plots` draws it).
- :mod:`.tables` -- the table blocks (estimates with their ± labelled, best rows, shares).
- :mod:`.unranked` -- values shown but never ranked (outside their metric's valid range, or worse
  than the uniform model), with their reason.
- :mod:`.emphasis` -- the test behind bold cells, stated once under each section.
- :mod:`.statistics` -- rankings and their agreement (Set 1, Kendall tau with its caveats).
- :mod:`.llm_judged` -- the LLM section's texts: the judge's calibrations against people (on
  words; on documents, ProxAnn) and what the document-level means rest on.
- :mod:`.stability` -- the stability section's tables and remarks, from the scored findings.
- :mod:`.topics` -- the topics a reader judges: prevalent topics, examples, by label, matched.
- :mod:`.text` -- text blocks (Markdown, code) and their rendering in both formats.
- :mod:`.layout` -- tables side by side, each with its own footnotes, what they share said once.
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
