"""nbtext: a command-line Naive Bayes text classifier.

>>> import nbtext
>>> clf = nbtext.train(["cheap pills now", "lunch at noon"], ["spam", "ham"], min_count=1)
>>> clf.predict(["cheap pills"])
['spam']
>>> clf.save("nbtext.model"); clf = nbtext.load("nbtext.model")  # doctest: +SKIP
>>> nbtext.evaluate(clf, ["pills now"], ["spam"])["accuracy"]  # doctest: +SKIP
>>> both = nbtext.merge([nbtext.load("a.model"), nbtext.load("b.model")])  # doctest: +SKIP
"""

from nbtext.errors import NbtextError
from nbtext.version import __version__

__all__ = ["NbtextError", "NaiveBayes", "train", "load", "evaluate", "merge", "__version__"]

# The library modules import numpy; keep `import nbtext` (and the CLI's start-up) light.
_LAZY = {
    "NaiveBayes": "nbtext.classifier.model",
    "train": "nbtext.jobs.training",
    "load": "nbtext.jobs.loading",
    "evaluate": "nbtext.jobs.evaluation",
    "merge": "nbtext.jobs.merging",
}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nbtext' has no attribute {name!r}")
