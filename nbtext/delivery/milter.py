"""The Sendmail/Postfix milter protocol, version 6 as Postfix's milter8 speaks it: one
connection from the MTA, one message after another on it, each judged at its end
(SMFIC_BODYEOB) by service.judge and answered with `nbtext filter`'s verdict fields.

Every packet, both ways, is a 4-byte length (network order, counting the command byte), a
command byte and its data; strings in the data end with a NUL. The milter asks the MTA
(SMFIC_OPTNEG's reply) to leave out the steps it does not read (connect, HELO, MAIL, RCPT,
DATA, unknown commands, end of headers) and to expect no reply to each header, and reads
header values with their leading space (SMFIP_HDR_LEADSPC), so that the message it rebuilds
(each field `name:value` CR LF, a blank line, the body chunks as sent: CR LF lines) is
byte for byte the message as it came over SMTP. The MTA hides its own Received: field from a
milter, and header indexes (SMFIR_CHGHEADER) count from the first field it shows.

A message's answer is `nbtext filter`'s visible result: its earlier X-Nbtext-* fields
deleted (the whole fields headers.with_headers leaves out), the verdict's fields added at the
end of the header block (SMFIR_ADDHEADER, values folded with a bare LF as the protocol
wants). `quarantine` also holds spam (SMFIR_QUARANTINE, with the verdict as its reason),
`reject` answers spam with a 5xx reply instead. A message that cannot be judged (the
verdict `error`, a message over service.max_bytes: its rest is skipped, not held) is
accepted untouched, and the log says why.
"""

import socket
import struct
import time

from nbtext.choices import MILTER_ACTIONS
from nbtext.delivery.headers import filed_class, header_value
from nbtext.reading.imapurl import shown
from nbtext.reading.mail import VERDICT_PREFIX, without_verdicts

ACTIONS = MILTER_ACTIONS  # (nbtext.choices: the command line offers the same)

VERSION = 6  # the protocol version spoken (Postfix 2.6 and later, Sendmail 8.14 and later)

# Commands from the MTA (SMFIC_*)
OPTNEG, MACRO, CONNECT, HELO, MAIL, RCPT, DATA, HEADER, EOH, BODY, BODYEOB, ABORT, QUIT, QUIT_NC, UNKNOWN = (
    b"O", b"D", b"C", b"H", b"M", b"R", b"T", b"L", b"N", b"B", b"E", b"A", b"Q", b"K", b"U",
)  # fmt: skip
# Replies (SMFIR_*)
CONTINUE, ACCEPT, REPLYCODE, ADDHEADER, CHGHEADER, QUARANTINE, SKIP = b"c", b"a", b"y", b"h", b"m", b"q", b"s"

# What the milter may change (SMFIF_*): add header fields, change (delete) them, quarantine
ADDHDRS, CHGHDRS, QUARANTINE_MESSAGE = 0x01, 0x10, 0x20

# The steps the MTA may leave out, or send without waiting for a reply (SMFIP_*)
NOCONNECT, NOHELO, NOMAIL, NORCPT, NOEOH, NOUNKNOWN, NODATA = 0x01, 0x02, 0x04, 0x08, 0x40, 0x100, 0x200
NR_HDR, NR_CONN, NR_HELO, NR_MAIL, NR_RCPT, NR_DATA, NR_UNKN, NR_EOH = (
    0x80, 0x1000, 0x2000, 0x4000, 0x8000, 0x10000, 0x20000, 0x40000,
)  # fmt: skip
MTA_SKIPS = 0x400  # SMFIP_SKIP: the MTA takes SMFIR_SKIP (no more body chunks of this message)
HDR_LEADSPC = 0x100000  # header values as they are, their leading space kept
WANTED = NOCONNECT | NOHELO | NOMAIL | NORCPT | NOEOH | NOUNKNOWN | NODATA | NR_HDR | MTA_SKIPS | HDR_LEADSPC
# the reply the MTA waits for after each command, unless told it need not (NR_*; a step left out
# that comes all the same is answered as the MTA asks)
NO_REPLY = {CONNECT: NR_CONN, HELO: NR_HELO, MAIL: NR_MAIL, RCPT: NR_RCPT, DATA: NR_DATA, UNKNOWN: NR_UNKN}
NO_REPLY |= {HEADER: NR_HDR, EOH: NR_EOH}

