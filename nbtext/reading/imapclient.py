"""The IMAP client the folders' reader (nbtext.reading.imap) talks through: imaplib's, with
what a server sends bounded, since a server is an adversary too. imaplib reads a literal
whole whatever size the server announces, keeps every untagged answer until a command asks
for its kind (an answer of a kind never asked for, for ever), and reads lines of up to a
megabyte. Here, for each command:

- a literal is kept up to what the command asked for (`literal`: --max-bytes + 1 for a
  message's body, SMALL_LITERAL for any other) and the rest read in pieces of PIECE bytes and
  thrown away, so the connection stays in step and a message cut so reads as one over
  --max-bytes does; where the command gives a `budget`, its literals keep at most that many
  bytes in all, whatever sizes the server said: one that does not fit is read and thrown
  away whole, and given as None (the reader asks for that message again, alone);
- the untagged answers kept hold at most ANSWER_BYTES, plus ANSWER_COST and `literal` for each
  of the `answers` the command expects (a fetch's message; with a `budget`, the budget once),
  each answer counted with what Python spends to keep it; those of earlier commands are
  dropped. An answer the command reads as it arrives (`each`: a listing's lines) is not kept
  where it holds what it said (a new UID; any other is kept and counted), and a continuation
  line (`+ ...`, which imaplib reads and drops) is counted as one kept: no line of an answer is
  read without counting toward a bound but those a listing holds, bounded by the folder's size;
- a line is at most LINE_BYTES, and a literal announced larger than IMAP's numbers allow
  (2^32 - 1) is refused before anything is read of it;
- capabilities that are not ASCII, and an AUTHENTICATE challenge that is not base64, which
  imaplib decodes with errors of its own, are Garbled;
- each answer (the greeting, and all a command brings up to its tagged completion) is read
  whole before its deadline: ANSWER_SECONDS, plus the bytes the command expects (the literals
  it may keep, a listing's lines) at SLOWEST bytes a second, and never past the end of the run
  a `time_limit` sets; within it, the server may not be silent for ANSWER_SECONDS, and past
  its first ANSWER_SECONDS the answer must have come at SLOWEST (by time t from its start,
  ANSWER_SECONDS + (bytes received + LISTED_LINE a line read) / SLOWEST >= t: a listing's
  short lines keep the time the deadline gives each). What the command expects is what it
  may bring, which a server sets itself (its EXISTS, for a listing): that alone let a trickle
  last days. The socket's own timeout is per read: a server sending a byte every 59 s never
  ended an answer. Every byte of an answer is read through `_Timed`, so no path reads without
  the deadline.

Past a bound is Overrun (past a deadline, Stalled), an error of the run: the connection is out
of step, and a server that sends it is not to be trusted with the rest. So is any answer cut
before its end, whatever cut it (a lost connection, an error of a reader, a signal's exception:
Ctrl-C, SIGTERM): a command is marked unanswered as it is sent and cleared only once its tagged
completion is read, so a connection whose answer was cut is out of step by construction: no
command is sent on it again (OutOfStep), and it is closed without LOGOUT (`broken`). Every
write, too, waits only until the answer's deadline. Imported only when a folder is read."""

import imaplib
import io
import socket
import time
from contextlib import contextmanager
from contextvars import ContextVar

PIECE = 1 << 16  # bytes of a literal read at a time past what is kept
SMALL_LITERAL = 1 << 16  # a literal no size was asked for (a folder's name in LIST, a flag)
ANSWER_BYTES = 16 << 20  # what one command's untagged answers may hold beside those it expects
ANSWER_COST = 512  # bytes allowed an expected answer: its line(s), and a Python object each
ENTRY_COST = 100  # what keeping one answer costs beside its bytes (a Python bytes object, a list slot)
LINE_BYTES = imaplib._MAXLINE  # imaplib's own bound (a megabyte), here an Overrun
LARGEST_NUMBER = (1 << 32) - 1  # IMAP's number (RFC 3501): a literal's size, a UID
ANSWER_SECONDS = 60  # the time any answer gets, and the longest the server may say nothing
SLOWEST = 64 << 10  # bytes a second (512 kbit/s): an answer's expected bytes get their time at this rate
LISTED_LINE = 64  # bytes expected of a listing's line (`* N FETCH (UID N RFC822.SIZE N)`)
RUN_END = ContextVar("imap_run_end", default=None)  # the time.monotonic() every answer ends by (time_limit)


