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

mboxcl2 quotes nothing and gives each body's length in a `Content-Length:` header
instead. The first such header of a message's header block is honoured when its value (at
most CONTENT_LENGTH_LIMIT) ends the body, counted from the empty line that ends the header
block, exactly where the next message or the file starts: at the end of the file, at an
envelope line, or at an empty line followed by an envelope line or the end (as mutt and
Dovecot check it). Then the `From ` lines in that body start nothing. Any other
Content-Length (too short, too long, pointing into a line, absurd) is ignored, and the
messages are those the rule above finds: a wrong header changes nothing, unless it ends
exactly at a later message's envelope line, and is then taken as right, as mutt and
Dovecot take it.

`messages` reads a stream once, line by line, in time linear in its length. To honour a
Content-Length it holds the lines from the first envelope line inside the body it measures
to that body's end (at most CONTENT_LENGTH_LIMIT bytes); otherwise only the message being
read, up to `max_bytes`.
"""

import re
from collections import deque
from functools import lru_cache

ENVELOPE_SPAN = 1024  # an envelope line's date is looked for in its first this many bytes (documents.MBOX_SNIFF: more)
CONTENT_LENGTH_LIMIT = 1 << 26  # a Content-Length above this is not honoured (the bytes held to check it)

_MONTH = rb"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"


@lru_cache(maxsize=None)
def _envelope_date():
    """The date of an envelope line: compiled at its first use, not at import (a message that
    starts with no `From ` line, as filter's and predict's one message mostly do, never needs it).
    Each branch is of bounded length and starts at a space or comma: a search costs the
    line's length once."""
    return re.compile(
        rb"[ ,](?:" + _MONTH + rb" {1,2}\d{1,2}"  # asctime: Jun 24 (after the weekday)
        rb"|\d{1,2} " + _MONTH + rb" \d{2,4}"  # RFC 2822: 24 Jun 2002
        rb"|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"  # numeric
        rb")[ T]{1,2}\d{1,2}:\d{2}(?!\d)",
        re.IGNORECASE,
    )


_BLANK = (b"\n", b"\r\n")
_CONTENT_LENGTH_VALUE = re.compile(rb"[ \t]*(\d{1,12})[ \t]*\r?\n?\Z")  # after `Content-Length:`, in any case


def is_separator(line, after_blank=True):
    """Whether `line` (its first bytes will do) is an envelope line that starts a message,
    the line before it being empty or none (`after_blank`): the rule of the module docstring."""
    return after_blank and line.startswith(b"From ") and _envelope_date().search(line, 4, ENVELOPE_SPAN) is not None


def starts_mbox(data):
    """Whether bytes (a file's first ones, or a message) start with an envelope line."""
    return is_separator(data[:ENVELOPE_SPAN])


def _content_length(line):
    """The value of a `Content-Length:` header line; -1 for one that is no number or above
    the limit (never honoured), None for another line."""
    if line[:15].lower() != b"content-length:":
        return None
    match = _CONTENT_LENGTH_VALUE.match(line, 15)
    return int(match[1]) if match is not None and int(match[1]) <= CONTENT_LENGTH_LIMIT else -1


class _Start:
    """An envelope line found at `offset`: the message it would start. `end`: where its
    Content-Length says its body ends (None: it has none, or its header block is not
    over yet); `honoured`: whether that length ends at the next message or the file's end
    (None while unknown)."""

    __slots__ = ("offset", "end", "honoured")

    def __init__(self, offset):
        self.offset, self.end, self.honoured = offset, None, None

    def ends_before(self, start):
        """Whether the envelope line `start` ends this message (or lies in its body)."""
        return self.end is None or self.honoured is False or (self.honoured is True and start.offset >= self.end)