# Bounds: a packet other than a header or a body chunk (option negotiation, macros, SMTP
# commands) is at most COMMAND_LIMIT bytes; a header or body chunk is read only while the message
# it builds stays within service.max_bytes, and is read and dropped past it (Postfix sends the body
# in chunks of 65535 bytes and a header up to its header_size_limit, 100 KB by default).
COMMAND_LIMIT = 65536
DROP_CHUNK = 65536
QUEUE_ID_SHOWN = 40  # characters of the MTA's queue ID in a log line
STOP_LOOK = 0.5  # seconds between looks at service.stopping while the MTA says nothing between messages


class ProtocolError(Exception):
    """What the MTA sent is no milter packet this side can answer: the connection is closed
    (the MTA then acts on its milter_default_action)."""


class _Closed(Exception):
    """The connection ended: EOF, a reset or the read timeout."""


class _Late(Exception):
    """A message begun was not sent whole within the connection's timeout."""


def answer(connection, service, client, action="tag"):
    """Answer the MTA on `connection` (a connected socket, its timeout set) until it quits or the
    connection ends; `action` is what spam gets: `tag` (header fields only), `quarantine` or
    `reject`. Never raises for anything the MTA sends: a protocol error is logged and closes."""
    if action not in ACTIONS:
        raise ValueError(f"milter action {action!r}: one of {', '.join(ACTIONS)}")
    session = _Session(connection, service, client, action)
    try:
        session.run()
    except _Closed:
        pass
    except _Late as e:
        service.log(client, f"milter: {e}, connection closed")
    except ProtocolError as e:
        service.log(client, f"milter protocol error, connection closed: {e}")
    except OSError as e:  # (a write to a closed connection)
        service.log(client, f"milter connection lost: {e.__class__.__name__}")