class Overrun(imaplib.IMAP4.error):
    """The server sent past a bound (see the module docstring): an error of the run."""


class OutOfStep(imaplib.IMAP4.abort):
    """A command asked of a connection whose last answer was cut before its end (see the module
    docstring): it is not sent, the connection is as lost."""


class Stalled(Overrun):
    """The server did not finish an answer by its deadline, or said nothing for ANSWER_SECONDS
    within it (see the module docstring): an error of the run."""


@contextmanager
def time_limit(seconds):
    """Every answer read inside the `with` ends within `seconds` of its start (None: no limit
    but each answer's own), and by an enclosing time_limit's end where that comes first, in
    every connection: past it is Stalled."""
    end, enclosing = None if seconds is None else time.monotonic() + seconds, RUN_END.get()
    token = RUN_END.set(enclosing if end is None or enclosing is not None and enclosing < end else end)
    try:
        yield
    finally:
        RUN_END.reset(token)


def run_time_left():
    """Seconds left of the run a time_limit bounds (None: no limit)."""
    end = RUN_END.get()
    return None if end is None else end - time.monotonic()


class _Timed(io.RawIOBase):
    """A client's socket as the raw file its answers are read from: each read waits only until
    the answer's deadline (Bounded._received)."""

    def __init__(self, client, sock):
        self.client, self.sock = client, sock

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.client._received(self.sock, buffer)


class Garbled(imaplib.IMAP4.error):
    """The server sent what its kind of answer cannot hold, where imaplib raised an error of
    its own, a traceback (capabilities not ASCII: UnicodeDecodeError; an AUTHENTICATE challenge
    not base64: binascii.Error): an error of the run."""


