"""E-mail (RFC 822 / MIME) to the tokens a classifier should see.

- the header lines named by `headers` become tokens prefixed with the header's name
  (`subject:free`), RFC 2047 encoded words decoded;
- body parts are decoded (base64, quoted-printable, then the declared charset; an unknown
  or lying charset falls back to replacement characters, never an error);
- text/html becomes its visible text (comments, script and style dropped, character
  references decoded), and the hosts of its links and images become `url:HOST` tokens,
  as do the hosts of URLs written in plain text;
- attachments contribute their content type and file name, never their bytes;
- multipart parts and attached messages (message/rfc822) are walked recursively.

This is a small MIME reader of its own, on bytes and C-level regular expressions,
because the standard library's email package (policy=default) and html.parser read
mail several times slower, longer than the rest of a training takes (bench/mail_reader.py
times both; docs/performance.md, figures behind the code). tests/mail_reference.py is
that standard-library reading; the tests check the two agree on real mail.
"""

import binascii
import re
from functools import lru_cache

from nbtext.labels import without_controls
from nbtext.reading.mbox import starts_mbox

MAX_DEPTH = 20  # nested multiparts deeper than this are read as plain text

# No pattern here repeats a group without bound over what a message holds: sre keeps a
# backtracking entry for each match of a repeated group until the whole match ends, so such a
# pattern takes memory many times the bytes it walks (a header field of continuation lines
# took 100 bytes a byte, a base64 body of blank lines 340). These repeat single characters, or
# are searched again from where the last match ended: memory of a match's own size, time
# linear in the bytes (tests/test_hostile_patterns.py; docs/hostile-input.md has the figures).
_HEADER_LINE = re.compile(rb"[!-9;-~]+:")
# A header line: its name, its value's first line, and the line end and space or tab of a
# continuation line when one follows (then the value goes on to _FIELD_END)
_FIELD_LINE = re.compile(rb"^([!-9;-~]+)[ \t]*:[ \t]*([^\n]*)(\n[ \t])?", re.M)
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_PARAM_START = re.compile(r";\s*([\w.\-]+\*?)\s*=\s*")  # a parameter's name, to its value
# A quoted value's characters and escapes, at most QUOTED_RUN escapes at a time: the memory of
# that many repetitions of the group, whatever the value's length
QUOTED_RUN = 1024
_QUOTED_RUN = re.compile(r'[^"\\]*(?:\\.[^"\\]*){0,%d}' % QUOTED_RUN)
_UNQUOTED_VALUE = re.compile(r"[^;\s]*")
_URL = re.compile(r"(?i)\b(?:https?|ftp)://([^\s/?#<>\"'\]\[)(]+)")
# A base64 line: spaces or tabs around at most one run of base64 characters. Each line is
# matched one way only ([ \t]* cannot trade characters with another [ \t]*), so a line that
# is not base64 costs its length once, never its square.
_NOT_BASE64_LINE = re.compile(rb"^(?![ \t]*(?:[A-Za-z0-9+/=]+[ \t]*)?\r?\n)", re.M)
_BASE64_LAST_LINE = re.compile(rb"[ \t]*[A-Za-z0-9+/=]+[ \t]*$")  # one without a line end


# Header names that mark a message (mail or news); "Note: ..." or "Reminder: ..." do not.
MAIL_HEADERS = frozenset(
    b"from to cc subject date received return-path message-id mime-version content-type "
    b"delivered-to reply-to sender newsgroups path x-mailer in-reply-to references "
    b"organization lines".split()
)


def looks_like_mail(data):
    """True for bytes that start like a message: an mbox envelope line (the rule of
    nbtext.reading.mbox: `From SENDER DATE`), or header lines.

    Header lines: the first line is `Name: value`; the second is another header line, a
    continuation, or the blank line that ends the header block (with a body after it);
    and one of the block's first header names is a mail or news header (MAIL_HEADERS).
    """
    if data.startswith(b"From "):
        return starts_mbox(data)
    lines = data[:2048].split(b"\n", 2)
    if len(lines) < 2 or not _HEADER_LINE.match(lines[0]):
        return False
    second = lines[1]
    if not second.strip():
        if len(lines) < 3:
            return False  # one "Name: value" line and nothing after it: text
    elif not (_HEADER_LINE.match(second) or second[:1] in (b" ", b"\t")):
        return False
    head = data[:2048].split(b"\n\n", 1)[0]
    # [1]: the name; stops at the first
    return any(field[1].lower() in MAIL_HEADERS for field in _FIELD_LINE.finditer(head))


