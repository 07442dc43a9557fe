"""One envelope rule for a whole mbox (nbtext.reading.mbox), whichever way a file comes in.

Generated mboxes of N messages (envelope lines of every form, bodies with quoted and
unquoted `From ` lines, Content-Length headers right, wrong, absurd or absent, LF or CRLF)
are read by every reader: a file path, a folder holding it, stdin, a --files-from list, a
cluster's worker (through fsspec), and the command line's predict, train and forget. Each
gives the same N messages, byte for byte the messages written.
"""

import io
import warnings

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import run
from nbtext.reading.mbox import CONTENT_LENGTH_LIMIT, is_separator, messages, starts_mbox

SENDERS = [b"a@example.com", b"-", b"", b"MAILER-DAEMON", b"a@[1086695621] [ufa]", b'"x y"@example.com']
DATES = [
    b"Mon Jun 24 17:54:30 2002",  # asctime
    b"Sun Aug  5 09:51:15 2001",
    b"mon jun 24 17:54:30 2002",  # lowercase
    b"Mon Jun 24 17:54:30 +0000 2002",
    b"Mon, 24 Jun 2002 17:54:30 +0000",  # RFC 2822
    b"24 Jun 2002 17:54",
    b"2002-06-24 17:54:30",  # numeric
    b"2002-06-24T17:54:30Z",
    b"24/06/2002 17:54",
]


@st.composite
def envelopes(draw):
    sender, date = draw(st.sampled_from(SENDERS)), draw(st.sampled_from(DATES))
    return b"From " + sender + draw(st.sampled_from([b" ", b"  "])) + date


TEXT_LINES = [
    b"hello there",
    b"",
    b">From quoted Mon Jun 24 17:54:30 2002",
    b">>From twice",
    b"From here on, text",
    b"From: a reply",
    b"Fromage",
    b"x" * 120,
]


@st.composite
def mboxes(draw, unquoted=False):
    """(mbox bytes, [each message as a reader should give it], [each message with its
    envelope line]). Bodies hold an unquoted envelope line only where the message has a
    right Content-Length (or with `unquoted`, anywhere: then only the readers' agreement is
    known, not the messages)."""
    end = draw(st.sampled_from([b"\n", b"\r\n"]))
    count = draw(st.integers(1, 5))
    written, expected, whole = [], [], []
    for i in range(count):
        length = draw(st.sampled_from(["none", "right", "right+1", "short", "long", "absurd", "garbage"]))
        if length == "right+1" and i == count - 1:
            length = "right"  # (the last body has no empty line after it to count)
        pool = TEXT_LINES + ([b"", b"ENVELOPE"] if unquoted or length in ("right", "right+1") else [])
        lines = draw(st.lists(st.sampled_from(pool), max_size=8))
        body = b"".join((draw(envelopes()) if line == b"ENVELOPE" else line) + end for line in lines)
        header = [b"Subject: message %d" % i, b"From: a@example.com"]
        value = {
            "none": None,
            "right": len(body),
            "right+1": len(body) + len(end),
            "short": max(len(body) - 1, 0),
            "long": len(body) + draw(st.integers(2, 20)),
            "absurd": 10**11,
            "garbage": b"12x",
        }[length]
        if value is not None and not (length == "short" and not body):
            header.insert(
                draw(st.integers(0, 2)), b"Content-Length: " + (value if isinstance(value, bytes) else b"%d" % value)
            )
        message = b"".join(line + end for line in header) + end + body
        envelope = draw(envelopes())
        written.append(envelope + end + message)
        whole.append(envelope + end + message)
        expected.append(message + (end if i < count - 1 else b""))  # the empty line before the next envelope
    return end.join(written), expected, whole


def quiet(iterable):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(iterable)


