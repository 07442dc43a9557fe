"""A message stored by a local delivery is the message the filter judged (docs/mail.md, "What
nbtext reads of a stored message"): the trace fields a delivery puts on top (Return-Path,
Delivered-To, ... down to a Received of a local-delivery hop: nbtext.reading.mail's
local_delivery_end; or the envelope a content scanner writes on top, as
Exim's spam condition does) and filter's own X-Nbtext-* verdict give no token and no part of the
journal's key. Generated messages, with generated traces on top, read through the command line:
predict's probabilities, train's model file, and learning one copy then forgetting the other."""

import json
import re

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.delivery.headers import verdict_fields, with_headers
from nbtext.reading.mail import message_as_sent

from conftest import GENERAL, ROOT, run
from test_hostile import MAIL_LEXER, SHAPES, assert_linear, repeat

WORDS = st.sampled_from("free prize money meeting lunch report alice vm example Nov 2026 offer".split())
PHRASES = st.lists(WORDS, min_size=1, max_size=5).map(" ".join)
ADDRESSES = st.sampled_from(["alice", "alice@vm.example", "<bob@example.org>", "<>", "carol+tag@mail.example"])
DATE = "Sun, 29 Nov 2026 04:47:26 +0000"


@st.composite
def sent_messages(draw):
    """A message as its sender's side hands it to the delivery: header fields (some of them of
    the kinds a delivery adds, as an earlier hop left them, below the sender's first field),
    a blank line or not, a body."""
    own = [
        f"{name}: {draw(PHRASES)}"
        for name in draw(st.lists(st.sampled_from(["Subject", "From", "To", "X-Mailer", "Content-Type"]), min_size=1))
    ]
    earlier = draw(
        st.lists(
            st.sampled_from(
                [
                    f"Received: from relay.example by mx.example with ESMTP id 1; {DATE}",
                    "Return-Path: <list-bounces@example.org>",
                    "Delivered-To: list@example.org",
                ]
            ),
            max_size=3,
        )
    )
    fields = own[:1] + earlier + own[1:]  # a sender's field first: the trace ends above it
    body = draw(PHRASES)
    return ("\n".join(fields) + draw(st.sampled_from(["\n\n", "\n"])) + body + "\n").encode()


@st.composite
def delivery_traces(draw):
    """The fields a local delivery puts on top, in any mix, ending with the Received of its
    hop (Dovecot's LMTP: Return-Path, Delivered-To, `Received: ... with LMTP`)."""
    hop = draw(st.sampled_from(["LMTP", "LMTPS", "LMTPA", "LMTPSA", "lmtp", "local"]))
    received = draw(
        st.sampled_from(
            [
                f"Received: from [127.0.0.1] ([127.0.0.1])\n\tby vm with {hop}\n\tid 2N87Kl6u\n\t"
                f"(envelope-from <sender@example.org>)\n\tfor <alice>; {DATE}",
                f"Received: from alice by vm.example with {hop} (Exim 4.96)\n\tid 1; {DATE}",
                f"Received: by vm with\n {hop} for <alice>; {DATE}",
            ]
        )
    )
    others = draw(
        st.lists(
            st.sampled_from(
                [
                    f"Return-Path: {draw(ADDRESSES)}",
                    f"Delivered-To: {draw(ADDRESSES)}",
                    f"X-Original-To: {draw(ADDRESSES)}",
                    f"Envelope-to: {draw(ADDRESSES)}",
                    f"Delivery-date: {DATE}",
                    f"received: by vm with {hop}; {DATE}",
                ]
            ),
            max_size=4,
        )
    )
    return "".join(f"{field}\n" for field in [*others, received]).encode()


@st.composite
def scanned_envelopes(draw):
    """The envelope an MTA's content scanning writes on top of the copy it scans (Exim's spam
    condition: X-Envelope-From and X-Envelope-To, which its delivered copy does not hold)."""
    fields = draw(st.lists(st.sampled_from(["X-Envelope-From", "X-Envelope-To", "x-envelope-to"]), min_size=1))
    return "".join(f"{name}: {draw(ADDRESSES)}\n" for name in fields).encode()