def messages(pieces, max_bytes):
    """The messages of an mbox, as bytes (each without its envelope line, from the line
    after it to the next envelope line; the first max_bytes bytes and at most one piece
    more, for the caller to cut), from the (piece, whether it starts a line) of
    nbtext.reading.documents.structural_lines. The first line should be an envelope line;
    lines before one would be a message of their own."""
    from heapq import heappop, heappush  # (here: a message read alone never needs it)

    # the message being read, its bytes so far (one buffer: a list of its lines took ~40 bytes a line more) and their size
    current, parts, size = _Start(0), bytearray(), 0
    held = deque()  # (piece, _Start or None) from an envelope line inside a body a pending Content-Length measures
    # Bodies' ends to check, a heap of (line offset, n, _Start, whether an empty line ended the body
    # there and the line at that offset says whether an envelope line follows it)
    claims, n = [], 0
    header_of, length = None, None  # the _Start whose header block is being read, and its Content-Length
    offset, previous_blank = 0, True
    for piece, starts in pieces:
        if not (previous_blank or claims or held) and header_of is None:  # most lines: a body's, nothing to check
            previous_blank = starts and piece in _BLANK
            offset += len(piece)
            if size <= max_bytes:
                parts += piece
                size += len(piece)
            continue
        start = None
        if starts:
            blank = piece in _BLANK
            if previous_blank and piece.startswith(b"From ") and is_separator(piece):
                start = _Start(offset)
            while claims and claims[0][0] <= offset:  # a body's end is here, or was inside a line
                end, _, claimed, after_blank = heappop(claims)
                if end < offset:
                    claimed.honoured = False
                elif blank and not after_blank:  # an empty line: the next line says
                    n += 1
                    heappush(claims, (offset + len(piece), n, claimed, True))
                else:
                    claimed.honoured = start is not None
            if held and current.honoured is not None:
                current, parts, size = yield from _release(held, current, parts, size, max_bytes)
            if header_of is not None:  # (no envelope line can start inside a header block)
                if blank:  # the header block's end: the body starts after this line
                    if length is not None and length >= 0:
                        header_of.end = offset + len(piece) + length
                        n += 1
                        heappush(claims, (header_of.end, n, header_of, False))
                    header_of = None
                elif length is None and piece[0] in b"Cc":
                    length = _content_length(piece)
            previous_blank = blank
        else:
            previous_blank = False  # a line longer than one piece is not empty
        offset += len(piece)
        if start is None:
            if held:  # lines of no envelope, held in one buffer after the last held envelope line (not one a line)
                if held[-1][1] is None:
                    held[-1][0].extend(piece)
                else:
                    held.append((bytearray(piece), None))
            elif size <= max_bytes:  # (take, inline: most lines come here)
                parts += piece
                size += len(piece)
            continue
        header_of, length = start, None
        if held or (current.end is not None and current.honoured is None):
            held.append((piece, start))  # in a body a Content-Length measures: is it one? (decided at its end)
        elif current.ends_before(start):
            if start.offset > 0:
                yield bytes(parts)
            current, parts, size = start, bytearray(), 0
        elif size <= max_bytes:
            parts += piece
            size += len(piece)
    for end, _, claimed, _ in claims:  # the end: a body that ends here (or at an empty last line) ends where it says
        claimed.honoured = end == offset
    current, parts, size = yield from _release(held, current, parts, size, max_bytes)
    yield bytes(parts)  # (every length was decided: nothing is held again)


def _release(held, current, parts, size, max_bytes):
    """Give the `held` pieces (a deque of (piece, _Start or None), emptied from the left) to
    the messages they belong to, now that the Content-Length of `current` (whose `parts` so
    far hold `size` bytes) is decided: yields the messages that end among them, and returns
    (current, parts, size) after them. It stops at an envelope line inside a body whose
    length is still undecided, leaving the rest held: each piece leaves the deque once."""
    while held:
        if held[0][1] is not None and current.end is not None and current.honoured is None:
            break  # decided later, at that body's end
        piece, start = held.popleft()
        if start is not None and current.ends_before(start):
            yield bytes(parts)
            current, parts, size = start, bytearray(), 0
        elif size <= max_bytes:  # past the limit, the rest of the message is left out
            piece = piece[: max_bytes + 1 - size]  # (a held buffer may be many lines)
            parts += piece
            size += len(piece)
    return current, parts, size