def every_reader(tmp_path, data):
    """{way in: [(name, data)]} of every reader of documents, for the mbox `data`."""
    from nbtext.jobs.cluster import entry_documents
    from nbtext.reading.documents import each_loaded
    from nbtext.reading.sources import documents, listed_documents, listed_paths

    folder = tmp_path / "folder"
    folder.mkdir(exist_ok=True)
    path = folder / "box"
    path.write_bytes(data)
    listing = tmp_path / "list"
    listing.write_bytes(bytes(path) + b"\n")
    import fsspec

    with fsspec.open("memory://h33c/box", "wb") as f:
        f.write(data)

    def pairs(docs, name):
        return [(doc.name.replace(name, "NAME", 1), doc.data) for doc in quiet(docs)]

    return {
        "file": pairs(documents(str(path)), str(path)),
        "folder": pairs(each_loaded(documents(str(folder))), str(path)),
        "stdin": pairs(documents("-", stdin=io.BytesIO(data)), "-"),
        "files-from": pairs(listed_documents(listed_paths(str(listing))), str(path)),
        "cluster": pairs(entry_documents([("source", "memory://h33c/box", None)], 10**7), "memory://h33c/box"),
    }


def names(count):
    return ["NAME"] if count == 1 else [f"NAME:{n}" for n in range(1, count + 1)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mbox=mboxes())
def test_every_reader_gives_the_messages_written(tmp_path, mbox):
    """Envelope lines of every form start a message at the start and later alike (an RFC
    2822, numeric or lowercase date, or an empty sender, started the first message only:
    three read as one); a right Content-Length keeps a body's unquoted envelope lines in it
    (they split it: three read as four); a wrong or absurd one changes nothing."""
    data, expected, whole = mbox
    for way, found in every_reader(tmp_path, data).items():
        assert found == list(zip(names(len(expected)), expected)), way
    from nbtext.reading.mail import strip_envelope

    for message, raw in zip(expected, whole):  # a message read alone leaves out the envelope line a reader does
        assert message.startswith(strip_envelope(raw)) and strip_envelope(raw) == raw.split(b"\n", 1)[1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mbox=mboxes(unquoted=True), limit=st.sampled_from([10**7, 50]))
def test_every_reader_agrees_on_any_mbox(tmp_path, mbox, limit):
    """Unquoted envelope lines in bodies without a Content-Length: where the messages start
    is the rule's, and every reader finds the same ones (a file read two messages where
    stdin read one), whatever --max-bytes."""
    from nbtext.reading.documents import MBOX_SNIFF, mbox_messages

    data, _, _ = mbox
    ways = every_reader(tmp_path, data)
    first = ways.pop("file")
    for way, found in ways.items():
        assert found == first, way
    f = io.BytesIO(data)
    head = f.read(MBOX_SNIFF)
    cut = [(doc.name, doc.data) for doc in quiet(mbox_messages(f, "NAME", None, head, limit))]
    assert cut == [(name, text[:limit]) for name, text in first]  # the limit cuts messages, never moves them


@pytest.mark.parametrize("date", DATES)
@pytest.mark.parametrize("sender", SENDERS)
def test_each_envelope_form_starts_a_message_anywhere(date, sender):
    line = b"From " + sender + b" " + date + b"\n"
    assert is_separator(line) and starts_mbox(line + b"Subject: x\n")
    assert not is_separator(line, after_blank=False)
    assert [
        bytes(m)
        for m in messages(iter([(line, True), (b"a\n", True), (b"\n", True), (line, True), (b"b\n", True)]), 10**6)
    ] == [b"a\n\n", b"b\n"]


@pytest.mark.parametrize(
    "text",
    [
        b"From tomorrow onwards eve 6 to 3 work.",
        b"From 5 to 2 only my work timing.",
        b"From here on",
        b"From the desk of:",
        b"From someone  Mon Jun 24",
        b">From a@example.com Mon Jun 24 17:54:30 2002",
        b"From: a@example.com Mon Jun 24 17:54:30 2002",
        b"From a@b Mon Jun 24 7:543 2002",
        b"Fromage Mon Jun 24 17:54",
    ],
)
def test_lines_without_an_envelope_date_start_nothing(text):
    assert not is_separator(text) and not starts_mbox(text + b"\nSubject: x\n")


