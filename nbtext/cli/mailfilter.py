"""Mail filter mode: a message in, the same message out with the verdict as header lines.

Only bytes are inserted: the two header lines go at the end of the header block, with the
message's own line endings, and everything else is passed through byte for byte.
"""

CLASS_HEADER = "X-Nbtext-Class"
PROBABILITY_HEADER = "X-Nbtext-Probability"
EVIDENCE_HEADER = "X-Nbtext-Evidence"  # SpamBayes' X-Spambayes-Evidence: the tokens that decided


def header_end(message):
    """Offset of the blank line that ends the header block (len(message) if there is none)."""
    position = 0
    while position < len(message):
        end = message.find(b"\n", position)
        if end < 0:
            return len(message)
        if message[position:end] in (b"", b"\r"):
            return position
        position = end + 1
    return len(message)


def line_ending(message):
    first = message.find(b"\n")
    return b"\r\n" if first > 0 and message[first - 1 : first] == b"\r" else b"\n"


def with_headers(message, fields, is_mail=True):
    """`message` with `fields` ([(name, value)]) added as header lines.

    A message without a header block (`is_mail` False) gets a new one in front of it:
    the added lines and a blank line, then the original bytes unchanged.
    """
    newline = line_ending(message)
    lines = b"".join(f"{name}: ".encode("ascii") + header_value(value, newline) + newline for name, value in fields)
    if not is_mail or (b"\r" in message and b"\n" not in message):  # (lines ended by CR alone: no header end to
        return lines + newline + message                             # find, and no byte of it to change)
    at = header_end(message)
    before = without_verdicts(message[:at])
    if before and not before.endswith(b"\n"):  # a last header line with no line ending
        before += newline
    return before + lines + message[at:]


def header_value(value, newline=b"\n"):
    """A header field's value as bytes: printable ASCII as it is (folded at spaces past 76
    columns), anything else (a label such as `spæm`, evidence with `größe`, a control
    character) as RFC 2047 encoded words of its UTF-8 (`=?UTF-8?B?c3DDpm0=?=`; a name that
    is not UTF-8, held as surrogate escapes, as its own bytes in charset unknown-8bit), at
    most 45 bytes of text a word, words on folded lines."""
    if value.isascii() and value.isprintable():
        return _folded(value, newline)
    import binascii

    try:
        data, charset = value.encode("utf-8"), b"UTF-8"
    except UnicodeEncodeError:
        data, charset = value.encode("utf-8", "surrogateescape"), b"unknown-8bit"
    words = []
    while data:
        cut = min(len(data), 45)
        while cut < len(data) and 0x80 <= data[cut] < 0xC0:  # not inside a character
            cut -= 1
        words.append(b"=?" + charset + b"?B?" + binascii.b2a_base64(data[:cut], newline=False) + b"?=")
        data = data[cut:]
    return (newline + b" ").join(words)


def _folded(text, newline):
    """ASCII header text on lines of at most 76 columns where it has spaces to fold at."""
    if len(text) <= 76:
        return text.encode("ascii")
    lines, line = [], None
    for word in text.split(" "):
        if line is None:
            line = word
        elif line and len(line) + 1 + len(word) > 76:  # the space becomes the fold's
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}"
    lines.append(line)
    return (newline + b" ").join(line.encode("ascii") for line in lines)


def without_verdicts(head):
    """A header block without earlier X-Nbtext-* lines (and their continuations): a
    message filtered twice carries one verdict, the last."""
    if b"x-nbtext-" not in head.lower():
        return head
    kept, dropping = [], False
    for line in head.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):  # a continuation belongs to the line before
            if not dropping:
                kept.append(line)
            continue
        dropping = line[:9].lower() == b"x-nbtext-"
        if not dropping:
            kept.append(line)
    return b"".join(kept)


def verdict_fields(label, probability, evidence=()):
    """The header fields of a verdict; `evidence` [(token, log-odds)] adds X-Nbtext-Evidence."""
    if label == "error":
        return [(CLASS_HEADER, "error")]
    fields = [(CLASS_HEADER, label), (PROBABILITY_HEADER, f"{probability:.4f}")]
    if evidence:
        # (with_headers encodes what is not ASCII; a token is cut at 100 characters, so a line fits)
        fields.append((EVIDENCE_HEADER, "; ".join(f"{token[:100]}:{value:+.2f}" for token, value in evidence)))
    return fields
