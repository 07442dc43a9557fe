"""Coverage-guided fuzzing (atheris) of the readers of hostile input: the mail reader, the
table reader and the model loader. `make fuzz` runs each for a while; a crash is saved by
atheris as crash-* and becomes a regression test in tests/test_hostile*.py.

    .venv/bin/python fuzz/fuzz.py mail|table|model [atheris/libFuzzer options, e.g. -max_total_time=60]
"""

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    import nbtext.mail
    import nbtext.modelfile
    import nbtext.purescore
    import nbtext.schema
    import nbtext.sources
    import nbtext.tokenize
    from nbtext.errors import NbtextError
    from nbtext.model import load

SCRATCH = tempfile.mkdtemp(prefix="nbtext-fuzz-")
TOKENIZE = nbtext.tokenize.Tokenizer(input="mail")


def mail(data):
    tokens = TOKENIZE(data)  # never raises: whatever a message holds, it is read as its words
    assert all(isinstance(t, str) for t in tokens)


def table(data):
    path = os.path.join(SCRATCH, "t.csv" if data[:1] == b"," else "t.tsv")
    with open(path, "wb") as f:
        f.write(data[1:])
    try:
        for _ in nbtext.sources.table_documents(path, "1", "2"):
            pass
    except NbtextError:
        pass


def model(data):
    path = os.path.join(SCRATCH, "m.model")
    with open(path, "wb") as f:
        f.write(nbtext.modelfile.MAGIC + data)
    try:
        load(path).predict_proba(["free prize lunch"])
    except NbtextError:
        pass
    # The pure-Python reader of one message's worth (nbtext.purescore): None or an answer, never an exception.
    pure = nbtext.purescore.of_file(nbtext.modelfile.MAGIC + data, path)
    if pure is not None:
        nbtext.purescore.probabilities(pure, b"free prize lunch")


if __name__ == "__main__":
    target = {"mail": mail, "table": table, "model": model}[sys.argv.pop(1)]
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()
