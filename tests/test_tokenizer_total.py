"""The tokenizer is a total function: whatever a document holds, the tokenizer the command
line builds (every input mode, header set and n-gram setting) returns tokens a model file
can hold (text, no NUL or other control character), and one document never stops a
batch. A bounded pass of the fuzz target in fuzz/fuzz.py (`documents`), which `make fuzz`
runs for longer."""

import os

from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings, strategies as st

from nbtext.classifier.settings import make_settings, make_tokenizer
from nbtext.cli.commands import cli
from nbtext.labels import without_controls

from hostile_documents import REFERENCES, documents

HEADER_SETS = [
    ("subject", "from", "to", "content-type"),
    (),
    ("subject", "content-type", "content-disposition", "received", "x-mailer", "from"),
    ("subject", "*"),
]


def tokenizer(input_mode, headers, ngrams, lexer="words"):
    headers = None if input_mode == "text" else ",".join(headers) or "subject"  # (text reads no headers)
    return make_tokenizer(make_settings(input=input_mode, headers=headers, ngrams=ngrams, lexer=lexer)["tokenizer"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    documents(),
    st.sampled_from(["auto", "mail", "text"]),
    st.sampled_from(HEADER_SETS),
    st.sampled_from([1, 2]),
    st.sampled_from(["words", "mail"]),
)
@example(
    b"Subject: x\nContent-Type: text/html\n\n<a href='http://a/&#"
    + b"1" * 5000
    + b";'>"
    + b"&#9" * 2
    + b"9" * 5000
    + b"; free",
    "auto",
    HEADER_SETS[0],
    1,
    "words",
)
@example(
    b"Subject: x\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: application/p\0df\n\nx\n--b--\n"
    b"<a href='http://evil\0host/'>",
    "mail",
    HEADER_SETS[0],
    1,
    "mail",
)
@example(
    b'Subject: x\nContent-Type: text/html\n\n<a href="http://evil\0host/">y</a> http://a\x00b/ free',
    "mail",
    HEADER_SETS[0],
    2,
    "words",
)
def test_every_document_gives_tokens_a_model_file_can_hold(document, input_mode, headers, ngrams, lexer):
    tokens = tokenizer(input_mode, headers, ngrams, lexer)(document)
    assert isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)
    assert all(without_controls(t) == t for t in tokens), [t for t in tokens if without_controls(t) != t][:3]
    for token in tokens:
        token.encode("utf-8", "surrogatepass")  # as the model file writes them


def test_numeric_references_of_thousands_of_digits_decode_to_the_replacement_character():
    from nbtext.reading.mail import unescape

    assert unescape(REFERENCES[0]) == "\ufffd" and unescape(REFERENCES[1]) == "\ufffd"
    assert unescape(REFERENCES[2]) == "A"  # leading zeros are not digits that count
    assert unescape("&#65;&#x42;&amp;&#0;&#x110000;") == "AB&\ufffd\ufffd"


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(documents(), min_size=2, max_size=6),
    st.sampled_from(
        [
            [],
            ["--model", "bernoulli"],
            ["--features", "tfidf"],
            ["--input", "mail"],
            ["--lexer", "mail", "--headers", "*"],
        ]
    ),
)
@example(
    [
        b"Subject: x\nContent-Type: text/html\n\n<a href='http://evil\0host/'>y</a> &#" + b"9" * 5000 + b"; free",
        b"Subject: y\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: image/p\0ng\n\nx\n--b--\n",
    ],
    [],
)
def test_hostile_documents_through_train_predict_and_filter(tmp_path_factory, corpus, options):
    """The command line's own functions on a folder of them: train writes a model (every
    document learned or skipped by name), predict classifies each one, filter passes each
    one through whole; never a traceback."""
    folder = tmp_path_factory.mktemp("hostile")
    for label in ("spam", "ham"):
        os.makedirs(folder / label)
        for base in ("base1.txt", "base2.txt"):  # tokens enough to survive --min-count 2, however counted
            (folder / label / base).write_bytes(b"free prize" if label == "spam" else b"lunch meeting")
    for i, data in enumerate(corpus):
        (folder / ("spam", "ham")[i % 2] / f"{i}.eml").write_bytes(data)
    model = folder / "m.model"
    runner = CliRunner()
    trained = runner.invoke(
        cli, ["train", "-q", "-j", "1", "-o", str(model), *options, str(folder / "spam"), str(folder / "ham")]
    )
    assert trained.exit_code in (0, 1) and model.exists(), (trained.output, trained.exception)
    assert not isinstance(trained.exception, Exception) or isinstance(trained.exception, SystemExit)
    predicted = runner.invoke(cli, ["predict", "-j", "1", "-m", str(model), str(folder / "spam"), str(folder / "ham")])
    assert predicted.exit_code in (0, 1) and isinstance(predicted.exception, (SystemExit, type(None)))
    assert predicted.stdout.count("\n") + predicted.stderr.count("skipped") >= len(corpus) + 4
    for data in corpus:  # the message whole: the output less the lines filter adds
        filtered = runner.invoke(cli, ["filter", "-m", str(model)], input=data)
        assert filtered.exit_code == 0, filtered.stderr
        lines = filtered.stdout_bytes.splitlines(keepends=True)
        kept = b"".join(line for line in lines if not line.startswith(b"X-Nbtext-"))
        # not mail: a header block of its own in front; a last header line gets its line end
        assert kept in (data, b"\n" + data, b"\r\n" + data, data + b"\n", data + b"\r\n")