def strip_envelope(data):
    """The message without a leading mbox envelope line (it is not a header): the line an
    mbox reader leaves out, by the same rule (nbtext.reading.mbox)."""
    if starts_mbox(data):
        end = data.find(b"\n")
        return b"" if end < 0 else data[end + 1 :]
    return data


_QUOTED_FROM = re.compile(rb"^>+(From )", re.MULTILINE)


def unquoted_from(data):
    """The message with every `>` before a line's `From ` left out: an mbox writer adds one
    to each such line (mboxrd; mboxo only to `From ` itself), so that no body line reads as
    an envelope, and without them the message is the same whether it was stored in an
    mbox or on its own. What a message is, for the journal."""
    if b">From " not in data:  # (in every such line; a longer needle is found faster than b"\n>")
        return data
    return _QUOTED_FROM.sub(rb"\1", data)


def lf_line_ends(data):
    """The message with each CR LF as LF: one message whichever line ends it was stored or
    sent with (SMTP, IMAP clients and Windows tools write CR LF; Maildir and mbox files, LF).
    What its key and its tokens are of. A lone CR stays: no reader of nbtext ends a line
    there, so a message whose lines end in CR alone is no copy of one with LF line ends
    (it reads as one line), and taking it as one would forget another message's tokens."""
    # (a byte is found by memchr, many times faster than replace's search: most have no CR)
    return data.replace(b"\r\n", b"\n") if b"\r" in data else data


# --- The message as sent: what nbtext reads and keys -------------------------------------
# Lines end at a line feed alone here, as filter reads them (nbtext.delivery.headers): a carriage
# return is a byte of its line. These patterns repeat no group: a repeated group keeps a
# backtracking entry for each of its matches (a pattern of a field and its continuation lines,
# repeated, took 35 bytes of memory a byte of a header block of short lines); each of these
# scans a line once.
_NOT_IN_HEADER = re.compile(rb"\n(?![ \t]|[!-9;-~]+:)")  # a line end, then a line neither header nor continuation
_FIELD_END = re.compile(rb"\n(?![ \t])")  # a line end, then no continuation line
_NAME_BEFORE_COLON = re.compile(rb"[!-9;-~]+(?=:)")
_BARE_CR = re.compile(rb"\r[^\r\n]")  # a carriage return not in the run just before a line feed
VERDICT_PREFIX = b"x-nbtext-"  # nbtext's own fields (X-Nbtext-Class, -Probability, -Evidence), in any case
# The fields a local delivery puts on top of a message as it stores it: RFC 5321's Return-Path
# (every final delivery: Dovecot's LMTP, Postfix's local and virtual, Exim), Delivered-To
# (Dovecot's LMTP, Postfix, qmail), X-Original-To (Postfix), Envelope-To and Delivery-Date
# (Exim's appendfile and pipe transports), and a Received of the delivery hop itself (LOCAL_HOP).
DELIVERY_FIELDS = frozenset(b"return-path delivered-to x-original-to envelope-to delivery-date".split())
# The envelope an MTA's content scanning writes on top of the copy it scans (Exim's spam
# condition sends spamd its envelope line, X-Envelope-From and X-Envelope-To; the copy it
# delivers has none): this delivery's, never the sender's.
SCANNED_ENVELOPE_FIELDS = frozenset(b"x-envelope-from x-envelope-to".split())
# A Received of a local delivery: by LMTP (RFC 3848's LMTP, LMTPA, LMTPS, LMTPSA: Dovecot's
# and Cyrus's LMTP servers) or Exim's `with local` (a message a local program handed over).
LOCAL_HOP = re.compile(rb"(?i)\bwith\s+(?:lmtps?a?|local)(?![\w.-])")