class Bounded:
    """The bounds, mixed into imaplib's IMAP4 and IMAP4_SSL (before them: its methods come first)."""

    literal_kept = SMALL_LITERAL  # (imaplib has its own `literal`: a command's argument)
    allowed = ANSWER_BYTES
    budget = None  # literal bytes the command's literals may still keep, None: no such bound
    each = None
    kept = 0
    unanswered = None  # the command sent whose answer is not yet read whole; left set where it was cut
    overran = None  # the Overrun that cut an answer: every later command raises it again, none is sent
    expected = 0  # bytes the next command's answer is expected to bring (expecting): time at SLOWEST
    seconds = None  # the time the answer being read gets
    deadline = None  # the time.monotonic() the answer being read must be whole by
    started = 0.0  # the time.monotonic() it began
    received = 0  # bytes of it received: past ANSWER_SECONDS, it must have come at SLOWEST (_paced)
    lines = 0  # its lines read (readline)
    heard = 0.0  # the time.monotonic() its last bytes came (or it began)
    run_ends = False  # whether that deadline is the run's end (time_limit)
    answering = "its greeting"  # the command whose answer is read
    reading = None  # (the socket, the buffered file its answers are read from)

    @property
    def broken(self):
        """Whether the connection is out of step (an answer cut before its end, by whatever:
        see the module docstring): it is closed without another word."""
        return self.unanswered is not None or self.overran is not None

    @contextmanager
    def expecting(self, answers=0, literal=0, budget=None, each=None, lines=0):
        """For the commands inside the `with`: `answers` untagged answers expected beyond the
        allowance, each with a literal kept up to `literal` bytes, and at most `budget` bytes
        of literals in all (None: `literal` for each answer); `each(kind, data)` is handed each
        untagged answer as it arrives, which is kept only where it returns False (a listing
        reads its lines so, holding none; what it raises leaves the connection out of step).
        The answer's deadline grows by the literal bytes it may keep and `lines` lines at SLOWEST."""
        self.literal_kept, self.budget, self.each = literal or SMALL_LITERAL, budget, each
        literals = answers * literal if budget is None else budget
        self.allowed = ANSWER_BYTES + answers * ANSWER_COST + literals
        self.expected = min(literals, answers * literal) + lines * LISTED_LINE
        try:
            yield
        finally:
            self.literal_kept, self.allowed, self.budget, self.each = SMALL_LITERAL, ANSWER_BYTES, None, None
            self.expected = 0

    def _answer_begins(self, what):
        """The deadline of the answer to `what` (a command, the greeting): ANSWER_SECONDS and
        the time of its expected bytes at SLOWEST from now, or the run's end where that comes first."""
        self.answering, end = what, RUN_END.get()
        self.started, self.received, self.lines = time.monotonic(), 0, 0
        self.heard = self.started
        self.seconds = ANSWER_SECONDS + self.expected / SLOWEST
        self.deadline = self.started + self.seconds
        self.run_ends = end is not None and end < self.deadline
        if self.run_ends:
            self.deadline = end

    def open(self, host, port, timeout=None):
        self._answer_begins("its greeting")  # (the connection and a TLS handshake: the socket's timeout, at most that)
        left = max(self.deadline - time.monotonic(), 0.001)
        super().open(host, port, left if timeout is None else min(timeout, left))

    def _create_socket(self, timeout):
        """imaplib's socket, connected within the greeting's deadline whatever the number of the
        host's addresses (socket.create_connection gives each the whole timeout: k silent
        addresses took k deadlines), TLS wrapped for imaps:// within what is left of it."""
        sock = _connected(self.host or None, self.port, self.deadline)
        if isinstance(self, imaplib.IMAP4_SSL):
            sock.settimeout(max(self.deadline - time.monotonic(), 0.001))
            try:
                return self.ssl_context.wrap_socket(sock, server_hostname=self.host)
            except BaseException:  # (a handshake failed or cut, by a signal's exception too: closed)
                sock.close()
                raise
        return sock

    def _connect(self):
        """The greeting and the capabilities (imaplib's); a signal's exception cutting them closes
        the socket too (imaplib closes it on an Exception only): a client never made holds none."""
        try:
            super()._connect()
        except Exception:
            raise
        except BaseException:
            try:
                self.shutdown()
            except OSError:
                pass
            raise

    def _received(self, sock, buffer):
        """Bytes of the answer being read into `buffer` (_Timed): a read waits for the server
        only until the answer's deadline, or its pace's (_paced), and at most ANSWER_SECONDS;
        past any, Stalled."""
        left = min(self.deadline, self._paced()) - time.monotonic()
        if left > 0:
            sock.settimeout(min(left, ANSWER_SECONDS))
            try:
                got = sock.recv_into(buffer)
                self.received, self.heard = self.received + got, time.monotonic()
                return got
            except socket.timeout:  # (TimeoutError from Python 3.10)
                left = min(self.deadline, self._paced()) - time.monotonic()
        finished_by = self.deadline <= self._paced()  # (the deadline passed, not the pace)
        if left <= 0 and finished_by and self.run_ends:
            self.overran = Stalled(f"the run's time limit was reached while the server answered {self.answering}")
        elif left > 0 or time.monotonic() - self.heard >= ANSWER_SECONDS:
            self.overran = Stalled(
                f"the server said nothing for {_seconds(ANSWER_SECONDS)} s in its answer to {self.answering}"
            )
        elif finished_by:
            self.overran = Stalled(
                f"the server did not finish its answer to {self.answering} within {_seconds(self.seconds)} s"
            )
        else:
            self.overran = Stalled(
                f"the server sent its answer to {self.answering} slower than {SLOWEST >> 10:,} KiB/s past its "
                f"first {_seconds(ANSWER_SECONDS)} s ({self.received:,} bytes in "
                f"{_seconds(time.monotonic() - self.started)} s)"
            )
        raise self.overran

    def _paced(self):
        """The time.monotonic() the answer being read must have brought more by: its first
        ANSWER_SECONDS, and the time of the bytes it brought at SLOWEST, each line also
        LISTED_LINE bytes' (a listing's lines are given their time so by the deadline too)."""
        return self.started + ANSWER_SECONDS + (self.received + self.lines * LISTED_LINE) / SLOWEST

    @property
    def answers(self):
        """The buffered file the server's answers are read from, through _Timed (a new one for
        a new socket: after STARTTLS, what the server sent before it is not read as TLS's)."""
        if self.reading is None or self.reading[0] is not self.sock:
            self.reading = (self.sock, io.BufferedReader(_Timed(self, self.sock)))
        return self.reading[1]

    def overrun(self, what):
        self.overran = Overrun(f"the server sent {what}")
        return self.overran

    def _command(self, name, *args):
        # Every command imaplib sends comes through here (its _simple_command: LOGOUT too), and its
        # answer is read by _command_complete: the one place a cut answer leaves the connection out of step.
        if self.overran is not None:  # (out of step: not another word; a reader that asks again learns why)
            raise self.overran
        if self.unanswered is not None:  # (the cut answer's rest would be read as this one's)
            raise OutOfStep(f"the connection is out of step: the answer to {self.unanswered} was cut short")
        # (imaplib drops only the OK, NO and BAD answers of earlier commands: drop all of them
        # but READ-ONLY, which imaplib checks before each command)
        for kind in [k for k in self.untagged_responses if k != "READ-ONLY"]:
            del self.untagged_responses[kind]
        self.kept = 0
        self._answer_begins(f"{name} {args[0]}" if name == "UID" and args else name)
        self.unanswered = self.answering  # (before a byte is sent: a command cut in its sending is one too)
        return super()._command(name, *args)

    def _command_complete(self, name, tag):
        """The command's answer read to its tagged completion: only then is the connection in
        step again. Whatever ends the read before (an Overrun, a lost connection, a reader's error,
        a signal's KeyboardInterrupt or Terminated) leaves `unanswered` set."""
        try:
            answer = super()._command_complete(name, tag)
        except imaplib.IMAP4.abort:  # (the server said BYE, or what no answer can be: out of step)
            raise
        except imaplib.IMAP4.error:  # (imaplib raises what an answer raised again as a plain error)
            if self.overran is not None:
                raise self.overran from None  # (an Overrun stays one: the run's error, not a refusal)
            if tag not in self.tagged_commands:  # (a BAD: its tagged completion read, the connection in step)
                self.unanswered = None
            raise
        self.unanswered = None
        return answer

    def send(self, data):
        """A command's bytes (and an AUTHENTICATE's answers) sent within its answer's deadline:
        a server that reads nothing holds no write longer than it may hold an answer."""
        self.sock.settimeout(max(min(self.deadline - time.monotonic(), ANSWER_SECONDS), 0.001))
        super().send(data)

    def starttls(self, ssl_context=None):
        try:
            return super().starttls(ssl_context)
        except BaseException:  # (its answer or the handshake cut, or refused: neither side knows the other's state)
            self.unanswered = self.unanswered or "STARTTLS"
            raise

    def _append_untagged(self, typ, dat):
        if self.each is not None and self.each(typ, dat):  # (what it raises cuts the answer: out of step)
            return
        held = sum(len(d or b"") for d in dat) if isinstance(dat, tuple) else len(dat or b"")
        self._counted(held)
        super()._append_untagged(typ, dat)

    def _counted(self, held):
        """One more answer of `held` bytes kept, within the command's bound."""
        self.kept += ENTRY_COST + held
        if self.kept > self.allowed:
            raise self.overrun(f"more than {self.allowed:,} bytes of answers to one command")

    def _get_capabilities(self):
        # (imaplib decodes the answer as ASCII: at connection, after STARTTLS)
        try:
            super()._get_capabilities()
        except UnicodeDecodeError:
            raise Garbled("the server's capabilities are not ASCII") from None

    def authenticate(self, mechanism, authobject):
        import binascii

        try:  # (imaplib decodes the server's challenge before it answers: nothing of the password is sent)
            return super().authenticate(mechanism, authobject)
        except binascii.Error:  # (the command is left unanswered: the connection is out of step)
            raise Garbled(f"an AUTHENTICATE {mechanism} challenge that is not base64") from None

    def readline(self):
        line = self.answers.readline(LINE_BYTES + 1)
        if len(line) > LINE_BYTES:
            raise self.overrun(f"a line longer than {LINE_BYTES:,} bytes")
        self.lines += 1
        return line

    def _get_line(self):
        line = super()._get_line()
        if line.startswith(b"+"):  # (a continuation: imaplib keeps the last alone, of any number)
            self._counted(len(line))
        if line.endswith(b"}"):  # a literal announced: imaplib reads it next
            size = line[line.rfind(b"{") + 1 : -1]
            if size.isdigit() and (len(size) > 10 or int(size) > LARGEST_NUMBER):
                raise self.overrun(f"a literal of {len(size):,} digits' size, more than IMAP allows")
        return line

    def read(self, size):
        """A literal of `size` bytes (imaplib reads them only): the first `literal` kept, the
        rest read in pieces and thrown away; None, all of it thrown away, where what would be
        kept does not fit in what is left of the command's budget."""
        keep = min(size, self.literal_kept)
        if self.budget is not None and keep > self.budget:
            self._thrown_away(size)
            return None
        kept = self.answers.read(keep)
        if self.budget is not None:
            self.budget -= len(kept)
        if len(kept) == keep:  # (shorter: the connection closed, and imaplib's next line says so)
            self._thrown_away(size - len(kept))
        return kept

    def _thrown_away(self, left):
        """Read `left` bytes of a literal in pieces, keeping none."""
        while left > 0:
            piece = self.answers.read(min(left, PIECE))
            if not piece:  # (the connection closed: imaplib's next line says so)
                break
            left -= len(piece)


