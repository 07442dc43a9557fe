"""An IMAP answer cut by anything (a signal's KeyboardInterrupt or Terminated, an error, a
network failure) leaves its connection out of step, whichever command it answers and on
whichever connection (the folder's, imap-scan's second one into the target folder): no command
is sent on it again, LOGOUT included, and it is closed without a word; a connection left in
step (the signal between two commands, or while the documents are judged) is logged out, its
answer waited for at most LOGOUT_SECONDS (nbtext.reading.imapclient, nbtext.reading.imap's
close). Against tests/hostile_imap.py, in this process, the cut made where the client reads."""

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nbtext.errors import NbtextError, Terminated
from nbtext.jobs import imapscan
from nbtext.reading import imap, imapclient

from hostile_imap import HostileImap
from test_imap_moves import small_model
from test_imap_wire import PASSWORD, SPAM

MARK = imapscan.MARK.encode()
DATE = b'"29-Nov-2026 05:00:00 +0000"'
LOGOUT_BOUND = 0.1  # LOGOUT_SECONDS in these tests (each server here is silent on LOGOUT)
# what cuts an answer: a signal's exceptions, an error of the code reading it, a network failure
CUTS = [KeyboardInterrupt, lambda: Terminated(15), lambda: RuntimeError("a reader's error"), ConnectionResetError]
WHERE = ["between two commands", "before the answer's first byte", "after its first bytes"]


@pytest.fixture(scope="module")
def model():
    return small_model()


def asked(arguments):
    """The UIDs of a UID command's set (`3,5:7`)."""
    uids = set()
    for part in arguments.split(b" ", 1)[0].split(b","):
        low, _, high = part.partition(b":")
        uids.update(range(int(low), int(high or low) + 1))
    return uids


def scanned_server():
    """A folder of a spam, UID 1, whose move an earlier run began (it carries MARK; the state
    records it: see scan_state), and a ham: a scan opens its second connection, into Junk, to
    look for the spam's copy (none), then moves the spam. Every LOGOUT's answer is silent (30 s)."""
    server = HostileImap({1: SPAM, 2: b"Message-ID: <2@x>\r\nSubject: notes\r\n\r\nlunch meeting at noon\r\n"})

    def answer(server, tag, command, arguments):
        if command == b"UID FETCH" and arguments.endswith(b"(UID FLAGS)"):
            for uid in sorted(asked(arguments) & set(server.messages)):
                server.send(b"* %d FETCH (UID %d FLAGS (%s))" % (uid, uid, MARK if uid == 1 else b""))
        elif command == b"UID FETCH" and b"INTERNALDATE" in arguments:
            for uid in sorted(asked(arguments) & set(server.messages)):
                said = b"Message-ID: <%d@x>\r\n\r\n" % uid
                server.out.write(
                    b"* %d FETCH (UID %d INTERNALDATE %s RFC822.SIZE %d BODY[HEADER.FIELDS (MESSAGE-ID)] {%d}\r\n%s)\r\n"
                    % (uid, uid, DATE, server.size(uid), len(said), said)
                )
        elif command == b"UID SEARCH":
            server.send(b"* SEARCH")
        else:
            return False
        server.send(tag + b" OK done")
        return True

    server.answer, server.stall = answer, (b"LOGOUT", 0, None, 1)
    return server


def scan_state(path, server):
    path.write_text(
        json.dumps({"version": 1, "folders": {server.url(): {"uid_validity": 7, "last_uid": 0, "moving": [1]}}})
    )


class Cut:
    """Each client's writes (`sent`: (client, bytes) in order), and the `at`-th answer read
    (counting each connection's greeting) cut by `cut()` `where` WHERE says (after its first
    bytes: where it has none, a silent LOGOUT's, in the wait for them); `made`: (the client, how
    many writes had been made, whether the cut left it in step, the command answered), once made."""

    def __init__(self, monkeypatch, at=0, cut=None, where=None):
        self.sent, self.answers, self.made = [], 0, None
        client_class = imapclient.Client  # (imap://, these servers')
        begins, received, send = client_class._answer_begins, client_class._received, client_class.send
        outer = self

        def answer_begins(client, what):
            outer.answers += 1
            if outer.answers == at and where == WHERE[0] and what != "its greeting":
                outer.made = (client, len(outer.sent), True, what)  # (nothing of the command sent yet)
                raise cut()
            client.cut_next = outer.answers == at
            begins(client, what)

        def cut_received(client, sock, buffer):
            if getattr(client, "cut_next", False):
                client.cut_next = False
                if where == WHERE[2]:
                    try:
                        received(client, sock, buffer)
                    except imapclient.Stalled:  # (a silent answer)
                        pass
                outer.made = (client, len(outer.sent), False, client.answering)
                raise cut()
            return received(client, sock, buffer)

        def logged_send(client, data):
            outer.sent.append((client, data))
            send(client, data)

        monkeypatch.setattr(client_class, "_answer_begins", answer_begins)
        monkeypatch.setattr(client_class, "_received", cut_received)
        monkeypatch.setattr(client_class, "send", logged_send)
        monkeypatch.setattr(imap, "LOGOUT_SECONDS", LOGOUT_BOUND)

    def after(self):
        """What the client the cut was made on sent after it."""
        client, sent, _, _ = self.made
        return [data for sender, data in self.sent[sent:] if sender is client]