def header_block(message):
    """(start, end) of `message`'s header block's fields ended by a line feed, or None when
    it has no header block. The block is the run of header fields (a header line and its
    continuation lines) from the start (after an mbox envelope line, by the rule every reader
    keeps: nbtext.reading.mbox); it ends at the first line that is neither a header line nor a
    continuation (a blank line, or a body line right after the headers, as Enron's messages
    have) or at the end of the message. `end` is after every whole field, before a last one
    with no line feed (a message of headers alone, whose bytes filter's verdict, put at `end`,
    must not change)."""
    start = len(message) - len(strip_envelope(message))
    if not _HEADER_LINE.match(message, start):
        return None
    after = _NOT_IN_HEADER.search(message, start)
    if after is not None:
        return start, after.end()
    if message.endswith(b"\n"):
        return start, len(message)
    # the last line has no line feed: its field (from the header line above its continuations) is not whole
    field = max(message.rfind(b"\n", start) + 1, start)
    while field > start and message[field] in b" \t":
        field = max(message.rfind(b"\n", start, field - 1) + 1, start)
    return start, field


def header_fields(data, start, end):
    """(name, where the field starts, where its value starts, where it ends) of each field of
    the header block data[start:end] (header_block's), in order."""
    position = start
    while position < end:
        name = _NAME_BEFORE_COLON.match(data, position, end)
        if name is None:  # (not a header block's)
            return
        field_end = _FIELD_END.search(data, name.end(), end)
        field_end = end if field_end is None else field_end.end()
        yield name[0], position, name.end() + 1, field_end
        position = field_end


def without_verdicts(data, start, end):
    """The header block data[start:end] without nbtext's own verdict fields (VERDICT_PREFIX),
    each one whole, every line of it ended by a line feed with no carriage return but just
    before it. (A bare one, `X-Nbtext-Class: ham\\rSubject: hi`, is a line end to readers that
    break at CR: that field is left as it is rather than lose what they read as another
    header.) filter takes an old verdict out so, and every reader too."""
    pieces, kept_from = [], start
    for name, field_start, _, field_end in header_fields(data, start, end):
        if (
            name[: len(VERDICT_PREFIX)].lower() == VERDICT_PREFIX
            and _BARE_CR.search(data, field_start, field_end) is None
        ):
            pieces.append(data[kept_from:field_start])
            kept_from = field_end
    pieces.append(data[kept_from:end])
    return b"".join(pieces)


def local_delivery_end(data, start, end):
    """Where the local delivery's trace ends in the header block data[start:end] (start when
    there is none): the fields on top down to the last Received of a local-delivery hop
    (LOCAL_HOP), when every field above it is one of DELIVERY_FIELDS or such a Received.

    That Received is what shows the fields above it are this mailbox's delivery: Dovecot's
    LMTP puts `Return-Path`, `Delivered-To` and `Received: ... by HOST with LMTP ... for <user>;
    DATE` on top. Without one nothing is taken: a Return-Path or Delivered-To alone on top
    may be the sender's evidence (Return-Path is the envelope sender), and the corpora's
    messages, stored by Postfix's and Exim's local deliveries (Return-Path with Delivered-To or
    Delivery-Date on top, no such Received), read as they did (docs/mail.md has the figures).
    The SCANNED_ENVELOPE_FIELDS first on top are this delivery's whatever follows them."""
    trace_end = start
    scanned_envelope = True  # (so far every field is a content scanner's envelope)
    for name, _, value_start, field_end in header_fields(data, start, end):
        name = name.lower()
        if scanned_envelope and name in SCANNED_ENVELOPE_FIELDS:
            trace_end = field_end
            continue
        scanned_envelope = False
        if name == b"received" and LOCAL_HOP.search(data, value_start, field_end) is not None:
            trace_end = field_end
        elif name not in DELIVERY_FIELDS:
            break
    return trace_end


def text_bytes(document):
    """A document as bytes: a str's UTF-8, a lone surrogate in it (the Python API's text may
    hold one; the command line's never does) as its own three bytes (surrogatepass), so that
    no text fails and its key, tokens and character n-grams are of the same bytes."""
    return document.encode("utf-8", "surrogatepass") if isinstance(document, str) else document