@st.composite
def stored_copies(draw):
    """(the message sent, its stored copy): the trace on top, filter's verdict where filter puts
    it (seen with the trace, as Dovecot's Sieve filter sees it), maybe CR LF line ends (over
    IMAP), maybe filtered twice."""
    sent = draw(sent_messages())
    stored = draw(st.one_of(delivery_traces(), scanned_envelopes(), st.tuples(scanned_envelopes(), delivery_traces())))
    stored = (b"".join(stored) if isinstance(stored, tuple) else stored) + sent
    for _ in range(draw(st.integers(1, 2))):
        stored = with_headers(stored, verdict_fields("spam", draw(st.floats(0, 1))))
    if draw(st.booleans()):
        stored = stored.replace(b"\n", b"\r\n")
    return sent, stored


# Every header line read (`*`: delivered-to, x-original-to, x-nbtext-class, ... each a tag), every
# token kept, so that any token a trace or a verdict gave would show.
SETTINGS = [*GENERAL, "--headers", "subject,from,to,received,return-path,*", "--min-count", "1", "--ngrams", "2"]


@pytest.fixture(scope="module")
def base_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "base.model"
    train = ROOT / "corpora" / "mail" / "train"
    result = run("train", "-q", *SETTINGS, "-o", path, train / "spam", train / "ham")
    assert result.exit_code == 0, result.stderr
    return path


def folded(path, into):
    """The model file `path` with its pending records folded in, as a fresh training writes it."""
    nbtext.load(str(path), fold=True).save(str(into))
    return into.read_bytes()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(copies=stored_copies())
@example(
    copies=(
        b"Subject: free prize\n\nclaim it\n",
        b"Return-Path: <sender@example.org>\nDelivered-To: alice\nReceived: from [127.0.0.1] ([127.0.0.1])\n"
        b"\tby vm with LMTP\n\tid 2N87Kl6uC2srIQAAg+zDdQ\n\t(envelope-from <sender@example.org>)\n"
        b"\tfor <alice>; Sun, 29 Nov 2026 04:47:26 +0000\nSubject: free prize\nX-Nbtext-Class: spam\n"
        b"X-Nbtext-Probability: 0.9100\n\nclaim it\n",
    )
)
def test_a_stored_copy_is_the_message_sent(tmp_path_factory, base_model, copies):
    """The stored copy and the message sent: the same bytes read (message_as_sent), the same
    probabilities from predict, the same model file from train, and learning either copy then
    forgetting the other gives back the model it started from."""
    sent, stored = copies
    assert message_as_sent(stored) == message_as_sent(sent)
    tmp = tmp_path_factory.mktemp("copies")
    for name, data in (("sent", sent), ("stored", stored)):
        (tmp / name / "spam").mkdir(parents=True)
        (tmp / name / "spam" / "m").write_bytes(data)
    probabilities = {
        name: run("predict", "--proba", "-m", base_model, tmp / name / "spam" / "m").stdout.split("\t")[1:]
        for name in ("sent", "stored")
    }
    assert probabilities["sent"] == probabilities["stored"] and probabilities["sent"]
    train = ROOT / "corpora" / "mail" / "train"
    for name in ("sent", "stored"):
        result = run("train", "-q", *SETTINGS, "-o", tmp / f"{name}.model", tmp / name / "spam", train / "ham")
        assert result.exit_code == 0, result.stderr
    assert (tmp / "sent.model").read_bytes() == (tmp / "stored.model").read_bytes()
    before = folded(base_model, tmp / "before.model")
    for learned, forgotten in (("sent", "stored"), ("stored", "sent")):
        model = tmp / f"learned-{learned}.model"
        model.write_bytes(base_model.read_bytes())
        result = run("train", "--update", "-q", "-m", model, f"spam={tmp / learned / 'spam' / 'm'}")
        assert result.exit_code == 0, result.stderr
        result = run("forget", "-m", model, "-", input={"sent": sent, "stored": stored}[forgotten])
        assert result.exit_code == 0 and "forgot 1," in result.stderr, result.stderr
        assert folded(model, tmp / "folded.model") == before


