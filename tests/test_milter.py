"""The milter (nbtext.delivery.milter): its codec against hand-built packets as Postfix's milter8
sends them, with a service of the test's own; its answer applied as an MTA applies it is
`nbtext filter`'s output (headers.with_headers) for generated header blocks; generated packet
streams (garbage, truncations, oversized packets) end the connection without a traceback and
within bounded memory; and end to end, a real Postfix (tests/postfix_server.py) receiving
SpamAssassin messages over SMTP and delivering them to a Maildir, with the milter of a real model
in a thread of the test's own: what it delivers is what `nbtext filter` writes of the message."""

import re
import socket
import struct
import threading
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbtext.delivery import milter
from nbtext.delivery.headers import verdict_fields
from nbtext.delivery.judging import UNJUDGED, Verdict, tagged

ALL_ACTIONS = 0x1FF
ALL_STEPS = 0x1FFFFF  # every SMFIP_ flag Postfix 3.7 offers
SPAM = Verdict("spam", 0.9912, (4.71, 0.0), verdict_fields("spam", 0.9912, (), (4.71, 0.0)))
HAM = Verdict("ham", 0.0012, (-6.72, 0.0), verdict_fields("ham", 0.0012, (), (-6.72, 0.0)))


class FakeService:
    """What a protocol asks of the server (docs: serve's contract), with a verdict of the test's."""

    classes = ["ham", "spam"]

    def __init__(self, verdict=SPAM, max_bytes=500_000):
        self.verdict, self.max_bytes = verdict, max_bytes
        self.judged, self.lines = [], []

    def judge(self, message):
        self.judged.append(message)
        return self.verdict

    def log(self, client, what, verdict=None):
        self.lines.append((client, what, None if verdict is None else verdict.label))


def packet(command, data=b""):
    return struct.pack("!I", len(data) + 1) + command + data


def optneg(version=6, actions=ALL_ACTIONS, protocol=ALL_STEPS):
    return packet(b"O", struct.pack("!III", version, actions, protocol))


def header(name, value):
    return packet(b"L", name + b"\0" + value + b"\0")


def message_packets(fields, body, chunk=65535, eoh=False):
    """A message as Postfix sends it: the queue ID macro, its header fields, the end of the
    headers (`eoh`: to a milter that did not ask to go without), the body in chunks, the end of
    the body."""
    out = [packet(b"D", b"L" + b"i\0" + b"4ABC123\0")]
    out += [header(name, value) for name, value in fields]
    out += [packet(b"N")] if eoh else []
    out += [packet(b"B", body[i : i + chunk]) for i in range(0, len(body), chunk)]
    out.append(packet(b"D", b"E" + b"i\0" + b"4ABC123\0"))
    out.append(packet(b"E"))
    return out


def converse(stream, service, action="tag", timeout=5):
    """What milter.answer writes back to `stream` (bytes), read whole, and the packets it
    makes of them; answer must return, never raise."""
    ours, theirs = socket.socketpair()
    ours.settimeout(timeout)
    failed = []

    def serve():
        try:
            milter.answer(ours, service, "test", action)
        except BaseException as e:  # (seen by the assertion below)
            failed.append(e)
        finally:
            ours.close()

    def send():
        try:
            theirs.sendall(stream)
            theirs.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # (the milter closed first)

    server, sender = threading.Thread(target=serve), threading.Thread(target=send)
    server.start(), sender.start()
    answer = b""
    try:
        while chunk := theirs.recv(65536):
            answer += chunk
    except ConnectionResetError:  # (the milter closed with bytes of ours unread)
        pass
    server.join(), sender.join()
    theirs.close()
    assert not failed, failed
    return parsed(answer)


def parsed(answer):
    replies = []
    while answer:
        (length,) = struct.unpack("!I", answer[:4])
        replies.append((answer[4:5], answer[5 : 4 + length]))
        answer = answer[4 + length :]
    return replies


