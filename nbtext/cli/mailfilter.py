"""Mail filter mode: a message in, the same message out with the verdict as header lines.

The verdict's header lines go at the end of the header block, with the message's own line
endings; earlier whole X-Nbtext-* fields are left out, and every other byte is passed
through as it came.
"""

import re

CLASS_HEADER = "X-Nbtext-Class"
PROBABILITY_HEADER = "X-Nbtext-Probability"
EVIDENCE_HEADER = "X-Nbtext-Evidence"  # SpamBayes' X-Spambayes-Evidence: the tokens that decided
SPAM = "spam"  # the class the delivery recipes file away (X-Nbtext-Class: spam)


def lines(message, start=0):
    """(start, end) of each line of `message` from offset `start`: the one line splitter of
    filter. A line ends at a line feed only (the last may have none): a carriage return is a
    byte of its line wherever it is (`Subject: a\\rX-Nbtext-Class: b` is one Subject line), so
    no step of filter can see a line that another step does not."""
    while start < len(message):
        end = message.find(b"\n", start) + 1 or len(message)
        yield start, end
        start = end


_HEADER_LINE = re.compile(rb"[!-9;-~]+:")  # a field's name and colon (RFC 5322: printable ASCII but ':')


def header_fields(message):
    """[(start, end)] of the fields of `message`'s header block, in order: each a header line
    and its continuation lines (an mbox `From ` line first is a field of its own). The block
    is the run of such lines from the start; it ends at the first line that is neither (a
    blank line, a body line right after the headers, as Enron's messages have) or at the
    end of the message. [] when the message does not start with a header line."""
    fields, first = [], 0
    if message.startswith(b"From "):  # an mbox envelope line counts only with a header line after it
        first = message.find(b"\n") + 1
        if not first or not _HEADER_LINE.match(message, first):
            return []
        fields.append((0, first))
    for start, end in lines(message, first):
        if message[start:start + 1] in (b" ", b"\t") and fields:  # a continuation of the field before
            fields[-1] = (fields[-1][0], end)
        elif _HEADER_LINE.match(message, start):
            fields.append((start, end))
        else:
            break
    return fields


def line_ending(message):
    """The ending of the message's first line: CR LF if a carriage return precedes its line
    feed, else LF (what the added lines end with)."""
    first = message.find(b"\n")
    return b"\r\n" if first > 0 and message[first - 1 : first] == b"\r" else b"\n"


def with_headers(message, fields):
    """`message` with `fields` ([(name, value)]) added as header lines, and its own earlier
    X-Nbtext-* fields left out (a message filtered twice carries one verdict, the last).

    The added lines go where its header block ends (header_fields); only a whole field, all
    its lines ended by a line feed, is ever left out, and every other byte is the message's
    own: the output is the message minus those fields, with the added lines inserted at
    one place. A last field with no line feed (a message of headers alone) keeps its place
    at the end, after the added lines. A message without a header block gets a new one in
    front of it: the added lines and a blank line, then the original bytes unchanged."""
    newline = line_ending(message)
    added = b"".join(f"{name}: ".encode("ascii") + header_value(value, newline) + newline for name, value in fields)
    block = header_fields(message)
    if not block:
        return added + newline + message
    kept = []
    for start, end in block:
        whole = message[end - 1 : end] == b"\n"
        if whole and is_old_verdict(message[start:end]):
            continue
        if not whole:  # the last field, and nothing after it to put the added lines before
            kept.append(added)
            added = b""
        kept.append(message[start:end])
    return b"".join(kept) + added + message[block[-1][1]:]


def is_old_verdict(field):
    """Whether a whole header field (ended by a line feed) is an X-Nbtext-* field filter may
    take out: one with no carriage return but those that end its lines. A bare one in it
    (`X-Nbtext-Class: ham\\rSubject: hi`) is a line end to readers that break at CR: the
    field is left as it is rather than lose what they read as another header."""
    if field[:9].lower() != b"x-nbtext-":
        return False
    return all(b"\r" not in field[start:end].rstrip(b"\r\n") for start, end in lines(field))


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


def shown_probability(classes, probabilities, decided):
    """X-Nbtext-Probability's number: the probability of spam for a model with a class
    `spam` (as bogofilter's spamicity: an `unsure` verdict says which way it leaned, a ham
    one how far from spam it is), else `decided`, the probability of the class decided."""
    return float(probabilities[classes.index(SPAM)]) if SPAM in classes else decided


def verdict_fields(label, probability, evidence=()):
    """The header fields of a verdict; `evidence` [(token, log-odds)] adds X-Nbtext-Evidence."""
    if label == "error":
        return [(CLASS_HEADER, "error")]
    fields = [(CLASS_HEADER, label), (PROBABILITY_HEADER, f"{probability:.4f}")]
    if evidence:
        # (with_headers encodes what is not ASCII; a token is cut at 100 characters, so a line fits)
        fields.append((EVIDENCE_HEADER, "; ".join(f"{token[:100]}:{value:+.2f}" for token, value in evidence)))
    return fields
