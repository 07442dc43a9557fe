"""mbox files: which line starts a message, and the messages of an mbox stream.

The one rule every reader applies (a file named on the command line, a file found in a
folder, stdin, a --files-from list, a cluster's workers), and by which a message read
alone leaves out its envelope line (nbtext.reading.mail.strip_envelope):

A line is an envelope line, and starts a message, when
- it is the first line, or the line before it is empty (LF or CRLF), and
- it starts with `From `, and its first ENVELOPE_SPAN bytes hold a date with a time
  after a space or a comma: asctime (`Mon Jun 24 17:54:30 2002`), RFC 2822 (`Mon, 24
  Jun 2002 17:54:30 +0000`) or numeric (`2002-06-24 17:54:30`, `2002-06-24T17:54`,
  `24/06/2002 17:54`), month names in any case. Whatever comes before the date is the
  sender: an address, `-`, words with spaces, or nothing (`From  Mon Jun 24 ...`).

As mutt and Dovecot read an mbox, a `From ` line without a date is body text, at the
start of a file too ("From tomorrow on..." is a note, not an mbox); mboxo and mboxrd
writers quote a body's `From ` lines (`>From `), so what is left unquoted is rare.

mboxcl2 (Solaris, old Dovecot, mutt's `mbox_type`) quotes nothing and gives each body's
length in a `Content-Length:` header instead. The first such header of a message's header
block is honoured when its value (at most CONTENT_LENGTH_LIMIT) ends the body exactly where
the next message or the file starts: at the end of the file, at an envelope line, or at
an empty line followed by an envelope line or the end. Then the `From ` lines in that body
start nothing. Any other Content-Length (wrong, absurd, pointing into a line) is ignored,
and the messages are those the rule above finds: a wrong header never merges or loses a
message that the envelope lines would give.

`messages` reads a stream once, line by line, in time linear in its length. To honour a
Content-Length it holds the lines from the first envelope line inside the body it measures
to that body's end (at most CONTENT_LENGTH_LIMIT bytes); otherwise only the message being
read, up to `max_bytes`.
"""

import re
from heapq import heappop, heappush

ENVELOPE_SPAN = 1024  # an envelope line's date is looked for in its first this many bytes
CONTENT_LENGTH_LIMIT = 1 << 26  # a Content-Length above this is not honoured (the bytes held to check it)

_MONTH = rb"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
# Each branch is of bounded length and starts at a space or comma: a search costs the
# line's length once.
_ENVELOPE_DATE = re.compile(
    rb"[ ,](?:" + _MONTH + rb" {1,2}\d{1,2}"  # asctime: Jun 24 (after the weekday)
    rb"|\d{1,2} " + _MONTH + rb" \d{2,4}"  # RFC 2822: 24 Jun 2002
    rb"|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"  # numeric
    rb")[ T]{1,2}\d{1,2}:\d{2}(?!\d)",
    re.IGNORECASE,
)
_BLANK = (b"\n", b"\r\n")
_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*(\d{1,12})[ \t]*\r?\n?\Z", re.IGNORECASE)


def is_separator(line, after_blank=True):
    """Whether `line` (its first bytes will do) is an envelope line that starts a message,
    the line before it being empty or none (`after_blank`): the rule of the module docstring."""
    return after_blank and line.startswith(b"From ") and _ENVELOPE_DATE.search(line, 4, ENVELOPE_SPAN) is not None


def starts_mbox(data):
    """Whether bytes (a file's first ones, or a message) start with an envelope line."""
    return is_separator(data[:ENVELOPE_SPAN])


def _content_length(line):
    """The value of a `Content-Length:` header line, or None (not one, or above the limit)."""
    match = _CONTENT_LENGTH.match(line)
    if match is None or int(match[1]) > CONTENT_LENGTH_LIMIT:
        return None
    return int(match[1])