def message_as_sent(data):
    """The bytes of a message that nbtext reads (its tokens: nbtext.reading.tokenize) and knows
    it by (the journal's key: nbtext.reading.documents.document_key): its CR LFs as LF
    (lf_line_ends), and its header block without
    - the local delivery's trace on top (local_delivery_end): the mailbox's own address, host
      and the date it was stored, tokens every message of that mailbox shares, which a model
      learning from the mailbox took for evidence of the class it learned them under
      (SpamAssassin skips its trusted hops likewise). Below it nothing is taken out: a
      Received further down is the record of a hop the sender's mail passed;
    - nbtext's own verdict (without_verdicts, wherever in the block, as filter replaces it);
    a block a verdict leaves empty goes with the blank line after it (filter's header block
    in front of text); one a delivery's trace alone leaves empty keeps it (the message sent
    began with a blank line: an empty header block). An mbox envelope line stays as it is.

    So the message filter judged at delivery, its copy the delivery stored, the copy a client
    fetches over IMAP and the file it was sent from are one message, with the same tokens and
    the same key.

    They are given as a SentMessage, which this gives back as it is: a reader that makes them
    once (nbtext.reading.documents.read_once) hands them to the tokenizer, the key and
    reads_as_mail, and none reads the message again."""
    if isinstance(data, SentMessage):
        return data
    return SentMessage(_as_sent(data))


class SentMessage(bytes):
    """Bytes that message_as_sent made: the message as sent, never made again of itself."""

    __slots__ = ()


def _as_sent(data):
    """message_as_sent's bytes, as plain bytes (`data` itself when nothing is taken out)."""
    data = lf_line_ends(data)
    block = header_block(data)
    if block is None:
        return data
    start, end = block
    kept_from = local_delivery_end(data, start, end)
    verdict = VERDICT_PREFIX in data[kept_from:end].lower()  # (a lowered copy's find: faster than reading each field)
    if verdict:
        head = without_verdicts(data, kept_from, end)
    elif kept_from == start:
        return data
    else:
        head = data[kept_from:end]
    rest = data[end:]
    if not head and verdict and rest.startswith(b"\n"):  # (filter's block in front of text, and its blank line)
        rest = rest[1:]
    return data[:start] + head + rest


def split_message(data):
    """({lowercase name: [raw values]}, body) of a message or a MIME part."""
    if not _HEADER_LINE.match(data):
        return {}, data  # no header block: all body (a part may start with its blank line)
    blank = _BLANK_LINE.search(data)
    head, body = (data, b"") if blank is None else (data[: blank.start()], data[blank.end() :])
    fields = {}
    for field in _FIELD_LINE.finditer(head):
        name, value, folded = field.groups()
        # One search a field, and a second only for a folded one (most are one line): its value
        # goes on to the line end that no continuation line follows (the next field's line, or
        # a line of neither, starts with no space or tab), unfolded: each line end in it is
        # before a continuation line. (Searched once more by finditer, which cannot start a
        # field inside them, its continuation lines are read twice at most: linear time.)
        if folded:
            end = _FIELD_END.search(head, field.end())
            value = head[field.start(2) : len(head) if end is None else end.start()]
            value = value.replace(b"\r\n", b"").replace(b"\n", b"")  # (re.sub made a piece of each line)
        fields.setdefault(name.lower().decode("ascii"), []).append(value.rstrip(b"\r"))
    return fields, body


# Codecs that are no charset of text a message could be in: they raise on most input
# (undefined), or take time quadratic in it (idna, punycode).
_NOT_CHARSETS = frozenset({"idna", "punycode", "undefined"})


@lru_cache(maxsize=256)
def text_codec(charset, default="utf-8"):
    """The codec a declared charset names, or `default` when it names none that decodes
    text: unknown, misspelt with a NUL, bytes-to-bytes (base64, zlib) or in _NOT_CHARSETS."""
    import codecs

    try:
        info = codecs.lookup(charset)
    except (LookupError, ValueError, TypeError):
        return default
    if info.name in _NOT_CHARSETS or not getattr(info, "_is_text_encoding", True):
        return default
    return info.name