@pytest.mark.parametrize(
    "message",
    [
        # a Return-Path or Delivered-To on top with no local hop below it: the sender's evidence,
        # as the SpamAssassin corpus's messages have it
        b"Return-Path: <a@example.org>\nDelivered-To: zz@example.org\nReceived: from x by y with ESMTP; d\n"
        b"Subject: hi\n\nbody\n",
        # a local hop below the sender's first field: an earlier hop, not this delivery's
        b"Subject: hi\nReceived: by vm with LMTP; d\n\nbody\n",
        b"Received: from x by y with ESMTP; d\nReceived: by vm with LMTP; d\n\nbody\n",
        # `with local-esmtp`, `with LMTPX`, `without lmtp`: no local-delivery hop
        b"Received: by vm with local-esmtp; d\nSubject: hi\n\nbody\n",
        b"Received: by vm with LMTPX; d\nSubject: hi\n\nbody\n",
        b"Received: by vm without lmtp; d\nSubject: hi\n\nbody\n",
        # an X-Envelope-To below the sender's first field: not the scanned copy's envelope
        b"Subject: hi\nX-Envelope-To: alice\n\nbody\n",
        # text with no header block
        b"Return-Path is a header\nwith LMTP\n",
    ],
)
def test_what_is_no_local_delivery_trace_is_read_as_it_is(message):
    assert message_as_sent(message) == message


@pytest.mark.parametrize(
    "trace",
    [
        b"X-Envelope-From: alice\n",
        b"Return-Path: <s@example.org>\nDelivered-To: alice\nReceived: from h by vm with LMTP; d\n",
    ],
)
@pytest.mark.parametrize("sent", [b"\nFrom me", b"\nbody\n", b"\n\nbody\n"])
def test_a_trace_on_a_message_of_an_empty_header_block_keeps_its_blank_line(trace, sent):
    """A message sent with an empty header block (a blank line first) under a delivery's
    trace or a scanner's envelope: the trace goes, the blank line stays. It went with the
    emptied block, as a verdict's does (filter's block in front of text): the stored copy was
    another message (another key, other character n-grams)."""
    assert message_as_sent(trace + sent) == sent
    assert message_as_sent(trace + b"X-Nbtext-Class: spam\n\nplain text\n") == b"plain text\n"


def test_a_trace_goes_through_its_last_local_hop_and_no_further():
    """Dovecot's LMTP trace on top of a message a Postfix delivery stored first (the
    SpamAssassin corpus's kind): the first goes, the second stays, as the corpus file has it."""
    corpus_file = b"Return-Path: <a@example.org>\nDelivered-To: zz@example.org\nSubject: hi\n\nbody\n"
    trace = b"Return-Path: <s@example.org>\nDelivered-To: alice\nReceived: from h by vm with LMTP; d\n"
    assert message_as_sent(trace + corpus_file) == corpus_file
    assert message_as_sent(trace + b"X-Nbtext-Class: error\n\nplain text\n") == b"plain text\n"


# Hostile shapes of the trace and the verdict (docs/hostile-input.md): each read in time linear in its size.
TRACE_SHAPES = {
    "delivery fields": lambda n: repeat(b"Delivered-To: a\n", n) + b"Received: by x with LMTP\nSubject: s\n\nb",
    "verdict fields": lambda n: b"Subject: s\n" + repeat(b"X-Nbtext-A: b\n", n) + b"\nb",
    "verdict fields with bare CRs": lambda n: b"Subject: s\n" + repeat(b"X-Nbtext-A: b\r", n) + b"\n\nb",
    "a folded verdict": lambda n: b"X-Nbtext-A: b\n" + repeat(b" \r\n", n) + b"Subject: s\n\nb",
    "a folded local hop": lambda n: b"Received: by x\n" + repeat(b" with\n", n) + b" LMTP\nSubject: s\n\nb",
    "withs": lambda n: b"Received: " + repeat(b"with ", n) + b"\nSubject: s\n\nb",
}


@pytest.mark.parametrize("shape", [*TRACE_SHAPES, *SHAPES])
def test_the_message_as_sent_and_its_key_take_time_linear_in_its_size(shape):
    from nbtext.reading.documents import document_key

    make = {**SHAPES, **TRACE_SHAPES}[shape]
    assert_linear(shape, make(100_000), make(400_000), document_key)
    if shape in TRACE_SHAPES:
        assert_linear(shape, make(100_000), make(400_000), MAIL_LEXER)