def applied(fields, replies):
    """The header fields after the end-of-body replies, as Postfix applies them (cleanup_milter:
    SMFIR_CHGHEADER with an empty value deletes the index-th field of that name in any case,
    fields deleted no longer counting; SMFIR_ADDHEADER appends; with SMFIP_HDR_LEADSPC the value
    is taken as it is)."""
    fields = list(fields)
    for command, data in replies:
        if command == b"m":
            (index,) = struct.unpack("!I", data[:4])
            name, value, _ = data[4:].split(b"\0")
            assert value == b""
            matching = [i for i, (n, _) in enumerate(fields) if n.lower() == name.lower()]
            del fields[matching[index - 1]]
        elif command == b"h":
            name, value, _ = data.split(b"\0")
            fields.append((name, value))
    return fields


def rebuilt(fields, body):
    """A message of these fields as Postfix hands them (a folded value's lines parted by LF) and body."""
    return b"".join(name + b":" + value.replace(b"\n", b"\r\n") + b"\r\n" for name, value in fields) + b"\r\n" + body


FIELDS = [
    (b"From", b" sender@example.org"),
    (b"X-Nbtext-Class", b" ham"),
    (b"Subject", b" free\n\tmoney"),
    (b"x-nbtext-class", b" spam"),
    (b"X-Nbtext-Score", b" 1.00 / 0.00"),
    (b"X-Nbtext-Class", b" left\rwhole"),  # (a bare CR: with_headers keeps the field)
    (b"To", b" alice@nbtext.test"),
]
BODY = b"Hello,\r\n.\r\nfree money\r\n"


def test_option_negotiation_asks_for_what_the_milter_needs_of_what_is_offered():
    replies = converse(optneg(), FakeService())
    assert replies == [(b"O", struct.pack("!III", 6, milter.ADDHDRS | milter.CHGHDRS, milter.WANTED))]
    replies = converse(optneg(), FakeService(), "quarantine")
    assert replies[0][1][4:8] == struct.pack("!I", milter.ADDHDRS | milter.CHGHDRS | milter.QUARANTINE_MESSAGE)
    # an MTA of protocol version 2 offering no steps to leave out: the version and flags it has
    assert converse(optneg(2, 0x13, 0), FakeService()) == [(b"O", struct.pack("!III", 2, 0x11, 0))]


def test_a_message_is_judged_as_sent_and_tagged_as_filter_tags_it():
    """The message judged is the one sent (header lines, blank line, body); the replies delete
    the earlier verdict fields filter leaves out and add the verdict's: applied, the message is
    filter's output, byte for byte."""
    service = FakeService()
    replies = converse(optneg() + b"".join(message_packets(FIELDS, BODY, chunk=7)) + packet(b"Q"), service)
    message = rebuilt(FIELDS, BODY)
    assert service.judged == [message]
    assert replies[0][0] == b"O" and replies[-1] == (b"c", b"")
    deletions = [r for r in replies if r[0] == b"m"]
    assert [struct.unpack("!I", d[:4])[0] for _, d in deletions] == [1, 2, 1]  # the last first
    assert rebuilt(applied(FIELDS, replies[1:]), BODY) == tagged(message, SPAM.fields)
    assert service.lines == [("test", "milter tag 4ABC123", "spam")]


NAMES = st.sampled_from([b"Subject", b"X-Nbtext-Class", b"x-nbtext-evidence", b"X-NBTEXT-Score", b"X-Nbtext", b"To"])
TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12).map(str.encode)
VALUES = st.lists(TEXT, min_size=1, max_size=3).map(lambda lines: b"\n\t".join(lines))
VALUES = st.one_of(VALUES.map(lambda v: b" " + v), VALUES, st.just(b" a\rb"))
EVIDENCE = st.lists(st.tuples(st.sampled_from(["free", "größe", "x" * 90, "money"]), st.floats(-9, 9)), max_size=30)