def decoded(data, charset, default="utf-8"):
    """Bytes as text in the declared charset (see text_codec; LookupError when it names no
    text codec and there is no `default`); bad bytes become U+FFFD."""
    codec = text_codec(charset or "utf-8", default)
    if codec is None:
        raise LookupError(f"no text codec {charset!r}")
    try:
        return data.decode(codec, errors="replace")
    except (UnicodeError, ValueError, TypeError):  # a codec that fails even with errors="replace"
        return data.decode("utf-8", errors="replace")


def header_text(raw):
    """A header value as text, RFC 2047 encoded words decoded, bad bytes as U+FFFD."""
    text = raw.decode("utf-8", errors="replace")
    if "=?" in text:
        try:
            text = decode_encoded_words(text)
        except (LookupError, ValueError, binascii.Error):
            pass  # an unknown charset or a broken encoded word: keep the raw text
    return text


_ENCODED_WORD_START = re.compile(r"=\?([^?]*)\?([qQbB])\?")


def _has_encoded_word(text):
    """Whether decode_header would find an encoded word in the whole text (its charset may
    run over a line end, its encoded text may not): in one pass."""
    word_end, line_end = _NextMatch(text, "?="), _NextMatch(text, "\n")
    for start in _ENCODED_WORD_START.finditer(text):
        end, newline = word_end.at_or_after(start.end()), line_end.at_or_after(start.end())
        if end is not None and (newline is None or end[0] < newline[0]):
            return True
        if end is None:
            return False
    return False


def decode_encoded_words(text):
    """`text` with its RFC 2047 encoded words (=?charset?q?...?= or ?b?) decoded, as the
    standard library's email.header.decode_header reads them (the whitespace between two
    encoded words dropped; unencoded runs of a line kept, the first left-stripped; runs of
    one charset joined, unencoded ones with a space). decode_header takes time quadratic in
    the number of words (list.pop(0), bytes +=, a search to the line's end from every
    unclosed word); this reads each line once. Raises LookupError (a charset that names
    no codec) or binascii.Error (broken base64), and the caller keeps the raw text."""
    from email import base64mime, quoprimime

    if not _has_encoded_word(text):
        return text
    words = []  # (text, encoding or None, charset or None)
    for line in text.splitlines():
        word_end = _NextMatch(line, "?=")
        kept_from = position = 0
        while True:
            start = _ENCODED_WORD_START.search(line, position)
            end = None if start is None else word_end.at_or_after(start.end())
            if start is None or end is None:
                if start is None:
                    break
                position = start.start() + 1  # no ?= after it: no encoded word starts here
                continue
            unencoded = line[kept_from : start.start()]
            words.append((unencoded.lstrip() if kept_from == 0 else unencoded, None, None))
            words.append((line[start.end() : end[0]], start.group(2).lower(), start.group(1).lower()))
            kept_from = position = end[1]
        words.append((line[kept_from:].lstrip() if kept_from == 0 else line[kept_from:], None, None))
    words = [w for w in words if w[0] or w[1]]  # decode_header keeps no empty unencoded run
    between_encoded = {
        n - 1 for n in range(2, len(words)) if words[n][1] and words[n - 2][1] and words[n - 1][0].isspace()
    }
    runs = []  # [charset, [bytes...]]: consecutive words of one charset
    for n, (word, encoding, charset) in enumerate(words):
        if n in between_encoded:
            continue
        if encoding == "q":
            word = quoprimime.header_decode(word)
        elif encoding == "b":
            missing = len(word) % 4  # Postel's law, as decode_header: add the missing padding
            word = base64mime.decode(word + "==="[: 4 - missing] if missing else word)
        if isinstance(word, str):
            word = word.encode("raw-unicode-escape")
        if runs and runs[-1][0] == charset:
            runs[-1][1].append(word)
        else:
            runs.append([charset, [word]])
    return "".join(
        decoded((b" " if charset is None else b"").join(run), charset or "ascii", default=None) for charset, run in runs
    )


def content_type(fields):
    """(lowercase type/subtype, {param: value}); text/plain when missing or malformed."""
    raw = header_text(fields["content-type"][0]) if "content-type" in fields else ""
    kind, _, rest = raw.partition(";")
    kind = kind.strip().lower()
    if "/" not in kind:
        kind = "text/plain"
    return kind, _params(";" + rest)


