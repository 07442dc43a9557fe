"""nbtext: a command-line Naive Bayes text classifier.

    >>> import nbtext
    >>> clf = nbtext.train(["cheap pills now", "lunch at noon"], ["spam", "ham"], min_count=1)
    >>> clf.predict(["cheap pills"])
    ['spam']
    >>> clf.save("nbtext.model"); clf = nbtext.load("nbtext.model")  # doctest: +SKIP
"""

__version__ = "0.1.0"
__all__ = ["NbtextError", "NaiveBayes", "train", "load", "__version__"]

from nbtext.errors import NbtextError


def __getattr__(name):
    # The library modules import numpy; keep `import nbtext` (and the CLI's start-up) light.
    if name == "NaiveBayes":
        from nbtext.model import NaiveBayes

        return NaiveBayes
    if name == "train":
        from nbtext.training import train

        return train
    if name == "load":
        from nbtext.modelfile import load

        return load
    raise AttributeError(f"module 'nbtext' has no attribute {name!r}")
