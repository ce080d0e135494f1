"""A progress listener that records what it is told, for the tests of fit progress (in the fit's
own process, or forwarded from a Dask worker)."""


class Recorder:
    """``events``: ("started", label), ("step", label, step, total), ("phase", label, phase),
    ("ended", label), in order."""

    def __init__(self):
        self.events = []

    def fit_started(self, label):
        self.events.append(("started", label))

    def fit_advanced(self, label, step, total, loss=None):
        self.events.append(("step", label, step, total))

    def fit_phase(self, label, phase):
        self.events.append(("phase", label, phase))

    def fit_ended(self, label):
        self.events.append(("ended", label))