@given(
    fields=st.lists(st.tuples(NAMES, VALUES), min_size=1, max_size=8),  # (Postfix's Received: at least)
    body=st.sampled_from([b"", b"text\r\n", b"a\r\nb"]),
    evidence=EVIDENCE,
    label=st.sampled_from(["spam", "ham", "unsure"]),
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_answer_applied_is_filters_output(fields, body, evidence, label):
    """For generated header blocks (earlier verdicts in any case, folded, with a bare CR) and
    verdicts (folded, encoded evidence), the milter's changes applied as Postfix applies them
    give headers.with_headers' bytes: the fields filter leaves out are the ones deleted."""
    verdict = Verdict(label, 0.5, (0.0, 0.0), verdict_fields(label, 0.5, evidence, (0.0, 0.0)))
    service = FakeService(verdict)
    replies = converse(optneg() + b"".join(message_packets(fields, body)), service)
    message = rebuilt(fields, body)
    assert service.judged == [message]
    assert rebuilt(applied(fields, replies[1:]), body) == tagged(message, verdict.fields)


def test_quarantine_holds_spam_and_reject_refuses_it():
    stream = optneg() + b"".join(message_packets(FIELDS, BODY))
    replies = converse(stream, FakeService(SPAM), "quarantine")
    assert (b"q", b"nbtext: class spam; probability 0.9912; score 4.71 / 0.00\0") in replies
    assert replies[-1] == (b"c", b"") and any(r[0] == b"h" for r in replies)
    replies = converse(stream, FakeService(SPAM), "reject")
    assert replies[1:] == [
        (b"c", b""),
        (b"y", b"550 5.7.1 nbtext: class spam; probability 0.9912; score 4.71 / 0.00\0"),
    ]
    for action in ("quarantine", "reject"):  # ham is tagged only
        replies = converse(stream, FakeService(HAM), action)
        assert {r[0] for r in replies[1:]} == {b"m", b"h", b"c"}, action


def test_what_cannot_be_judged_is_accepted_untouched_and_logged():
    stream = optneg() + b"".join(message_packets(FIELDS, BODY))
    service = FakeService(UNJUDGED)
    assert converse(stream, service)[1:] == [(b"c", b""), (b"a", b"")]  # (the body chunk's, the end's)
    assert service.lines == [("test", "milter tag 4ABC123: not judged, accepted untouched", "error")]
    # over max_bytes: the body's rest is skipped (SMFIR_SKIP) and never held, and nothing judged
    service = FakeService(SPAM, max_bytes=1000)
    replies = converse(optneg() + b"".join(message_packets(FIELDS, b"x" * 3000, chunk=500)), service)
    assert [r[0] for r in replies[1:]] == [b"c"] + [b"s"] * 5 + [b"a"]
    assert service.judged == [] and service.lines == [
        ("test", "milter tag 4ABC123: over 1000 bytes, accepted untouched", None)
    ]
    # an MTA without SMFIR_SKIP gets CONTINUE
    service = FakeService(SPAM, max_bytes=1000)
    stream = optneg(protocol=0) + b"".join(message_packets(FIELDS, b"x" * 3000, chunk=500, eoh=True))
    replies = converse(stream, service)
    assert [r[0] for r in replies[1:]] == [b"c"] * (len(FIELDS) + 1 + 6) + [b"a"]


def test_many_messages_on_one_connection_each_judged_alone():
    """Postfix reuses a connection: after the end of a body, an ABORT (RSET) or QUIT_NC, the
    next message starts afresh."""
    first, second = FIELDS[:1], [(b"Subject", b" two")]
    stream = optneg() + b"".join(message_packets(first, b"one\r\n"))
    stream += b"".join(message_packets(FIELDS, BODY)[:3]) + packet(b"A")  # aborted in its headers
    stream += packet(b"K") + packet(b"C", b"host\0" + b"4" + struct.pack("!H", 25) + b"127.0.0.1\0")
    stream += b"".join(message_packets(second, b"two\r\n")) + packet(b"Q")
    service = FakeService(HAM)
    replies = converse(stream, service)
    assert service.judged == [rebuilt(first, b"one\r\n"), rebuilt(second, b"two\r\n")]
    # (each body chunk and end, and the CONNECT left out by agreement but sent, answered too)
    assert [r[0] for r in replies].count(b"c") == 5


def test_a_v2_mta_gets_a_reply_to_every_step():
    stream = optneg(2, 0x13, 0) + packet(b"C", b"h\0U") + packet(b"H", b"helo\0") + packet(b"M", b"<a>\0")
    stream += packet(b"R", b"<b>\0") + b"".join(message_packets(FIELDS[:1], b"x\r\n", eoh=True))
    replies = converse(stream, FakeService(HAM))
    assert [r[0] for r in replies] == [b"O"] + [b"c"] * 7 + [b"h"] * 3 + [b"c"]
    # (no HDR_LEADSPC: the MTA took the value's first space off, and puts one in front of what is added)
    assert replies[-4] == (b"h", b"X-Nbtext-Class\0ham\0")


@pytest.mark.parametrize(
    "stream, said",
    [
        (b"\0\0\0\0", "a packet of length 0"),
        (packet(b"O", b"short"), "option negotiation shorter than 12 bytes"),
        (optneg(1), "milter protocol version 1"),
        (optneg() + packet(b"Z"), "unknown command b'Z'"),
        (optneg() + packet(b"D", b"x" * 70_000), "a packet of 70000 bytes (command b'D')"),
        (optneg() + struct.pack("!I", 100) + b"Lname", "the connection ended inside a packet"),
        (optneg() + packet(b"L", b"no value"), "a header without its name and value"),
    ],
)
def test_a_protocol_error_closes_the_connection_with_one_log_line(stream, said):
    service = FakeService()
    converse(stream, service)
    assert service.lines == [("test", f"milter protocol error, connection closed: {said}", None)]


def test_a_silent_mta_is_dropped_at_the_timeout():
    ours, theirs = socket.socketpair()
    ours.settimeout(0.2)
    theirs.sendall(optneg())
    service = FakeService()
    milter.answer(ours, service, "test")  # (returns: the read timed out)
    assert service.lines == []
    ours.close(), theirs.close()


def test_a_message_trickled_in_is_cut_at_the_timeout_of_its_first_byte():
    """An MTA (or anyone let in) that sends a message a few bytes at a time, each within the
    read timeout, holds its connection no longer than the timeout from the message's first
    byte: then one log line and the connection closed, nothing judged. Between messages the
    MTA may idle up to the timeout each time, as before."""
    fields = [(b"Subject", b" slow")]
    stream = b"".join(message_packets(fields, b"body\r\n" * 40))
    ours, theirs = socket.socketpair()
    ours.settimeout(1.0)
    theirs.sendall(optneg())
    service = FakeService()
    done = threading.Event()

    def trickle():  # a byte every 0.2 s, for up to 6 s
        for i in range(min(30, len(stream))):
            if done.is_set():
                return
            try:
                theirs.sendall(stream[i : i + 1])
            except OSError:
                return
            time.sleep(0.2)

    threading.Thread(target=trickle, daemon=True).start()
    started = time.monotonic()
    milter.answer(ours, service, "test")
    took = time.monotonic() - started
    done.set()
    ours.close(), theirs.close()
    assert took < 3, f"a trickled message held its connection {took:.1f} s"
    assert service.judged == []
    assert service.lines == [("test", "milter: the message was not sent whole within 1 s, connection closed", None)]


def test_a_stop_ends_a_session_idle_between_messages_and_no_message_begun(monkeypatch):
    """At every packet boundary of a session: a worker told to stop (service.stopping) ends it
    at once where no message has begun since the last answered (Postfix waits up to 360 s
    between messages: a stop waited as long), and waits for the MTA where one has begun. (Its
    times a tenth of the server's: the stop at 0.02 s, looked for every 0.05 s, the MTA's
    timeout 0.5 s where a message has begun; a session cut by the stop ends by 0.07 s.)"""
    monkeypatch.setattr(milter, "STOP_LOOK", 0.05)
    fields = [(b"Subject", b" s")]
    packets = [optneg(), *message_packets(fields, b"body\r\n", chunk=4), *message_packets(fields, b"more\r\n")]
    idle_after = {1, 1 + len(message_packets(fields, b"body\r\n", chunk=4)), len(packets)}
    for cut in range(1, len(packets) + 1):
        ours, theirs = socket.socketpair()
        idle = cut in idle_after
        ours.settimeout(60 if idle else 0.5)
        theirs.sendall(b"".join(packets[:cut]))
        service = FakeService()
        threading.Timer(0.02, setattr, (service, "stopping", True)).start()
        started = time.monotonic()
        milter.answer(ours, service, "test")
        took = time.monotonic() - started
        ours.close(), theirs.close()
        if idle:
            assert took < 5, f"a stop between messages waited {took:.1f} s (cut after packet {cut})"
        else:
            assert took > 0.3, f"a message begun was cut by the stop (cut after packet {cut})"


def valid_stream():
    fields = [(b"Subject", b" s%d" % i) for i in range(3)]
    return optneg() + b"".join(message_packets(fields, b"body\r\n" * 50, chunk=64)) + packet(b"Q")


@given(data=st.data())
@settings(max_examples=200, deadline=None)
def test_generated_streams_never_raise(data):
    """Garbage, a valid conversation cut anywhere or with bytes changed, packets of any command
    and length: answer ends, logging at most one line, without raising."""
    stream = valid_stream()
    kind = data.draw(st.sampled_from(["garbage", "cut", "changed", "packets"]))
    if kind == "garbage":
        stream = data.draw(st.binary(max_size=300))
    elif kind == "cut":
        stream = stream[: data.draw(st.integers(0, len(stream)))]
    elif kind == "changed":
        at = data.draw(st.integers(0, len(stream) - 1))
        stream = stream[:at] + data.draw(st.binary(min_size=1, max_size=4)) + stream[at + 1 :]
    else:
        commands = st.sampled_from(list(b"ODCHMRTLNBEAKUZ\0")).map(lambda c: bytes([c]))
        stream = optneg() + b"".join(
            packet(c, d) for c, d in data.draw(st.lists(st.tuples(commands, st.binary(max_size=40)), max_size=12))
        )
    service = FakeService(max_bytes=200)
    converse(stream, service, data.draw(st.sampled_from(milter.ACTIONS)), timeout=0.5)
    assert len(service.lines) <= 20
    assert all(len(m) <= 200 for m in service.judged)


def test_memory_is_bounded_by_max_bytes():
    """5 MB of body, a 1 MB header and 30,000 small ones to a milter of max_bytes 100 KB: what it holds at once stays
    near max_bytes plus one packet, and the message is passed unjudged."""
    service = FakeService(max_bytes=100_000)
    stream = optneg() + header(b"Subject", b"x" * 1_000_000)
    stream += header(b"X-Nbtext-Class", b" ham") * 30_000  # (past max_bytes: no field is kept)
    stream += b"".join(message_packets(FIELDS, b"y" * 5_000_000))
    tracemalloc.start()
    try:
        replies = converse(stream, service)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert replies[-1] == (b"a", b"") and service.judged == []
    assert peak < 1_000_000, peak  # (the stream, 6 MB, was made before tracing began)


# End to end: a real Postfix (tests/postfix_server.py) and the milter of a real model.

EACH = 5  # messages of each class sent through Postfix
TRACE = (b"return-path", b"x-original-to", b"delivered-to")  # what virtual(8) puts on top


class ModelService:
    """The server's service as serve.md describes it, of a model file: the verdict `nbtext filter`
    gives (delivery.judging: the model loaded once, verdict with filter's defaults)."""

    def __init__(self, model_path, max_bytes=500_000):
        from nbtext.choices import DEFAULT_MAX_BYTES
        from nbtext.delivery.judging import loaded

        self.model, self.cut = loaded(model_path), DEFAULT_MAX_BYTES
        self.classes, self.max_bytes, self.lines = self.model.classes, max_bytes, []

    def judge(self, message):
        from nbtext.delivery.judging import verdict

        return verdict(self.model, message, None, 0, self.cut)

    def log(self, client, what, verdict=None):
        self.lines.append((client, what, None if verdict is None else verdict.label))


class MilterServer:
    """A thread accepting on 127.0.0.1 (a free port), each connection answered in a thread of its
    own by milter.answer; closed by stop()."""

    def __init__(self, service, action="tag"):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.service, self.action = service, action
        threading.Thread(target=self.accepting, daemon=True).start()

    def accepting(self):
        while True:
            try:
                connection, (host, port) = self.listener.accept()
            except OSError:
                return
            connection.settimeout(30)
            threading.Thread(target=self.answering, args=(connection, f"{host}:{port}"), daemon=True).start()

    def answering(self, connection, client):
        with connection:
            milter.answer(connection, self.service, client, self.action)

    def stop(self):
        self.listener.close()


@pytest.fixture(scope="module")
def spamassassin():
    from postfix_server import missing_postfix

    from conftest import real_corpus

    missing = missing_postfix()
    if missing is not None:
        pytest.skip(missing)
    return real_corpus("spamassassin")


@pytest.fixture(scope="module")
def small_model(spamassassin, tmp_path_factory):
    from conftest import small_spamassassin_model

    return small_spamassassin_model(spamassassin, tmp_path_factory.mktemp("small"))


@pytest.fixture
def postfix(tmp_path, spamassassin):
    from postfix_server import Postfix

    server = Postfix(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def corpus_messages(spamassassin, label, n=EACH):
    return [sent(f) for f in sorted((spamassassin / "test" / label).iterdir())[:n]]


def sent(path):
    """A SpamAssassin file as an MTA is handed it: without its mbox envelope line, LF lines."""
    message = path.read_bytes()
    return message.split(b"\n", 1)[1] if message.startswith(b"From ") else message


def as_sent(delivered):
    """The delivered message without what Postfix put on top: virtual(8)'s trace and its own
    Received: field (the one a milter never sees)."""
    from nbtext.reading.mail import header_fields

    for name, _, _, end in header_fields(delivered, 0, len(delivered)):
        if name.lower() == b"received":
            assert b"(Postfix) with ESMTP" in delivered[:end], delivered[:end]
            return delivered[end:]
        assert name.lower() in TRACE, delivered[:end]
    raise AssertionError(f"no Received: field of Postfix's: {delivered[:500]}")


def queued(message):
    """The message as Postfix queues it (and a milter sees it): without the Return-Path fields
    its cleanup drops (message_drop_headers), LF lines ending in one."""
    from nbtext.reading.mail import header_block, header_fields

    start, end = header_block(message)
    dropped = [(s, e) for name, s, _, e in header_fields(message, start, end) if name.lower() == b"return-path"]
    for s, e in reversed(dropped):
        message = message[:s] + message[e:]
    return message if message.endswith(b"\n") else message + b"\n"


def filtered(model, message):
    import subprocess

    from conftest import NBTEXT

    return subprocess.run([NBTEXT, "filter", "-m", model], input=message, capture_output=True, check=True).stdout


def test_postfix_delivers_what_filter_writes(postfix, small_model, spamassassin):
    """SpamAssassin messages sent over SMTP through Postfix with the milter: each is delivered as
    `nbtext filter` writes it (its own X-Nbtext-Class, -Probability and -Score at the end of its
    header block, every other byte the message's), an earlier verdict the sender wrote replaced;
    many messages on one SMTP connection and one milter connection."""
    service = ModelService(small_model)
    milter_server = MilterServer(service)
    postfix.start(milter_server.port)
    messages = corpus_messages(spamassassin, "spam") + corpus_messages(spamassassin, "ham")
    messages.append(b"X-Nbtext-Class: ham\nx-nbtext-score: 99.00 / 0.00\n" + messages[0])  # a sender's forgery
    classes = []
    smtp = postfix.session()  # (one SMTP session, one milter connection: Postfix's milter8 reuses it)
    for message in messages:
        postfix.send(message, smtp)
        delivered = as_sent(postfix.delivered())
        assert delivered == filtered(small_model, queued(message)), message[:300]
        verdict = re.search(
            rb"^X-Nbtext-Class: (\S+)\nX-Nbtext-Probability: [0-9.]+\nX-Nbtext-Score: \S+ / \S+\n", delivered, re.M
        )
        assert delivered.replace(verdict[0], b"") == queued(message).replace(
            b"X-Nbtext-Class: ham\nx-nbtext-score: 99.00 / 0.00\n", b""
        )
        classes.append(verdict[1])
    assert classes.count(b"spam") >= EACH * 2 // 3 and classes.count(b"ham") >= EACH * 2 // 3, classes
    smtp.quit()
    assert [label.encode() for _, _, label in service.lines] == classes
    assert len({client for client, _, _ in service.lines}) == 1  # (one milter connection)
    milter_server.stop()


@pytest.mark.parametrize("action", ["quarantine", "reject"])
def test_postfix_quarantines_or_rejects_spam(postfix, small_model, spamassassin, action):
    """quarantine: spam goes to Postfix's hold queue, with the verdict as the reason in its log;
    reject: the SMTP client is answered 550 with the verdict. Ham is delivered tagged either way."""
    import smtplib

    service = ModelService(small_model)
    milter_server = MilterServer(service, action)
    postfix.start(milter_server.port)
    for message in corpus_messages(spamassassin, "spam", 3) + corpus_messages(spamassassin, "ham", 3):
        judged = service.judge(queued(message).replace(b"\n", b"\r\n"))
        if judged.label != "spam":
            postfix.send(message)
            assert as_sent(postfix.delivered()) == filtered(small_model, queued(message))
        elif action == "reject":
            with pytest.raises(smtplib.SMTPDataError) as refused:
                postfix.send(message)
            assert refused.value.smtp_code == 550
            assert refused.value.smtp_error.startswith(b"5.7.1 nbtext: class spam; probability ")
        else:
            held = len(postfix.held())
            postfix.send(message)
            deadline = time.monotonic() + 30
            while len(postfix.held()) == held and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(postfix.held()) == held + 1
    assert [label for _, _, label in service.lines].count("spam") >= 2, service.lines
    if action == "quarantine":
        # (Postfix logs the hold without the reason, which the milter's log line has; the held copy is tagged)
        assert postfix.log_text().count("milter-hold: END-OF-MESSAGE") == len(postfix.held())
        for queue_id in postfix.held():
            assert b"\nX-Nbtext-Class: spam\n" in postfix.queued_message(queue_id)
    milter_server.stop()


def test_postfix_passes_a_message_over_max_bytes_untouched(postfix, small_model, spamassassin):
    """A message larger than the service's max_bytes is delivered as it came, its body's rest
    skipped by the milter, and the log says so."""
    service = ModelService(small_model, max_bytes=2000)
    milter_server = MilterServer(service)
    postfix.start(milter_server.port)
    small, large = b"Subject: short\n\nhello\n", corpus_messages(spamassassin, "spam", 1)[0] + b"x" * 200_000 + b"\n"
    for message in (large, small):
        postfix.send(message)
        delivered = as_sent(postfix.delivered())
        assert (delivered == queued(message)) == (message is large)
    assert re.fullmatch(r"milter tag \w+: over 2000 bytes, accepted untouched", service.lines[0][1]), service.lines
    assert service.lines[1][2] is not None  # (the small message is judged)
    milter_server.stop()


@pytest.mark.parametrize("default_action", ["accept", "tempfail"])
def test_a_stopped_milter_leaves_postfix_to_its_milter_default_action(postfix, spamassassin, default_action):
    """No milter listening: with milter_default_action = accept the message is delivered untagged;
    with tempfail (Postfix's default) the SMTP client is told 451 and keeps the message."""
    import smtplib

    from conftest import free_port

    postfix.start(free_port(), default_action)
    message = corpus_messages(spamassassin, "spam", 1)[0]
    if default_action == "accept":
        postfix.send(message)
        assert as_sent(postfix.delivered()) == queued(message)
    else:
        with pytest.raises(smtplib.SMTPSenderRefused) as refused:  # (every command from the first on)
            postfix.send(message)
        assert refused.value.smtp_code == 451, refused.value


@pytest.mark.parametrize("action", ["tag", "reject"])
def test_postfix_through_nbtext_serve_milter(postfix, small_model, spamassassin, tmp_path, action):
    """The same end to end through the real server: `nbtext serve --milter ADDRESS` (its
    workers, its Service), one SMTP session of ham and spam: each ham delivered as `nbtext
    filter` writes it, each spam tagged so (tag) or refused with a 550 (--milter-action reject);
    with --milter alone no spamd listener is opened."""
    import smtplib

    from test_serve import Served

    served = Served(small_model, tmp_path, "--milter", "127.0.0.1:0", "--milter-action", action, listen=())
    try:
        assert "(milter)" in served.log() and "(spamd)" not in served.log()
        postfix.start(served.port)
        smtp = postfix.session()
        labels = []
        for message in corpus_messages(spamassassin, "spam", 3) + corpus_messages(spamassassin, "ham", 3):
            expected = filtered(small_model, queued(message))
            labels.append(re.search(rb"^X-Nbtext-Class: (\S+)$", expected, re.M)[1])
            if action == "reject" and labels[-1] == b"spam":
                with pytest.raises(smtplib.SMTPDataError) as refused:
                    postfix.send(message, smtp)
                assert refused.value.smtp_code == 550
                smtp.rset()
            else:
                postfix.send(message, smtp)
                assert as_sent(postfix.delivered()) == expected
        smtp.quit()
        assert b"spam" in labels and b"ham" in labels, labels
    finally:
        assert served.stop() == 0, served.log()
