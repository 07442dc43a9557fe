"""The mail reader's patterns on hostile shapes of header and body: each is read in memory of
a small multiple of the message and in time linear in it, through the command line's own
reading functions (the mail lexer with every header, the words lexer with the default ones,
the journal's key, filter's verdict). A pattern that repeats a group keeps a backtracking
entry for each match of the group until the whole match ends: split_message's field (a field
and its continuation lines), the base64 lines and a quoted parameter's escapes took 60 to 340
bytes of memory a byte of such shapes. And the patterns that replaced them read every message
as the old ones did (generated messages, against the old patterns kept here)."""

import functools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbtext.delivery.headers import with_headers
from nbtext.reading import mail
from nbtext.reading.documents import document_key
from nbtext.reading.tokenize import Tokenizer

from test_hostile import MAIL_LEXER, assert_linear, message, peak, repeat


def subject(value):
    return b"From: a@example.com\nSubject: " + value + b"\n\nhi"


SHAPES = {  # name -> a message of about `size` bytes
    "a header folded into lines of ' \\r'": lambda n: subject(b"a\n" + repeat(b" \r\n", n)[:-1]),
    "a header folded into blank lines": lambda n: subject(b"a\n" + repeat(b" \n", n)[:-1]),
    "thousands of continuation lines": lambda n: subject(b"a\n" + repeat(b"\tfree\n", n)[:-1]),
    "thousands of empty fields": lambda n: b"From: a@example.com\n" + repeat(b"a:\n", n) + b"\nhi",
    "a header of ':'": lambda n: subject(repeat(b":", n)),
    "lines of ':'": lambda n: b"From: a@example.com\n" + repeat(b":\n", n) + b"\nhi",
    "a base64 body of blank lines": lambda n: message(repeat(b"\n", n), b"text/plain", b"base64"),
    "a base64 body of '=' lines": lambda n: message(repeat(b"=\r\n", n), b"text/plain", b"base64"),
    "a base64 body of '='": lambda n: message(repeat(b"=", n), b"text/plain", b"base64"),
    "a quoted-printable body of '='": lambda n: message(repeat(b"=", n), b"text/plain", b"quoted-printable"),
    "a quoted parameter of escapes": lambda n: message(b"hi", b'text/plain; charset="' + repeat(b"\\a", n) + b'"'),
    "an unclosed quoted parameter of escapes": lambda n: message(b"hi", b'text/plain; name="' + repeat(b"\\a", n)),
    "quoted parameters of escaped quotes": lambda n: message(b"hi", b"text/plain" + repeat(b'; a="\\";', n)),
    "a folded boundary parameter": lambda n: message(
        b"--b\n\nhi\n", b'multipart/mixed;\n boundary="b";' + repeat(b"\n x=\\=;", n)
    ),
    "MIME boundaries": lambda n: message(repeat(b"--b\n", n), b"multipart/mixed; boundary=b"),
    "a boundary of dashes": lambda n: message(repeat(b"-", n) + b"\n", b"multipart/mixed; boundary=-"),
    "folded encoded words": lambda n: subject(repeat(b"=?utf-8?q?a?=\n ", n)),
    "runs of '=?'": lambda n: subject(repeat(b"=?", n)),
    "encoded words in a parameter": lambda n: message(b"hi", b"text/plain; name=" + repeat(b"=?utf-8?b?YQ==?=", n)),
}

WORDS = Tokenizer(input="mail")  # the default lexer and headers


def filtered(data):
    return with_headers(data, [("X-Nbtext-Class", "spam")])


READERS = {"mail lexer, every header": MAIL_LEXER, "words": WORDS, "key": document_key, "filter": filtered}


PLAIN_SIZE = 100_000


@functools.lru_cache(maxsize=None)
def plain_peak(reader):
    """The memory traced while `reader` reads a plain message of PLAIN_SIZE bytes (once a run)."""
    return peak(READERS[reader], message(repeat(b"free prize lunch ", PLAIN_SIZE), b"text/plain"))


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_hostile_shape_takes_memory_of_a_small_multiple_of_the_message(shape, reader):
    """Within 3 times what a plain message of the same size takes through the same reader (or
    its own size, for a reader that takes none): a repeated group held 60 to 340 bytes a byte."""
    data = SHAPES[shape](PLAIN_SIZE)
    per_byte = max(plain_peak(reader) / PLAIN_SIZE, 1)
    assert peak(READERS[reader], data) < 3 * per_byte * len(data), f"{shape}, {reader}"


@pytest.mark.parametrize("shape", SHAPES)
def test_a_hostile_shape_takes_time_linear_in_the_message(shape):
    assert_linear(shape, SHAPES[shape](50_000), SHAPES[shape](200_000), MAIL_LEXER)


# The patterns before they were searched piece by piece (each repeated a group): what
# split_message, a header's parameters and a base64 body must still give.
OLD_FIELD = re.compile(rb"^([!-9;-~]+)[ \t]*:[ \t]*(.*(?:\r?\n[ \t].*)*)", re.M)
OLD_FOLD = re.compile(rb"\r?\n(?=[ \t])")
OLD_PARAM = re.compile(r';\s*([\w.\-]+\*?)\s*=\s*("[^"\\]*(?:\\.[^"\\]*)*"|[^;\s]*)')
OLD_BASE64_LINES = re.compile(rb"(?:[ \t]*(?:[A-Za-z0-9+/=]+[ \t]*)?\r?\n)*(?:[ \t]*[A-Za-z0-9+/=]+[ \t]*$)?")