class _Session:
    def __init__(self, connection, service, client, action):
        self.connection, self.service, self.client, self.action = connection, service, client, action
        self.protocol = 0  # the SMFIP_ flags agreed (none before SMFIC_OPTNEG)
        # Without HDR_LEADSPC the MTA takes one space off a header value's start, and puts one
        # before a value the milter adds; with it, each value is as it stands in the message.
        self.eaten, self.given = b" ", b""
        self.new_message()

    def new_message(self):
        self.verdicts = []  # [(name, whether filter leaves it out)] of the fields named X-Nbtext-*
        self.parts = []  # the message's bytes so far: its header lines, the blank line, body chunks
        self.size = 0  # the message's size, also of what was dropped
        self.in_body = False  # (the headers ended: the blank line is held)
        self.queue_id = ""
        self.deadline = None  # when the message begun must be in whole (set at its first byte)

    def run(self):
        while True:
            command, length = self.packet_head()
            if command in (HEADER, BODY, BODYEOB) and length <= COMMAND_LIMIT + self.room():
                data = self.read(length)  # (within the message's bound: held)
            elif command in (HEADER, BODY):
                self.drop(length)  # (past it: read and dropped)
                data = None
            elif length > COMMAND_LIMIT:
                raise ProtocolError(f"a packet of {length} bytes (command {command!r})")
            else:
                data = self.read(length)
            if command == QUIT:
                return
            replies = self.replies(command, data)
            if replies:
                self.connection.sendall(replies)

    def room(self):
        """Bytes the message may still grow by and be judged."""
        return max(0, self.service.max_bytes - self.size)

    def replies(self, command, data):
        """The packets that answer `command` with its `data` (None: dropped, too big), b"" for none."""
        if command == OPTNEG:
            return self.negotiated(data)
        if command == MACRO:
            self.macros(data)
            return b""
        if command in (ABORT, QUIT_NC):  # (the message, or the SMTP session, ends: no reply)
            self.new_message()
            return b""
        if command == HEADER:
            self.header(data)
        elif command == BODY:
            self.body(data)
            if self.size > self.service.max_bytes and self.protocol & MTA_SKIPS:
                return packet(SKIP)  # (the rest of the body is not judged: the MTA need not send it)
        elif command == BODYEOB:
            if data:  # (Sendmail's libmilter takes a last chunk with it; Postfix sends it alone)
                self.body(data)
            try:
                return self.judged()
            finally:
                self.new_message()
        elif command == EOH:
            self.end_headers()
        elif command not in NO_REPLY:
            raise ProtocolError(f"unknown command {command!r}")
        return b"" if self.protocol & NO_REPLY.get(command, 0) else packet(CONTINUE)

    def negotiated(self, data):
        """SMFIC_OPTNEG: the version, what the milter may do and the steps it reads; the reply
        asks for what it needs of what the MTA offers."""
        if len(data) < 12:
            raise ProtocolError("option negotiation shorter than 12 bytes")
        version, offered_actions, offered_protocol = struct.unpack("!III", data[:12])
        if version < 2:
            raise ProtocolError(f"milter protocol version {version}")
        needed = ADDHDRS | CHGHDRS | (QUARANTINE_MESSAGE if self.action == "quarantine" else 0)
        self.protocol = WANTED & offered_protocol
        self.eaten, self.given = (b"", b" ") if self.protocol & HDR_LEADSPC else (b" ", b"")
        return packet(OPTNEG, struct.pack("!III", min(version, VERSION), needed & offered_actions, self.protocol))

    def macros(self, data):
        """SMFIC_MACRO: only the queue ID (`i`) is kept, for the log."""
        items = data[1:].split(b"\0")
        for name, value in zip(items[::2], items[1::2]):
            if name in (b"i", b"{i}"):
                self.queue_id = shown(value[:QUEUE_ID_SHOWN].decode("ascii", "replace"))

    def header(self, data):
        if data is not None and not self.in_body:
            name, sep, rest = data.partition(b"\0")
            value, sep2, _ = rest.partition(b"\0")
            if not sep or not sep2:
                raise ProtocolError("a header without its name and value")
            # (a folded value's lines are parted by LF, or CR LF: CR LF in the message)
            line = name + b":" + self.eaten + _crlf(value) + b"\r\n"
            if name.lower().startswith(VERDICT_PREFIX):  # (reading.mail.without_verdicts, asked of the field alone)
                self.verdicts.append((name, not without_verdicts(line, 0, len(line))))
            self.hold(line)
        else:
            self.size += self.service.max_bytes + 1  # (too big, or a header after the body: not judged)

    def end_headers(self):
        if not self.in_body:
            self.in_body = True
            self.hold(b"\r\n")

    def body(self, data):
        self.end_headers()
        if data is None:
            self.size += self.service.max_bytes + 1
        else:
            self.hold(data)

    def hold(self, data):
        self.size += len(data)
        if self.size <= self.service.max_bytes:
            self.parts.append(data)
        else:
            self.parts, self.verdicts = [], []

    def judged(self):
        """The answer to SMFIC_BODYEOB: the verdict's changes and the final reply, whole."""
        said = f"milter {self.action}" + (f" {self.queue_id}" if self.queue_id else "")
        self.end_headers()
        if self.size > self.service.max_bytes:
            self.service.log(self.client, f"{said}: over {self.service.max_bytes} bytes, accepted untouched")
            return packet(ACCEPT)
        verdict = self.service.judge(b"".join(self.parts))
        if verdict.label == "error":
            self.service.log(self.client, f"{said}: not judged, accepted untouched", verdict)
            return packet(ACCEPT)
        spam = verdict.label == filed_class(self.service.classes)
        self.service.log(self.client, said, verdict)
        if spam and self.action == "reject":
            return packet(REPLYCODE, f"550 5.7.1 {rejection(verdict)}".encode("ascii") + b"\0")
        replies = self.deletions() + b"".join(
            # (with HDR_LEADSPC the value's leading space is the milter's to give, else the MTA's)
            packet(ADDHEADER, name.encode("ascii") + b"\0" + self.given + header_value(value) + b"\0")
            for name, value in verdict.fields
        )
        if spam and self.action == "quarantine":
            replies += packet(QUARANTINE, rejection(verdict).encode("ascii") + b"\0")
        return replies + packet(CONTINUE)

    def deletions(self):
        """SMFIR_CHGHEADER with an empty value for each earlier X-Nbtext-* field that
        headers.with_headers leaves out, by its index among the fields of its name (any case),
        the last first: a deleted field no longer counts."""
        count, deleted = {}, []
        for name, left_out in self.verdicts:
            lowered = name.lower()
            count[lowered] = count.get(lowered, 0) + 1
            if left_out:
                deleted.append((count[lowered], name))
        return b"".join(packet(CHGHEADER, struct.pack("!I", index) + name + b"\0\0") for index, name in deleted[::-1])

    def packet_head(self):
        """(the command byte, the data's length) of the next packet."""
        length = struct.unpack("!I", self.read(4, start=True))[0]
        if length == 0:
            raise ProtocolError("a packet of length 0")
        return self.read(1), length - 1

    def read(self, n, start=False):
        """Exactly n bytes; EOF or a timeout before a packet starts ends the connection."""
        chunks, got = [], 0
        while got < n:
            chunk = self._recv(min(n - got, DROP_CHUNK), start and got == 0)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def drop(self, n):
        while n > 0:
            n -= len(self._recv(min(n, DROP_CHUNK), False))

    def _recv(self, n, at_start):
        try:
            if at_start and self.between_messages():
                chunk = self._recv_unless_stopping(n)
            else:
                chunk = self._recv_within_the_message(n)
        except (TimeoutError, socket.timeout, ConnectionError):
            raise _Closed() from None
        if not chunk:
            if at_start:
                raise _Closed()
            raise ProtocolError("the connection ended inside a packet")
        return chunk

    def between_messages(self):
        """Whether no message has begun since the last was answered (nothing of it to lose)."""
        return not self.parts and not self.size and not self.in_body and not self.queue_id

    def _recv_within_the_message(self, n):
        """recv while a message is being sent: all of it within the connection's timeout of its
        first byte (an MTA that sends a byte just within each read's timeout would hold its
        connection, one of --max-connections, for ever; Postfix's own milter_content_timeout
        is 300 s)."""
        timeout = self.connection.gettimeout()
        if timeout is None:
            return self.connection.recv(n)
        if self.deadline is None:
            self.deadline = time.monotonic() + timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Late(f"the message was not sent whole within {timeout:g} s")
        self.connection.settimeout(left)
        try:
            return self.connection.recv(n)
        except (TimeoutError, socket.timeout):
            raise _Late(f"the message was not sent whole within {timeout:g} s") from None
        finally:
            self.connection.settimeout(timeout)

    def _recv_unless_stopping(self, n):
        """recv, looking every STOP_LOOK seconds whether the server stops (service.stopping):
        then the session ends here, between messages, where the MTA loses nothing; it waits
        for its next message up to 360 s (server.MILTER_IDLE), and a stop waited as long."""
        timeout = self.connection.gettimeout()
        end = None if timeout is None else time.monotonic() + timeout
        try:
            while not getattr(self.service, "stopping", False):
                left = STOP_LOOK if end is None else min(STOP_LOOK, end - time.monotonic())
                if left <= 0:
                    raise TimeoutError
                self.connection.settimeout(left)
                try:
                    return self.connection.recv(n)
                except (TimeoutError, socket.timeout):
                    continue
            raise _Closed()
        finally:
            self.connection.settimeout(timeout)


def packet(command, data=b""):
    return struct.pack("!I", len(data) + 1) + command + data


def rejection(verdict):
    """The words of a reject reply or a quarantine reason: the verdict's fields, printable ASCII."""
    text = "nbtext: " + "; ".join(f"{name[len('X-Nbtext-') :].lower()} {value}" for name, value in verdict.fields[:3])
    return "".join(c if " " <= c <= "~" and c != "%" else "?" for c in text)[:200]


def _crlf(value):
    return value.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