def test_the_three_defects_of_issue_33(tmp_path, demo_model):
    """RFC 2822 envelopes after the first: 3 messages, not 1 ('added 1'); mboxcl2 with an
    unquoted envelope line in a body: 3, not 4; an unquoted one without Content-Length: as
    many from stdin as from the file (2 and 1)."""
    rfc = b"".join(
        b"From a@example.com Mon, 24 Jun 2002 17:54:3%d +0000\nSubject: free %d\n\nprize money\n\n" % (n, n)
        for n in range(3)
    )
    body = b"Hi,\n\nFrom a@example.com Mon Jun 24 17:54:30 2002\nwrote this.\n"
    cl2 = b"".join(
        b"From a@example.com Mon Jun 24 17:54:30 2002\nSubject: %d\nContent-Length: %d\n\n%s\n" % (n, len(body), body)
        for n in range(3)
    )
    plain = b"From a@example.com Mon Jun 24 17:54:30 2002\nSubject: x\n\n" + body
    for data, count in ((rfc, 3), (cl2, 3), (plain, 2)):
        for way, found in every_reader(tmp_path, data).items():
            assert len(found) == count, (way, data)
        path = tmp_path / "box.mbox"
        path.write_bytes(data)
        from_file = run("predict", "-m", demo_model, path)
        from_stdin = run("predict", "-m", demo_model, input=data)
        assert from_file.exit_code == from_stdin.exit_code == 0
        assert from_stdin.stdout == from_file.stdout.replace(str(path), "-") and from_file.stdout.count("\n") == count
        model = tmp_path / "m.model"
        model.write_bytes(demo_model.read_bytes())
        learned = run("train", "--update", "-m", model, f"spam={path}")
        assert f"added {count}," in learned.stderr, learned.stderr
        forgotten = run("forget", "-m", model, "-", input=data)
        assert f"forgot {count}," in forgotten.stderr, forgotten.stderr


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mbox=mboxes(unquoted=True))
@example(
    mbox=(
        b"From a@b Mon Jun 24 17:54:30 2002\nSubject: x\n\nhi\n\nFrom  mon jun 24 17:54:30 2002\nSubject: y\n\nyo\n",
        None,
        None,
    )
)
def test_the_command_line_counts_the_same_messages_every_way_in(tmp_path_factory, demo_model, mbox):
    """predict of the file, of its folder, of stdin and of a --files-from list print the
    same messages with the same probabilities; train --update says 'added N' and forget
    'forgot N' for the N the readers find (or fewer, for copies of one message)."""
    from nbtext.reading.documents import document_key

    data = mbox[0]
    tmp_path = tmp_path_factory.mktemp("cli")
    found = every_reader(tmp_path, data)["file"]
    path = tmp_path / "folder" / "box"
    (tmp_path / "list").write_bytes(bytes(path) + b"\n")
    outputs = {
        "file": run("predict", "-m", demo_model, "--proba", path),
        "folder": run("predict", "-m", demo_model, "--proba", tmp_path / "folder"),
        "stdin": run("predict", "-m", demo_model, "--proba", "-", input=data),
        "files-from": run("predict", "-m", demo_model, "--proba", "--files-from", tmp_path / "list"),
    }
    lines = {way: [line.split("\t", 1)[1] for line in result.stdout.splitlines()] for way, result in outputs.items()}
    assert all(result.exit_code == 0 for result in outputs.values())
    assert len(lines["file"]) == len(found) and all(found_lines == lines["file"] for found_lines in lines.values())
    distinct = len({document_key(text) for _, text in found})
    model = tmp_path / "m.model"
    model.write_bytes(demo_model.read_bytes())
    learned = run("train", "--update", "-m", model, f"spam={path}")
    assert learned.exit_code == 0 and f"added {distinct}," in learned.stderr, learned.stderr
    forgotten = run("forget", "-m", model, "-", input=data)
    assert forgotten.exit_code == 0 and f"forgot {distinct}," in forgotten.stderr, forgotten.stderr


def test_predict_of_stdin_prints_a_lone_messages_label_alone_and_names_an_mboxs(demo_model):
    one = b"From a@b Mon Jun 24 17:54:30 2002\nSubject: free prize\n\nclaim your prize money now\n"
    assert run("predict", "-m", demo_model, input=one).stdout in ("spam\n", "ham\n")
    several = run("predict", "-m", demo_model, input=one + b"\n" + one).stdout.splitlines()
    assert [line.split("\t")[0] for line in several] == ["-:1", "-:2"] and several[0].split("\t")[1:] == several[
        1
    ].split("\t")[1:]
    refused = run("predict", "-m", demo_model, "--is", "spam", input=one + b"\n" + one)
    assert refused.exit_code == 3 and "stdin holds several" in refused.stderr


