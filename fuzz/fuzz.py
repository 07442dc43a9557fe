"""Coverage-guided fuzzing (atheris) of the readers of hostile input: the mail reader, the
table reader, the model loader, and whole documents through the tokenizer the command line
builds (`documents`: tests/hostile_documents.py's generator of mail with every decoder,
driven by atheris' bytes through hypothesis; tests/test_tokenizer_total.py runs a bounded
pass of the same target in `make test`). `make fuzz` runs each for a while; a crash is
saved by atheris as crash-* and becomes a regression test in tests/.

    .venv/bin/python fuzz/fuzz.py mail|table|model|documents [atheris/libFuzzer options, e.g. -max_total_time=60]
"""

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    import nbtext.classifier.purescore
    import nbtext.modelfile.format
    import nbtext.modelfile.schema
    import nbtext.reading.mail
    import nbtext.reading.sources
    import nbtext.reading.tokenize
    from nbtext.errors import NbtextError
    from nbtext.jobs.loading import load  # the one reader of a whole model file

SCRATCH = tempfile.mkdtemp(prefix="nbtext-fuzz-")
TOKENIZE = nbtext.reading.tokenize.Tokenizer(input="mail")


def mail(data):
    tokens = TOKENIZE(data)  # never raises: whatever a message holds, it is read as its words
    assert all(isinstance(t, str) for t in tokens)


def table(data):
    path = os.path.join(SCRATCH, "t.csv" if data[:1] == b"," else "t.tsv")
    with open(path, "wb") as f:
        f.write(data[1:])
    try:
        for _ in nbtext.reading.sources.table_documents(path, "1", "2"):
            pass
    except NbtextError:
        pass


def model(data):
    path = os.path.join(SCRATCH, "m.model")
    with open(path, "wb") as f:
        f.write(nbtext.modelfile.format.MAGIC + data)
    try:
        load(path).predict_proba(["free prize lunch"])
    except NbtextError:
        pass
    # The pure-Python reader of one message's worth (nbtext.classifier.purescore): None or an answer, never an exception.
    pure = nbtext.classifier.purescore.of_file(nbtext.modelfile.format.MAGIC + data, path)
    if pure is not None:
        nbtext.classifier.purescore.probabilities(pure, b"free prize lunch")


def documents():
    """The hypothesis test of whole documents through the command line's tokenizer, as a
    function of the fuzzer's bytes."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from test_tokenizer_total import test_every_document_gives_tokens_a_model_file_can_hold as test

    return test.hypothesis.fuzz_one_input


if __name__ == "__main__":
    name = sys.argv.pop(1)
    target = documents() if name == "documents" else {"mail": mail, "table": table, "model": model}[name]
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()