def _parameters(text):
    """(name, value) of each `; name=value` of a header's text, a quoted value with its quotes.
    A quoted value ends at its first quote not escaped by a backslash; a backslash before a
    line end or the text's end leaves it unclosed, and it is read as an unquoted one (to a `;`
    or a space). (The one pattern that found these, tests/test_hostile_patterns.py's
    OLD_PARAM, repeated a group for each escape: 100 bytes of memory a character of escapes.)"""
    position = 0
    while (start := _PARAM_START.search(text, position)) is not None:
        position = start.end()
        if text.startswith('"', position):
            end = position + 1
            while True:  # runs of QUOTED_RUN escapes, to a quote, or an end that leaves it unclosed
                end = _QUOTED_RUN.match(text, end).end()
                if text[end : end + 1] != "\\" or text[end + 1 : end + 2] in ("", "\n"):
                    break
            if text.startswith('"', end):
                yield start[1], text[position : end + 1]
                position = end + 1
                continue
        value = _UNQUOTED_VALUE.match(text, position)
        yield start[1], value[0]
        position = value.end()


def _params(text):
    params = {}
    for name, value in _parameters(text):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"')
        if name.endswith("*"):  # RFC 2231: charset'language'percent-encoded
            from urllib.parse import unquote

            name = name[:-1]
            charset, _, value = value.partition("'")
            value = unquote(value.partition("'")[2], encoding=text_codec(charset or "utf-8"), errors="replace")
        params.setdefault(name.lower(), value)
    return params


def decode_body(body, fields):
    """The part's bytes after its Content-Transfer-Encoding (base64, quoted-printable)."""
    encoding = fields.get("content-transfer-encoding", [b""])[0].strip().lower()
    try:
        if encoding == b"base64":
            # Decode the base64 lines; text after them (a list footer appended to the
            # message, say) is kept as it is rather than lost.
            end = _NOT_BASE64_LINE.search(body).end()  # (always found: at the end after a last line end)
            last_line = _BASE64_LAST_LINE.match(body, end)
            end = end if last_line is None else last_line.end()
            return binascii.a2b_base64(body[:end] + b"===") + body[end:]
        if encoding == b"quoted-printable":
            return binascii.a2b_qp(body)
    except (binascii.Error, ValueError):
        pass
    return body


@lru_cache(maxsize=None)
def _html_patterns():
    """Compiled on first use: a pipeline classifying one plain-text message never pays for them."""
    hidden_start = re.compile(r"(?i)<!--|<(script|style)\b")
    closing = {name: re.compile(rf"(?i)</{name}\s*>") for name in ("script", "style")}
    link = re.compile(r"""(?i)\b(?:href|src|action)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""")
    tag = re.compile(r"<[!/?a-zA-Z][^>]*(?:>|$)")
    return hidden_start, closing, link, tag


class _NextMatch:
    """The next match of a pattern (a str, or a compiled pattern) at or after a position,
    remembered: asked with positions that only grow, it scans each character once."""

    def __init__(self, text, pattern):
        self.text, self.pattern = text, pattern
        self.searched_from, self.found = None, None  # found: (start, end), or None if there is none

    def at_or_after(self, position):
        if self.searched_from is not None and (self.found is None or self.found[0] >= position):
            return self.found  # what the last search found still lies ahead (or nothing does)
        self.searched_from = position
        if isinstance(self.pattern, str):
            start = self.text.find(self.pattern, position)
            self.found = None if start < 0 else (start, start + len(self.pattern))
        else:
            match = self.pattern.search(self.text, position)
            self.found = None if match is None else match.span()
        return self.found