PIECES = st.sampled_from(
    [b"Subject: a", b"X-A :\t", b"a:", b":", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\n ", b"\r\n\t", b"QUJD",
     b"==", b"+/", b"=?utf-8?q?a?=", b"\\", b'"', b";", b"; b=", b'; c="', b"\\\n", b"body", b"\xff"]
)  # fmt: skip


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=24).map(b"".join))
def test_messages_parameters_and_base64_are_read_as_the_old_patterns_read_them(data):
    fields, body = mail.split_message(data)
    if mail._HEADER_LINE.match(data):
        old = {}
        blank = mail._BLANK_LINE.search(data)
        for name, value in OLD_FIELD.findall(data if blank is None else data[: blank.start()]):
            value = OLD_FOLD.sub(b"", value) if b"\n" in value else value
            old.setdefault(name.lower().decode("ascii"), []).append(value.rstrip(b"\r"))
        assert fields == old
    text = data.decode("latin-1")
    assert list(mail._parameters(text)) == OLD_PARAM.findall(text)
    end = OLD_BASE64_LINES.match(data).end()
    decoded = mail.decode_body(data, {"content-transfer-encoding": [b"base64"]})
    try:
        assert decoded == mail.binascii.a2b_base64(data[:end] + b"===") + data[end:]
    except mail.binascii.Error:
        assert decoded == data


@pytest.mark.parametrize("escapes", [1023, 1024, 1025, 3072])  # about mail.QUOTED_RUN, a run of escapes read at a time
@pytest.mark.parametrize("end", ['"', "", "\\", "\\\n", '\\"', 'x"; b="y"'])
def test_a_quoted_value_read_in_runs_of_escapes_is_the_old_patterns(escapes, end):
    text = '; a="' + "x\\y" * escapes + end + "; c=d"
    assert list(mail._parameters(text)) == OLD_PARAM.findall(text)


ENVELOPE = b"From a@example.com Mon Jun 24 17:54:30 2002\n"


def measured_body(body):
    """An mbox whose first message's Content-Length measures `body`, an envelope line in it:
    the lines after that envelope line are held until the length is decided at the body's end."""
    body = b"x\n\n" + ENVELOPE + body
    return ENVELOPE + b"Subject: x\nContent-Length: %d\n\n" % len(body) + body + ENVELOPE + b"Subject: y\n\nhi\n"


MBOX_SHAPES = {  # name -> an mbox of about `size` bytes
    "a message of blank lines": lambda n: ENVELOPE + b"Subject: x\n\n" + repeat(b"\n", n) + ENVELOPE + b"\nhi\n",
    "a measured body of blank lines": lambda n: measured_body(repeat(b"\n", n)),
    "a measured body of short lines": lambda n: measured_body(repeat(b"a\n", n)),
    "thousands of messages": lambda n: repeat(b"\n" + ENVELOPE + b"\n", n),
}


def mbox_read(data, max_bytes=10**7):
    """The messages of an mbox file as `nbtext predict BOX` reads them (documents.mbox_messages)."""
    import io
    import warnings

    from nbtext.reading.documents import MBOX_SNIFF, mbox_messages

    f = io.BytesIO(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the notice of documents cut)
        for _ in mbox_messages(f, "box", None, f.read(MBOX_SNIFF), max_bytes):
            pass


@pytest.mark.parametrize("first_read", ["a megabyte", "a few lines"])
@pytest.mark.parametrize("max_bytes", [100, 10**7])
@pytest.mark.parametrize("shape", MBOX_SHAPES)
def test_an_mbox_of_hostile_lines_takes_memory_of_a_small_multiple_of_its_size(
    shape, max_bytes, first_read, monkeypatch
):
    """A message's lines were held one bytes object each (the first megabyte's split at once,
    then a list of the lines read after it, and a deque of those a pending Content-Length
    measures): 72 to 97 bytes a byte of blank lines. Now each message, and what is held, is
    one buffer. (A first read of a few lines: the lines after it, as in an mbox of megabytes.)"""
    from nbtext.reading import documents

    if first_read == "a few lines":
        monkeypatch.setattr(documents, "ONE_MESSAGE_READ", 100)
    data = MBOX_SHAPES[shape](100_000)
    assert peak(lambda d: mbox_read(d, max_bytes), data) < 4 * len(data)  # (the file read, its message, a copy)


@pytest.mark.parametrize("shape", MBOX_SHAPES)
def test_an_mbox_of_hostile_lines_is_read_in_time_linear_in_its_size(shape):
    assert_linear(shape, MBOX_SHAPES[shape](25_000), MBOX_SHAPES[shape](100_000), mbox_read)


class Drip:
    """A stream that gives a byte at each read, as a pipe written slowly may."""

    def __init__(self, data):
        self.data, self.read_bytes = data, 0

    def read(self, size):
        self.read_bytes += 1
        return self.data[self.read_bytes - 1 : self.read_bytes]


@pytest.mark.parametrize("max_bytes", [1000, 10**7])
def test_a_record_of_a_stream_read_a_byte_at_a_time_takes_memory_of_its_size(max_bytes):
    """stdin's lines (sources.stream_records) kept a record's chunks in a list: a record that
    came a byte at a read took 89 bytes a byte. Now one buffer."""
    import warnings

    from nbtext.reading.sources import stream_records

    def records(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the notice of documents cut)
            return list(stream_records(Drip(data), b"\n", pause=False, max_bytes=max_bytes))

    data = b"x" * 100_000 + b"\nshort\r\n" + b"y" * 1000
    assert records(data) == [b"x" * min(100_000, max_bytes), b"short", b"y" * 1000]
    assert peak(records, data) < 4 * len(data)