def run(job, cut):
    """(what `job()` raised, None where it returned; the seconds it took; the connections
    logged out)."""
    start = time.monotonic()
    try:
        job()
        raised = None
    except BaseException as e:  # (a signal's too: what the job let through)
        raised = e
    took = time.monotonic() - start
    return raised, took, sum(b" LOGOUT" in data for _, data in cut.sent)


def job_of(name, server, model, state):
    """The run of a scan of the server's folder (`state` its state file), or of predict's reader of it."""
    scan_state(state, server)
    if name == "imap-scan":
        return lambda: imapscan.scan(server.url(), model.classes, lambda: model, "Junk", state_path=str(state))
    return lambda: list(imap.folder_documents(server.url()))


JOBS = ["imap-scan", "predict's reader"]
ANSWERS = {}  # {job: how many answers a run of it reads, greetings too, nothing cut}


def answers_of(job, monkeypatch, model, tmp_path):
    if job not in ANSWERS:
        with monkeypatch.context() as patch, scanned_server() as server:
            cut = Cut(patch)
            raised, _, _ = run(job_of(job, server, model, tmp_path / "counted"), cut)
        assert raised is None, raised
        ANSWERS[job] = cut.answers
    return ANSWERS[job]


@pytest.fixture
def password(monkeypatch):
    monkeypatch.setenv("NBTEXT_IMAP_PASSWORD", PASSWORD)
    monkeypatch.delenv("NBTEXT_IMAP_PASSWORD_COMMAND", raising=False)


@pytest.mark.parametrize("job", JOBS)
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_an_answer_cut_by_anything_is_never_followed_by_a_command_on_its_connection(
    job, model, tmp_path_factory, monkeypatch, password, data
):
    """Whatever cuts the read of any answer of a scan (its folder's connection and the one into
    Junk, each command from LOGIN to the last MOVE) or of predict's reader, mid-answer or before
    its first byte: nothing more is sent on that connection, LOGOUT included; cut between two
    commands, the connection is logged out, its silent answer waited for LOGOUT_SECONDS. What
    cut it is what the run ends with (a network failure: a lost connection, a new one made
    where the job makes one, or one line), and the run ends within a LOGOUT_SECONDS a
    connection logged out. (Before, only an Overrun left a connection out of step: a signal's
    exception cut an answer and close's LOGOUT read the rest of it, up to 60 s of silence.)"""
    tmp_path = tmp_path_factory.mktemp("cut")
    at = data.draw(st.integers(1, answers_of(job, monkeypatch, model, tmp_path)), label="the answer cut")
    cut, where = data.draw(st.sampled_from(CUTS), label="cut by"), data.draw(st.sampled_from(WHERE), label="where")
    with monkeypatch.context() as patch, scanned_server() as server:
        made = Cut(patch, at, cut, where)
        raised, took, logged_out = run(job_of(job, server, model, tmp_path / "state"), made)
    assert made.made is not None  # (the answer was read: the cut made)
    expected = type(cut())
    if expected is ConnectionResetError:  # (a connection lost: the job goes on on another, or says so in one line)
        assert raised is None or isinstance(raised, NbtextError), repr(raised)
    elif made.made[3] == "LOGOUT" and issubclass(expected, Exception):  # (a close's: the connection is left)
        assert raised is None, repr(raised)
    else:
        assert type(raised) is expected, repr(raised)
    after = made.after()
    if made.made[2]:  # in step: logged out, nothing else
        assert all(b" LOGOUT" in data for data in after), after
    else:
        assert after == [], after
    assert took < 2 + LOGOUT_BOUND * logged_out, (took, logged_out)


def test_a_reader_left_between_two_messages_logs_out_within_its_bound(monkeypatch, password):
    """predict stopped while it judges a message (Ctrl-C, a reader of its output gone): the
    folder's reader is closed between two fetches, its connection in step: LOGOUT is sent and
    its answer, which this server never gives, waited for LOGOUT_SECONDS, no longer (it was
    60 s, with the signals ignored)."""
    cut = Cut(monkeypatch)
    monkeypatch.setattr(imap, "BATCH", 1)  # (a fetch a message: the reader stops between two)
    with scanned_server() as server:
        documents = imap.folder_documents(server.url())
        next(documents)
        start = time.monotonic()
        documents.close()
        took = time.monotonic() - start
    assert [data for _, data in cut.sent if b" LOGOUT" in data]  # (sent: the connection was in step)
    assert LOGOUT_BOUND - 0.05 <= took < LOGOUT_BOUND + 1, took