class _Start:
    """An envelope line found at `offset`: the message it would start. `end`: where its
    Content-Length says its body ends (None: it has none, or its header block is not
    over yet); `honoured`: whether that length ends at the next message or the file's end
    (None while unknown)."""

    __slots__ = ("offset", "end", "honoured", "length")

    def __init__(self, offset):
        self.offset, self.end, self.honoured, self.length = offset, None, None, None

    def ends_before(self, start):
        """Whether the envelope line `start` ends this message (or lies in its body)."""
        return self.end is None or self.honoured is False or (self.honoured is True and start.offset >= self.end)


def messages(pieces, max_bytes):
    """The messages of an mbox, as bytes (each without its envelope line, from the line
    after it to the next envelope line; the first max_bytes bytes and at most one piece
    more, for the caller to cut), from the (piece, whether it starts a line) of
    nbtext.reading.documents.structural_lines. The first line should be an envelope line;
    lines before one would be a message of their own."""
    current, parts, size = _Start(0), [], 0  # the message being read, its pieces so far and their size
    held = []  # (piece, _Start or None) from an envelope line inside a body a pending Content-Length measures
    claims, after_blank_at = [], {}  # heap of (body end, n, _Start); {line offset: [_Start]} of ends at an empty line
    header_of, offset, previous_blank, n = None, 0, True, 0  # header_of: the _Start whose header block is read

    def take(piece):
        nonlocal size
        if size <= max_bytes:  # past the limit, the rest of the message is left out
            parts.append(piece)
            size += len(piece)

    def release():
        """Give the held pieces to the messages they belong to, now that `current`'s
        Content-Length is decided; yields the messages that end among them."""
        nonlocal current, parts, size, held
        pending, held = held, []
        for i, (piece, start) in enumerate(pending):
            if start is None or not current.ends_before(start):
                take(piece)
                continue
            yield b"".join(parts)
            current, parts, size = start, [], 0
            if current.honoured is None and current.end is not None:  # decided later: hold the rest again
                rest = pending[i + 1:]
                first = next((j for j, (_, s) in enumerate(rest) if s is not None), len(rest))
                for later, _ in rest[:first]:
                    take(later)
                held = rest[first:]
                return

    for piece, starts in pieces:
        start = None
        if starts:
            blank = piece in _BLANK
            envelope = previous_blank and is_separator(piece)
            for waiting in after_blank_at.pop(offset, ()):  # a body's end at an empty line: what follows it
                waiting.honoured = envelope
            while claims and claims[0][0] <= offset:
                end, _, claimed = heappop(claims)
                if end < offset:  # inside a line
                    claimed.honoured = False
                elif blank:
                    after_blank_at.setdefault(offset + len(piece), []).append(claimed)
                else:
                    claimed.honoured = envelope
            if held and current.honoured is not None:
                yield from release()
            if envelope:
                start = _Start(offset)
                header_of = start
            elif header_of is not None:
                if blank:  # the header block's end: the body starts after this line
                    if header_of.length is not None:
                        header_of.end = offset + len(piece) + header_of.length
                        n += 1
                        heappush(claims, (header_of.end, n, header_of))
                    header_of = None
                elif header_of.length is None and piece[:1] in b"Cc":
                    header_of.length = _content_length(piece)
            previous_blank = blank
        else:
            previous_blank = False  # a line longer than one piece is not empty
        offset += len(piece)
        if held:
            held.append((piece, start))
        elif start is None:
            take(piece)
        elif current.end is not None and current.honoured is None:
            held.append((piece, start))  # in a body a Content-Length measures: is it one?
        elif current.ends_before(start):
            if start.offset > 0:
                yield b"".join(parts)
            current, parts, size = start, [], 0
        else:
            take(piece)
    # the end: a body that ends here (or at an empty last line) ends where it says
    for end, _, claimed in claims:
        claimed.honoured = end == offset
    for line_offset, waiting in after_blank_at.items():
        for claimed in waiting:
            claimed.honoured = line_offset == offset
    yield from release()  # (every length is decided now: nothing is held again)
    yield b"".join(parts)
