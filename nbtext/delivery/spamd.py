"""SpamAssassin's spamd protocol (SPAMC/1.0 to 1.5, as spamd/PROTOCOL describes it), spoken to
spamc, Exim's `spam =` condition and Python clients such as aiospamc: one request a connection.

    VERB SPAMC/1.5\\r\\n  headers (Content-length, User, Compress, Message-class, Set, Remove)
    \\r\\n  the message
    ->  SPAMD/1.1 0 EX_OK\\r\\n  Content-length: N\\r\\n  Spam: True ; SCORE / THRESHOLD\\r\\n  \\r\\n  body

A message is spam when its verdict is the class filter files as spam (headers.filed_class: an
unsure verdict is not spam). SCORE / THRESHOLD is X-Nbtext-Score's pair: the log-odds of spam
against the rest, and the log-odds from which the model files spam (its turn: 0, or where
the model's --unsure-below or spam cut-off puts it; 0.00 for a model of more than two
classes, which has no one turn, or none to judge by). PROCESS's body is exactly what `nbtext
filter` prints for the message (service.tagged), HEADERS' its header block; REPORT's is the
verdict's header lines, SYMBOLS' one name, NBTEXT_ and the verdict's label.

A message larger than service.max_bytes is passed on unjudged, as spamc passes one over its
own limit: CHECK and the reports answer `Spam: False ; 0.00 / 0.00` (what spamc prints for a
message it did not send), PROCESS and HEADERS a status that is not EX_OK, on which spamc passes
the message on as it came (it never holds a message it was not sent whole). Every other
failure is an error status and the connection closed, never a partial answer: the answer is
built whole before it is sent.
"""

import time

from nbtext.delivery.headers import filed_class, score_value
from nbtext.errors import NbtextError
from nbtext.reading.mail import header_block

# sysexits.h's codes, as spamd answers with them
EX_OK, EX_DATAERR, EX_UNAVAILABLE, EX_SOFTWARE, EX_PROTOCOL = 0, 65, 69, 70, 76

LINE_LIMIT = 8192  # bytes of a request line or a header line (a longer one is a protocol error)
MAX_HEADERS = 256  # header lines of a request (spamd's "too many headers" after 255)
READ_CHUNK = 65536
VERBS = ("PING", "SKIP", "CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS", "TELL")
JUDGING = ("CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS")
UNJUDGED_SCORE = "0.00 / 0.00"


class _Ended(Exception):
    """The client closed the connection, reset it or stopped sending (the timeout)."""


class _Refused(Exception):
    """A request answered with an error status: (code, text)."""

    def __init__(self, code, text):
        super().__init__(text)
        self.code, self.text = code, text


class _TooBig(Exception):
    """A message larger than service.max_bytes (read and dropped)."""


def answer(connection, service, client):
    """Answer the one request of `connection` (the contract of nbtext.delivery's protocols):
    a whole answer, an error status, or nothing when the client went away; one log line."""
    reader = _Reader(connection)
    verb = "?"
    try:
        verb, version = _request_line(reader)
        reply, what, verdict = _replied(reader, service, verb, version)
    except _Ended as e:
        service.log(client, f"{verb} ({e.args[0]})" if verb != "?" else f"(no request: {e.args[0]})")
        return
    except _Refused as e:
        reply, what, verdict = f"SPAMD/1.0 {e.code} {e.text}\r\n".encode("ascii", "replace"), f"{verb}: {e.text}", None
    connection.settimeout(reader.timeout)  # (the answer's own time: sendall's whole, a client that never reads)
    try:
        if reply:
            connection.sendall(reply)
    except OSError:
        what += " (the client went away before the answer)"
    service.log(client, what, verdict)


