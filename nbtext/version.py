"""The version of nbtext (a leaf: the model file and the command line both name it)."""

__version__ = "0.1.0"