# The filter's patterns before they were read line by line (each repeated a group, which held
# memory for each of its matches): what header_block and without_verdicts must still give.
_LINE = rb"[^\n]*\n"
_WHOLE_FIELDS = re.compile(rb"(?:[!-9;-~]+:" + _LINE + rb"(?:[ \t]" + _LINE + rb")*(?![ \t]))*")
_CLEAN_LINE = rb"[^\r\n]*\r*\n"
_OLD_VERDICT = re.compile(
    rb"^(?i:x-nbtext-)[!-9;-~]*:" + _CLEAN_LINE + rb"(?:[ \t]" + _CLEAN_LINE + rb")*(?![ \t])", re.MULTILINE
)
PIECES = st.sampled_from(
    [b"Subject: a", b"X-Nbtext-Class: spam", b"x-NBTEXT-probability: 1", b"X-Nbtext-:", b" folded", b"\tb", b"\r",
     b"\n", b"\r\n", b"", b"body line", b"From a@b Mon Jun 24 17:54:30 2002", b"Received: by x with LMTP", b": x"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=12).map(b"\n".join), st.booleans())
def test_the_header_block_and_the_verdict_are_found_as_the_filter_found_them(message, line_end):
    from nbtext.reading.mail import _HEADER_LINE, header_block, strip_envelope, without_verdicts

    message += b"\n" if line_end else b""
    start = len(message) - len(strip_envelope(message))
    before = (start, _WHOLE_FIELDS.match(message, start).end()) if _HEADER_LINE.match(message, start) else None
    assert header_block(message) == before
    if before is not None:
        assert without_verdicts(message, *before) == _OLD_VERDICT.sub(b"", message[before[0] : before[1]])


@pytest.mark.parametrize("shape", TRACE_SHAPES)
def test_the_message_as_sent_takes_memory_linear_in_its_size(shape):
    """The header block, the trace and the verdict are read line by line: a hostile header block
    of 1 MB takes a few MB to read into its key (the patterns of a field and its continuation
    lines, repeated, took 22 to 64 MB; memory traced while it is read)."""
    import tracemalloc

    from nbtext.reading.documents import document_key

    size = 1_000_000
    data = TRACE_SHAPES[shape](size)
    tracemalloc.start()
    try:
        document_key(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * size


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=12).map(b"\n".join))
# a verdict alone on top, then a trace: the message as sent of the message as sent would take that out too
@example(b"X-Nbtext-Class: spam\n\nReceived: by x with LMTP\n\nbody line\n")
def test_a_document_read_once_has_the_tokens_key_and_kind_of_its_own_bytes(message):
    """A batch's documents are made into their message as sent once (documents.read_once), for
    their tokens, their key and whether each reads as mail: each the same as made of the
    document's own bytes, so no path's key and tokens can disagree."""
    from nbtext.reading.documents import Document, document_key, tokenized_with
    from nbtext.reading.tokenize import Tokenizer

    for tokenize in (Tokenizer(headers=["*"]), Tokenizer(input="mail"), Tokenizer(input="text")):
        key_and_kind = lambda doc, data, tokenize=tokenize: (document_key(data), tokenize.reads_as_mail(data))  # noqa: E731
        _, token_lists, read = tokenized_with(tokenize, [Document("m", message)], key_and_kind)
        assert token_lists == [tokenize(message)]
        assert read == [(document_key(message), tokenize.reads_as_mail(message))]


# --- the spam preset's character n-grams: of the message as sent, its first 3,000 bytes ------
HOSTILE_PIECES = st.sampled_from(
    [b"\x00", b"\xff", b"\xc3", b"\xe2\x82", b"\x1b", b"\x85", b"\r ", "é€𝄞".encode(), b"\nFrom me", b"\n>From x"]
    + [b"\n", b" ", b"claim your free prize ", b"meeting at noon "]
)


