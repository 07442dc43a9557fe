"""Mail filter mode: a message in, the same message out with the verdict as header lines.

Only bytes are inserted: the two header lines go at the end of the header block, with the
message's own line endings, and everything else is passed through byte for byte.
"""

CLASS_HEADER = "X-Nbtext-Class"
PROBABILITY_HEADER = "X-Nbtext-Probability"


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
    lines = b"".join(f"{name}: {value}".encode("ascii") + newline for name, value in fields)
    if not is_mail:
        return lines + newline + message
    at = header_end(message)
    before = message[:at]
    if before and not before.endswith(b"\n"):  # a last header line with no line ending
        before += newline
    return before + lines + message[at:]


def verdict_fields(label, probability):
    if label == "error":
        return [(CLASS_HEADER, "error")]
    return [(CLASS_HEADER, label), (PROBABILITY_HEADER, f"{probability:.4f}")]