def test_a_content_length_is_honoured_only_where_the_next_message_starts():
    """Honoured: at the end, at an envelope line, at an empty line then an envelope line or
    the end. Not: inside a line, at text, past the end, above the limit."""
    envelope = b"From a@example.com Mon Jun 24 17:54:30 2002\n"
    body = b"a\n\n" + envelope + b"b\n"

    def read(length, after=b"\n" + envelope + b"Subject: next\n\nc\n"):
        data = envelope + b"Content-Length: %d\n\n" % length + body + after
        return [bytes(m) for m in messages(iter((line, True) for line in io.BytesIO(data)), 10**7)]

    whole = b"Content-Length: %d\n\n" % len(body) + body
    assert read(len(body)) == [whole + b"\n", b"Subject: next\n\nc\n"]  # at an empty line, then an envelope
    assert read(len(body) + 1)[1:] == [b"Subject: next\n\nc\n"] and len(read(len(body) + 1)) == 2  # at the envelope
    assert read(len(body), after=b"") == [whole]  # at the end
    assert read(len(body), after=b"\n") == [whole + b"\n"]  # at an empty last line
    for wrong in (len(body) - 1, len(body) + 2, len(body) - 2, 10**9, CONTENT_LENGTH_LIMIT + 1):
        assert len(read(wrong)) == 3, wrong  # ignored: the envelope in the body starts a message
    long_body = b"a\n\n" + envelope + b"b" * CONTENT_LENGTH_LIMIT + b"\n"
    data = envelope + b"Content-Length: %d\n\n" % len(long_body) + long_body
    assert len(list(messages(iter((line, True) for line in io.BytesIO(data)), 100))) == 2  # over the limit


def _cpu_seconds(data):
    import time

    started = time.process_time()  # this process' CPU time: other work on the machine does not count
    for _ in messages(iter((line, True) for line in io.BytesIO(data)), 10**7):
        pass
    return time.process_time() - started


@pytest.mark.parametrize("shape", ["lengths past a line's start", "lengths past the end", "envelopes in bodies"])
def test_reading_an_mbox_is_linear(shape):
    """Content-Lengths each reaching half the file's length ahead (every message's length
    undecided while the next ones are read, each decided in turn), or past its end, or
    bodies of envelope lines: 400 KB takes about 4 times as long as 100 KB, not 16 (the
    held lines were copied again at each decision)."""
    envelope = b"From a@example.com Mon Jun 24 17:54:30 2002\n"

    def mbox(size):
        length = {
            "lengths past a line's start": size // 2 + 7,
            "lengths past the end": 10 * size,
            "envelopes in bodies": 10**6,
        }[shape]
        one = (
            envelope + b"Content-Length: %d\n\nhi\n\n" % length + (envelope if shape == "envelopes in bodies" else b"")
        )
        return one * (size // len(one))

    small, large = mbox(100_000), mbox(400_000)
    _cpu_seconds(small)
    ratios = []
    while len(ratios) < 3 and (not ratios or ratios[-1] >= 8):  # (as tests/test_hostile.py: quadratic gives 16)
        ratios.append(
            min(_cpu_seconds(large) for _ in range(3)) / max(min(_cpu_seconds(small) for _ in range(3)), 1e-4)
        )
    assert min(ratios) < 8, f"{shape}: 400 KB takes {ratios} times as long as 100 KB"


def test_a_length_ending_exactly_at_a_later_envelope_is_taken_as_right():
    """The one case docs/mail.md owns up to: a Content-Length that ends exactly at the
    envelope line of the message after next reads the two as one, as mutt and Dovecot do."""
    envelope = b"From a@example.com Mon Jun 24 17:54:30 2002\n"
    spanned = b"a\n\n" + envelope + b"Subject: 2\n\nb\n"
    data = (
        envelope
        + b"Subject: 1\nContent-Length: %d\n\n" % len(spanned)
        + spanned
        + b"\n"
        + envelope
        + b"Subject: 3\n\nc\n"
    )
    assert [bytes(m) for m in messages(iter((line, True) for line in io.BytesIO(data)), 10**7)] == [
        b"Subject: 1\nContent-Length: %d\n\n" % len(spanned) + spanned + b"\n",
        b"Subject: 3\n\nc\n",
    ]