@st.composite
def hostile_copies(draw):
    """(the message sent, a copy of it as stored, an mbox holding that copy): a body of hostile
    bytes (NULs, invalid UTF-8, control characters, `From ` lines) whose 3,000th byte may fall
    inside a character, trailing line ends, and the copy with a delivery's trace or a scanner's
    envelope on top, filter's verdict, maybe CR LF line ends and more trailing line ends."""
    head = draw(st.sampled_from([b"Subject: free prize\nFrom: a@example.org\n\n", b"hello\n\n", b""]))
    body = b"".join(draw(st.lists(HOSTILE_PIECES, min_size=1, max_size=300)))
    size = draw(st.sampled_from([None, 2990, 2999, 3000, 3001, 3003]))  # (None: as drawn)
    if size is not None:
        body = (head + body * (3100 // len(head + body) + 1))[:size][len(head) :]
    sent = head + body + b"\n" * draw(st.integers(0, 2))
    top = draw(st.one_of(st.just(b""), delivery_traces(), scanned_envelopes()))
    # a field put on top of a message whose first line starts with a space or a tab takes that
    # line for its own continuation (RFC 5322 folding): the copy is then another message
    assume(not (top and sent[:1] in (b" ", b"\t")))
    filtered = draw(st.booleans())
    # filter's verdict on a trace above an empty header block reads as its block in front of text
    # under a trace (the blank line goes with it): the two are the same bytes, one message
    assume(not (filtered and top and sent[:1] == b"\n"))
    stored = with_headers(top + sent, verdict_fields("spam", draw(st.floats(0, 1)))) if filtered else top + sent
    if draw(st.booleans()):
        stored = stored.replace(b"\n", b"\r\n")
    stored += draw(st.sampled_from([b"", b"\n", b"\r\n\r\n"]))
    quoted = re.sub(rb"^(>*From )", rb">\1", stored.replace(b"\r\n", b"\n"), flags=re.MULTILINE)
    mbox = (
        b"From a@example.org Sun Nov 29 04:47:26 2026\n" + quoted + (b"" if quoted.endswith(b"\n") else b"\n") + b"\n"
    )
    return sent, stored, mbox


@pytest.fixture(scope="module")
def preset_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("preset") / "preset.model"
    train = ROOT / "corpora" / "mail" / "train"
    result = run("train", "-q", "-o", path, train / "spam", train / "ham")  # (spam and ham: the spam preset)
    assert result.exit_code == 0, result.stderr
    assert nbtext.load(str(path)).tokenize.char_ngrams == 3
    return path


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(copies=hostile_copies(), ways=st.tuples(*[st.sampled_from(["file", "stdin", "mbox"])] * 2))
@example(  # an empty header block under a scanner's envelope: its blank line went with the envelope
    copies=(
        b"\nFrom me",
        b"X-Envelope-From: alice\n\nFrom me",
        b"From a@example.org Sun Nov 29 04:47:26 2026\nX-Envelope-From: alice\n\n>From me\n\n",
    ),
    ways=("file", "file"),
)
def test_a_copy_has_the_grams_of_the_message_sent_on_every_path(tmp_path_factory, preset_model, copies, ways):
    """With the spam preset's character n-grams: the message sent (a file, the one-message
    path), its stored copy (stdin) and the copy in an mbox (among other messages: the numpy
    loader) have the same probabilities and evidence; learned over one way and forgotten over
    another, the model comes back."""
    sent, stored, mbox = copies
    tmp = tmp_path_factory.mktemp("grams")
    (tmp / "sent").write_bytes(sent)
    (tmp / "stored").write_bytes(stored)
    (tmp / "copy.mbox").write_bytes(mbox + b"From x Sun Nov 29 04:47:26 2026\nSubject: lunch\n\nmeeting at noon\n")
    predict = ["predict", "-m", preset_model, "--format", "json", "--explain", "40"]
    seen = [
        run(*predict, tmp / "sent").stdout.splitlines()[0],
        run(*predict, "-", input=stored).stdout.splitlines()[0],
        run(*predict, tmp / "copy.mbox").stdout.splitlines()[0],
    ]
    answers = [{key: value for key, value in json.loads(line).items() if key != "path"} for line in seen]
    assert answers[0] == answers[1] == answers[2], seen
    handed = {"file": (tmp / "stored", None), "stdin": ("-", sent), "mbox": (tmp / "one.mbox", None)}
    (tmp / "one.mbox").write_bytes(mbox)
    model = tmp / "m.model"
    model.write_bytes(preset_model.read_bytes())
    (path, data), (forget_path, forget_data) = handed[ways[0]], handed[ways[1]]
    result = run("train", "--update", "-m", model, f"spam={path}", input=data)
    assert result.exit_code == 0 and "added 1," in result.stderr, result.stderr
    result = run("forget", "-m", model, forget_path, input=forget_data)
    assert result.exit_code == 0 and "forgot 1," in result.stderr, result.stderr
    assert folded(model, tmp / "folded.model") == folded(preset_model, tmp / "before.model")