def without_hidden(markup):
    r"""`markup` with each comment, script and style replaced by a space: what
    re.sub(r"(?is)<!--.*?-->|<!--[^>]*>|<(script|style)\b.*?(?:</\1\s*>|$)", " ", markup)
    gives, in one pass. (That pattern searches the rest of the text again from every
    unclosed `<!--` or `<script`: time that grows with the square of the length;
    docs/performance.md, figures behind the code.)"""
    hidden_start, closing, _, _ = _html_patterns()
    comment_end, bracket = _NextMatch(markup, "-->"), _NextMatch(markup, ">")
    element_end = {name: _NextMatch(markup, pattern) for name, pattern in closing.items()}
    pieces, kept_from, position = [], 0, 0
    while True:
        start = hidden_start.search(markup, position)
        if start is None:
            break
        i, name = start.start(), start.group(1)
        if name is None:  # a comment: to the next -->, or else to the next >
            end = comment_end.at_or_after(i + 4) or bracket.at_or_after(i + 4)
            if end is None:  # neither: no comment starts here
                position = i + 1
                continue
            end = end[1]
        else:  # a script or style element: to its end tag, or else to the end of the text
            found = element_end[name.lower()].at_or_after(start.end())
            end = found[1] if found else len(markup) - markup.endswith("\n")
        pieces += [markup[kept_from:i], " "]
        kept_from = position = end
    pieces.append(markup[kept_from:])
    return "".join(pieces)


def unescape(text):
    """HTML character references decoded, as html.unescape, by code that cannot raise: a
    numeric reference of more than 8 significant digits (beyond every code point; html's
    own int() stops at 4,300 digits with a ValueError) is U+FFFD, as an HTML parser gives
    for any reference past U+10FFFF."""
    from html import unescape as html_unescape

    if "&#" in text:
        text = re.sub(_NUMERIC_REFERENCE, _short_reference, text)  # (compiled on first use, by re's cache)
    return html_unescape(text)


_NUMERIC_REFERENCE = r"&#(?:([xX])([0-9a-fA-F]+)|([0-9]+));?"


def _short_reference(match):
    digits = (match.group(2) or match.group(3)).lstrip("0") or "0"
    return "\ufffd" if len(digits) > 8 else f"&#{match.group(1) or ''}{digits};"


def html_text(markup):
    """(visible text, [hosts of links and images]) of HTML: comments, script and style
    dropped, tags removed, character references decoded."""
    _, _, link, tag = _html_patterns()
    markup = without_hidden(markup)
    hosts = [_host(unescape(a or b or c)) for a, b, c in link.findall(markup)]
    return unescape(tag.sub(" ", markup)), [h for h in hosts if h]


def _host(url):
    from urllib.parse import urlsplit

    try:
        return urlsplit(url.strip()).hostname
    except ValueError:
        return None


# In --headers: every header line not named before it too, each tagged by its own name, but
# for UNIQUE_HEADERS. Tags are cut to MAX_TAG characters, named or not: a header's name may be
# as long as the message (or, named, as a model file), and each of its tokens carries the tag.
ALL_HEADERS = "*"
_FIELD_NAME = re.compile(r"[!-9;-~]+")  # as _FIELD_LINE reads a header line's name: printable ASCII but ':'


def header_name_problem(name):
    """Why --headers' `name` reads no header line (None when it may): no line's name holds a
    space, a ':' or other than ASCII, and a * stands alone (ALL_HEADERS; names are not patterns)."""
    if name != ALL_HEADERS and "*" in name:
        return f"--headers {name!r}: a * stands alone, for every other header line (names are not patterns)"
    if not _FIELD_NAME.fullmatch(name):
        return f"--headers {name!r} is no header line's name (printable ASCII, no ':' or space)"
    return None


UNIQUE_HEADERS = frozenset(("date", "message-id", "in-reply-to", "references"))  # ids and dates never recur
MAX_TAG = 40


def header_places(names):
    """{name: its place}, each of `names` once (in the order it first comes): what
    read_headers finds header lines by. A Tokenizer makes it once for all its messages: a
    model file may name one header many times, or many headers."""
    return {name: place for place, name in enumerate(dict.fromkeys(names))}


def read_headers(fields, headers):
    """[(tag, [raw values])] of the header lines `headers` names (the names, or their
    header_places), in its order, then (with ALL_HEADERS) those of every other line in the
    message's order. A tag is its name cut to MAX_TAG characters. Each line is read once, and
    the fewer of the names and the message's lines looked up in the other: a message costs
    at most what its own lines cost, whatever `headers` holds."""
    places = headers if isinstance(headers, dict) else header_places(headers)
    if len(places) <= len(fields):  # (a dict keeps its order: places' is theirs)
        named = [(name, fields[name]) for name in places if name in fields]
    else:  # (a model file may name more headers than a message has lines)
        named = [(name, fields[name]) for _, name in sorted((places[name], name) for name in fields if name in places)]
    if ALL_HEADERS in places:
        named += [
            (name, values) for name, values in fields.items() if name not in places and name not in UNIQUE_HEADERS
        ]
    return [(name[:MAX_TAG], values) for name, values in named]