def _connected(host, port, deadline):
    """A socket connected to `host`'s first address that answers, tried in turn by
    socket.getaddrinfo's order, all by `deadline` (time.monotonic()); past it socket.timeout,
    and where every address refused, the last one's error."""
    error = None
    for family, kind, protocol, _, address in _resolved(host, port, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        sock = socket.socket(family, kind, protocol)
        try:
            sock.settimeout(left)
            sock.connect(address)
            return sock
        except BaseException as e:  # (a signal's exception too: the socket closed)
            sock.close()
            if not isinstance(e, OSError):
                raise
            error = e
    raise error or OSError(f"{host} has no address")


def _resolved(host, port, deadline):
    """socket.getaddrinfo's addresses of `host` by `deadline` (the resolver's own waits, its
    retries of each name server, are not the socket's timeout): asked in a thread of its own,
    left to finish on its own past the deadline, which is socket.timeout."""
    import threading

    answer = []

    def resolve():
        try:
            answer.append(socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM))
        except BaseException as e:  # (said in the caller's thread)
            answer.append(e)

    resolving = threading.Thread(target=resolve, daemon=True)
    resolving.start()
    resolving.join(max(deadline - time.monotonic(), 0))
    if not answer:
        raise socket.timeout("timed out")
    if isinstance(answer[0], BaseException):
        raise answer[0]
    return answer[0]


def _seconds(seconds):
    """A number of seconds as a message says it: whole from 10 s."""
    return f"{seconds:,.0f}" if seconds >= 10 else f"{seconds:.3g}"


class Client(Bounded, imaplib.IMAP4):
    """imap:// (STARTTLS where offered)."""


class TlsClient(Bounded, imaplib.IMAP4_SSL):
    """imaps://."""
