"""Mail filter mode: a message in, the same message out with the verdict as header lines.

The verdict's header lines go at the end of the header block, with the message's own line
endings; earlier whole X-Nbtext-* fields are left out, and every other byte is passed
through as it came.
"""

from nbtext.reading.mail import header_block, without_verdicts

CLASS_HEADER = "X-Nbtext-Class"
PROBABILITY_HEADER = "X-Nbtext-Probability"
SCORE_HEADER = "X-Nbtext-Score"  # spam's log-odds and the model's cut-off, as spamd's SCORE / THRESHOLD
EVIDENCE_HEADER = "X-Nbtext-Evidence"  # SpamBayes' X-Spambayes-Evidence: the tokens that decided
SPAM = "spam"  # the class the delivery recipes file away (X-Nbtext-Class: spam)


# A line ends at a line feed, and only there, in every step of filter (the header block and
# the old verdict's fields, nbtext.reading.mail's header_block and without_verdicts, end their
# lines at \n alone; line_ending looks for LINE_END): a carriage return is a byte
# of its line wherever it is, so `Subject: a\\rX-Nbtext-Class: b` is one Subject line to
# each of them, and no step sees a line another does not. (A step that broke at CR too
# took bytes of a Subject's value for an old verdict, and put a blank line into a header
# block of CR CR LF line ends.)
LINE_END = b"\n"


def line_ending(message):
    """The ending of the message's first line: CR LF if a carriage return precedes its line
    feed, else LF (what the added lines end with)."""
    first = message.find(LINE_END)
    return b"\r\n" if first > 0 and message[first - 1 : first] == b"\r" else b"\n"


def with_headers(message, fields):
    """`message` with `fields` ([(name, value)]) added as header lines, and its own earlier
    X-Nbtext-* fields left out (a message filtered twice carries one verdict, the last).

    The added lines go where its header block ends (header_block); only a whole field, all
    its lines ended by a line feed, is ever left out, and every other byte is the message's
    own: the output is the message minus those fields, with the added lines inserted at
    one place. A last field with no line feed (a message of headers alone) keeps its place
    at the end, after the added lines. A message without a header block gets a new one in
    front of it: the added lines and a blank line, then the original bytes unchanged."""
    newline = line_ending(message)
    added = b"".join(f"{name}: ".encode("ascii") + header_value(value, newline) + newline for name, value in fields)
    block = header_block(message)
    if block is None:
        return added + newline + message
    start, end = block
    return message[:start] + without_verdicts(message, start, end) + added + message[end:]


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


def filed_class(classes):
    """The class of `classes` the delivery recipes file away, or None: the one named spam in
    any case (procmail's and maildrop's patterns and Sieve's header test match
    `X-Nbtext-Class: spam` so), as labels.spam_class finds it by name."""
    from nbtext.labels import spam_class

    found = spam_class(classes)
    return found if found is not None and found.lower() == SPAM else None


def shown_probability(classes, probabilities, decided):
    """X-Nbtext-Probability's number: the probability of spam for a model with a class
    spam (filed_class; as bogofilter's spamicity: an `unsure` verdict says which way it
    leaned, a ham one how far from spam it is), else `decided`, the probability of the class
    decided."""
    spam = filed_class(classes)
    return decided if spam is None else float(probabilities[classes.index(spam)])


def spam_score(classes, log_probabilities, unsure_below=None, calibration=None):
    """X-Nbtext-Score's (log-odds, the log-odds from which the model files spam or None) for a
    model with a class spam (filed_class), else None. The log-odds of spam against the rest,

        ln P(spam | d) − ln Σ_{k ≠ spam} P(k | d)  (purescore.log_odds_against_rest),

    from the log-probabilities, so it goes on where P(spam) reads 1.0000 or 0.0000 (float64's
    P(spam) is 1.0 from about 37 on): a figure to sort and threshold on, in the units of
    X-Nbtext-Evidence's. The second, for two classes, is where `decide` turns to spam
    (purescore.spam_log_odds_from: 0, or the model's --unsure-below or spam cut-off)."""
    from nbtext.classifier.purescore import log_odds_against_rest, spam_log_odds_from

    spam = filed_class(classes)
    if spam is None:
        return None
    log_odds = log_odds_against_rest(log_probabilities, classes.index(spam))
    return log_odds, spam_log_odds_from(classes, spam, unsure_below, calibration)


def score_value(score):
    """X-Nbtext-Score's text of spam_score's pair: `12.34 / 3.48` (to 2 decimals; `inf` where the
    log-probabilities say certain, or where the model files nothing as spam), the log-odds alone
    for a model of more than two classes. A positive score starts with a digit, a negative one
    with `-`."""
    log_odds, turn = score
    said = f"{round(log_odds, 2) + 0.0:.2f}"  # (+ 0.0: -0.00 said 0.00)
    return said if turn is None else f"{said} / {turn:.2f}"


def verdict_fields(label, probability, evidence=(), score=None):
    """The header fields of a verdict: X-Nbtext-Class, -Probability (shown_probability), with
    `score` (spam_score's) X-Nbtext-Score, and with `evidence` [(token, log-odds)]
    X-Nbtext-Evidence. The one place filter's header lines are written (the click command
    and the one-message path both come here)."""
    if label == "error":
        return [(CLASS_HEADER, "error")]
    fields = [(CLASS_HEADER, label), (PROBABILITY_HEADER, f"{probability:.4f}")]
    if score is not None:
        fields.append((SCORE_HEADER, score_value(score)))
    if evidence:
        # (with_headers encodes what is not ASCII; a token is cut at 100 characters, so a line fits)
        fields.append((EVIDENCE_HEADER, "; ".join(f"{token[:100]}:{value:+.2f}" for token, value in evidence)))
    return fields