def _request_line(reader):
    line = reader.line()
    verb, space, protocol = line.partition(b" ")
    version = protocol[6:] if protocol.startswith(b"SPAMC/") else b""
    try:
        number = float(version.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        number = None
    if not space or number is None or verb.decode("ascii", "replace") not in VERBS:
        raise _Refused(EX_PROTOCOL, "Bad header line: (not a request of SPAMC/1.x)")
    return verb.decode("ascii"), number


def _replied(reader, service, verb, version):
    """(the answer's bytes, what the log says, the verdict or None) of one request."""
    if verb in ("PING", "SKIP"):
        if version >= 1.5:  # (a blank line follows from 1.5 on)
            _headers(reader)
        return (b"SPAMD/1.5 0 PONG\r\n" if verb == "PING" else b""), verb, None
    headers = _headers(reader) if version > 1.0 or verb == "TELL" else {}
    if verb == "TELL":
        return _told(reader, service, headers, version)
    try:
        message = _body(reader, headers, service.max_bytes)
    except _TooBig:
        if verb in ("PROCESS", "HEADERS"):
            raise _Refused(EX_DATAERR, f"message larger than {service.max_bytes} bytes: passed on unjudged") from None
        return (
            _judged_reply(verb, version, UNJUDGED_SCORE, False, b""),
            f"{verb} (larger than --max-size: unjudged)",
            None,
        )
    verdict = service.judge(message)
    spam = verdict.label == filed_class(service.classes)
    score = UNJUDGED_SCORE if verdict.score is None else _score(verdict.score)
    if verb in ("PROCESS", "HEADERS"):
        body = service.tagged(message, verdict)
        if verb == "HEADERS":
            body = _header_part(body)
    elif verb == "SYMBOLS":
        body = "NBTEXT_" + "".join(c if c.isascii() and c.isalnum() else "_" for c in verdict.label.upper())
        body = body.encode("ascii") + (b"\r\n" if version < 1.3 else b"")
    elif verb == "REPORT" or (verb == "REPORT_IFSPAM" and spam):
        body = "".join(f"{name}: {value}\r\n" for name, value in verdict.fields).encode("utf-8", "surrogateescape")
    else:
        body = b""
    return _judged_reply(verb, version, score, spam, body), verb, verdict


def _score(score):
    """SCORE / THRESHOLD of X-Nbtext-Score's pair (the turn 0.00 where the model has none)."""
    said = score_value(score)
    return said if score[1] is not None else f"{said} / 0.00"


def _judged_reply(verb, version, score, spam, body):
    """The answer to a judging verb, as spamd writes it for each protocol version."""
    spam_line = f"Spam: {'True' if spam else 'False'} ; {score}\r\n".encode("ascii")
    if verb == "CHECK":
        return b"SPAMD/1.1 0 EX_OK\r\n" + spam_line + b"\r\n"
    if version < 1.2 and verb in ("PROCESS", "HEADERS"):
        return b"SPAMD/1.0 0 EX_OK\r\n" + body
    head = b"SPAMD/1.1 0 EX_OK\r\n"
    if version >= 1.3 or verb in ("PROCESS", "HEADERS"):
        head += f"Content-length: {len(body)}\r\n".encode("ascii")
    if version >= 1.3 or verb not in ("PROCESS", "HEADERS"):
        head += spam_line
    return head + b"\r\n" + body


def _header_part(tagged):
    """The tagged message up to and including the blank line after its header block."""
    block = header_block(tagged)
    end = block[1] if block is not None else 0
    for blank in (b"\r\n", b"\n"):
        if tagged.startswith(blank, end):
            return tagged[: end + len(blank)]
    return tagged[:end]


def _told(reader, service, headers, version):
    """TELL: Set: local with Message-class learns the message, Remove: local forgets it
    (service.learn, service.forget: the learner of `train --update` and `forget`)."""
    wanted_set, wanted_removed = headers.get("set", ""), headers.get("remove", "")
    set_local, remove_local = "local" in wanted_set, "local" in wanted_removed
    if set_local and remove_local:
        raise _Refused(EX_PROTOCOL, "Bad header line: (Set: local and Remove: local in one request)")
    label = headers.get("message-class")
    if set_local and label is None:
        raise _Refused(EX_PROTOCOL, "Bad header line: (Set: local without Message-class)")
    try:
        message = _body(reader, headers, service.max_bytes)
    except _TooBig:
        raise _Refused(EX_DATAERR, f"message larger than {service.max_bytes} bytes: not learned") from None
    did, said = b"", []
    try:
        if set_local:
            told = service.learn(message, label)
            did += b"DidSet: local\r\n" if getattr(told, "changed", True) else b""
            said.append(str(told))
        if remove_local:
            told = service.forget(message)
            did += b"DidRemove: local\r\n" if getattr(told, "changed", True) else b""
            said.append(str(told))
    except NbtextError as e:
        raise _Refused(EX_UNAVAILABLE, str(e)) from None
    return b"SPAMD/1.1 0 EX_OK\r\n" + did + b"\r\n", "TELL " + ("; ".join(said) or "nothing asked"), None


def _headers(reader):
    """The request's headers up to the blank line: {lowercase name: value} of those it reads."""
    headers = {}
    for _ in range(MAX_HEADERS):
        line = reader.line()
        if not line:
            return headers
        name, colon, value = line.partition(b":")
        if not colon:
            raise _Refused(EX_PROTOCOL, "Bad header line: (header not in 'Name: value' format)")
        name, value = name.strip().lower().decode("ascii", "replace"), value.strip().decode("ascii", "replace")
        if name == "content-length":
            if not value.isdecimal() or not value.isascii():
                raise _Refused(EX_PROTOCOL, "Bad header line: (Content-Length contains non-numeric bytes)")
            headers[name] = int(value)
        elif name == "compress":
            if value.lower() != "zlib":
                raise _Refused(EX_PROTOCOL, f"Bad header line: (compression type not supported: {value[:40]})")
            headers[name] = "zlib"
        elif name == "message-class":
            if value.lower() not in ("spam", "ham"):
                raise _Refused(EX_PROTOCOL, "Bad header line: (Message-class header contains invalid class)")
            headers[name] = value.lower()
        elif name in ("set", "remove"):
            headers[name] = value.lower()
    raise _Refused(EX_PROTOCOL, "Bad header line: (too many headers)")


def _body(reader, headers, max_bytes):
    """The message: Content-length bytes (else all till the client shuts its side), inflated
    with Compress: zlib; _TooBig past `max_bytes` (read and dropped, so the client can read
    the answer); held never much past `max_bytes` whatever the client says."""
    length = headers.get("content-length")
    compressed = headers.get("compress") == "zlib"
    if compressed and length is None:
        raise _Refused(EX_UNAVAILABLE, "Compress requires Content-length header")
    # (zlib's output is what is bounded; its input may be a little larger than its output)
    limit = max_bytes + 1024 if compressed else max_bytes
    if length is not None and length > limit:
        reader.drop(length)
        raise _TooBig
    data = reader.at_most(limit if length is None else length)
    if length is None and len(data) == limit and reader.drop(None):
        raise _TooBig
    if length is not None and len(data) != length:
        raise _Refused(
            EX_PROTOCOL, f"Bad header line: (Content-Length mismatch: Expected {length} bytes, got {len(data)} bytes)"
        )
    if not compressed:
        return data
    import zlib

    inflater = zlib.decompressobj()
    try:
        message = inflater.decompress(data, max_bytes + 1)
    except zlib.error as e:
        raise _Refused(EX_UNAVAILABLE, f"zlib: {e}") from None
    if len(message) > max_bytes or inflater.unconsumed_tail:
        raise _TooBig
    if not inflater.eof:
        raise _Refused(EX_UNAVAILABLE, "zlib: failed to find end of zlib stream")
    return message


class _Reader:
    """Bounded reads of a connection: a line of at most LINE_LIMIT bytes, at most n bytes, or
    bytes read and dropped. EOF, a reset or the timeout end the request (_Ended). The timeout
    is the whole request's, not each read's: a client that sends a byte now and then (within
    the timeout each) would hold its connection, one of --max-connections, for ever."""

    def __init__(self, connection):
        self.connection, self.held, self.eof = connection, bytearray(), False
        self.timeout = connection.gettimeout()
        self.deadline = None if self.timeout is None else time.monotonic() + self.timeout

    def _more(self, size=READ_CHUNK):
        """Read once more into `held`; False at EOF."""
        if self.eof:
            return False
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise _Ended("the request took longer than the timeout")
            self.connection.settimeout(left)
        try:
            chunk = self.connection.recv(size)
        except TimeoutError:
            raise _Ended("the request was not sent whole within the timeout") from None
        except OSError as e:
            raise _Ended(f"the connection failed: {e.strerror or e}") from None
        if not chunk:
            self.eof = True
            return False
        self.held += chunk
        return True

    def line(self):
        """The next line without its CR LF (or LF); _Ended at EOF before its end."""
        start = 0
        while True:
            end = self.held.find(b"\n", start)
            if end >= 0:
                if end > LINE_LIMIT:
                    break
                line = bytes(self.held[:end])
                del self.held[: end + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self.held) > LINE_LIMIT:
                break
            start = len(self.held)
            if not self._more():
                raise _Ended("the client closed the connection" + (" mid-line" if self.held else ""))
        raise _Refused(EX_PROTOCOL, f"Bad header line: (a line longer than {LINE_LIMIT} bytes)")

    def at_most(self, n):
        """Up to `n` bytes: fewer only at EOF."""
        while len(self.held) < n and self._more(min(READ_CHUNK, n - len(self.held))):
            pass
        data = bytes(self.held[:n])
        del self.held[:n]
        return data

    def drop(self, n):
        """Read and drop `n` bytes (None: till EOF); whether any was there to drop."""
        dropped = len(self.held)
        self.held.clear()
        while (n is None or dropped < n) and self._more(READ_CHUNK if n is None else min(READ_CHUNK, n - dropped)):
            dropped += len(self.held)
            self.held.clear()
        return dropped > 0
