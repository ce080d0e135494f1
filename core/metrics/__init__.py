"""Metrics over any model output: coherence, embedding coherence, diversity, posterior quality,
held-out fit, label-based scores and statistics across seeds. Pure functions, no orchestration."""