def mail_tokens(data, headers, find_tokens):
    """The tokens of one message: tagged header tokens (of the lines `headers` names: the
    names, or their header_places), then those of every part.

    `find_tokens(text)` is the lexer's tokens of decoded text.
    """
    fields, body = split_message(strip_envelope(data))
    tokens = []
    for tag, values in read_headers(fields, headers):
        for raw in values:
            tokens.extend(map(f"{tag}:".__add__, find_tokens(header_text(raw))))
    _part_tokens(fields, body, find_tokens, tokens, 0)
    return tokens


def _part_tokens(fields, body, find_tokens, tokens, depth):
    kind, params = content_type(fields)
    if kind.startswith("multipart/") and params.get("boundary") and depth < MAX_DEPTH:
        for part in split_multipart(body, params["boundary"]):
            _part_tokens(*split_message(part), find_tokens, tokens, depth + 1)
        return
    if kind == "message/rfc822" and depth < MAX_DEPTH:
        _part_tokens(*split_message(decode_body(body, fields)), find_tokens, tokens, depth + 1)
        return
    disposition = header_text(fields["content-disposition"][0]) if "content-disposition" in fields else ""
    filename = _params(disposition).get("filename") or params.get("name")
    if not kind.startswith("text/") or filename or disposition.lower().startswith("attachment"):
        tokens.append(tagged("attachment", kind))
        if filename:
            tokens.extend(map("filename:".__add__, find_tokens(filename)))
        return
    text = decoded(decode_body(body, fields), params.get("charset"))
    hosts = []
    if kind == "text/html":
        text, hosts = html_text(text)
    if "://" in text:  # a C-level substring test spares most bodies the URL scan
        hosts.extend(_URL.findall(text))
    tokens.extend(find_tokens(text))
    tokens.extend(tagged("url", _bare_host(h)) for h in hosts)


def tagged(tag, value):
    """The token `tag:value` of a value taken whole from the message (a content type, a
    link's host): control characters dropped, so that no token holds a NUL (the model file
    separates tokens with NUL) or a line break. Tokens of words never hold one (\\w, and a
    lexer's `!.,$`), nor do header names."""
    return f"{tag}:{without_controls(value)}"


def _bare_host(host):
    """example.com from user@Example.COM:8080, as urlsplit gives for links in HTML."""
    host = host.rsplit("@", 1)[-1].lower()
    return host.split(":", 1)[0] if host.count(":") == 1 else host


def split_multipart(body, boundary):
    """The parts of a multipart body, between `--boundary` lines, up to `--boundary--` (a
    delimiter line may end in spaces or tabs). Found with bytes.find, not a regular
    expression of the boundary: a boundary parameter of megabytes (RFC 2046 allows 70
    characters) compiled into a pattern cost memory and time many times its length
    (docs/performance.md, figures behind the code), and the pattern cache kept each one for
    the rest of a batch."""
    marker = b"--" + boundary.encode("utf-8", "replace")
    parts, start, position = [], None, 0
    while True:
        i = body.find(marker, position)
        if i < 0:
            break
        position = i + 1
        if i > 0 and body[i - 1] != 10:  # not at the start of a line
            continue
        after = i + len(marker)
        closing = body.startswith(b"--", after)
        j = after + 2 if closing else after
        while j < len(body) and body[j] in (32, 9):  # spaces and tabs
            j += 1
        if j < len(body) and body[j] == 13:
            j += 1
        if j < len(body) and body[j] != 10:  # more on the line: no delimiter
            continue
        if start is not None:
            end = i - (2 if body[i - 2 : i] == b"\r\n" else 1 if body[i - 1 : i] == b"\n" else 0)
            parts.append(body[start:end])
        if closing:
            return parts
        start = position = j + 1
    if start is not None:
        parts.append(body[start:])  # no closing delimiter: the rest is the last part
    return parts
