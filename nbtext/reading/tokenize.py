"""Documents to tokens: (mail parsing) -> decode -> a lexer's tokens -> word n-grams.

Each step is a small function; `Tokenizer` glues them together with the settings that
travel inside the model file, so prediction always tokenizes exactly as training did.

Two lexers (--lexer, LEXERS):
- words: runs of two or more word characters of the lower-cased text;
- mail: the rules of spam filters' lexers (docs/performance.md has what they gain): case kept
  (FREE and free are two tokens); `!` part of a token; a `.` or `,` between two token
  characters kept inside it, so host names, IP addresses, prices and phone numbers stay
  whole; `$20` a token; tokens shorter than 3 characters dropped. (Numbers are kept:
  dropping them, as bogofilter does, cost errors on every spam corpus's cross-validation.)
"""

import re
from itertools import repeat

from nbtext.choices import CHAR_BYTES, DEFAULT_HEADERS, INPUT_MODES, LEXERS, MAX_CHAR_NGRAMS
from nbtext.errors import NbtextError
from nbtext.labels import CONTROLS, without_controls

# `\w\w+` finds exactly the tokens of scikit-learn's `(?u)\b\w\w+\b` (a maximal run of
# word characters is its own match either way) and runs faster (docs/performance.md,
# figures behind the code).
TOKEN_PATTERN = re.compile(r"\w\w+")
_find_tokens = TOKEN_PATTERN.findall


def decode(data):
    """Bytes to text as UTF-8; bad bytes become U+FFFD instead of failing."""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


def word_ngrams(tokens, max_n):
    """The tokens followed by their word n-grams for n = 2..max_n, joined by a space."""
    if max_n <= 1:
        return tokens
    grams = list(tokens)
    for n in range(2, max_n + 1):
        grams.extend(map(" ".join, zip(*(tokens[i:] for i in range(n)))))
    return grams


# --char-ngrams: each gram between these marks, a token no other starts with (a word token starts
# with a word character, or !$ for --lexer mail; a tag with a header name's, printable ASCII)
CHAR_GRAM_MARKS = ("«", "»")
_CONTROLS_AS_SPACE = dict.fromkeys(CONTROLS, " ")  # (a token holds no NUL or line break)


def char_ngrams(data, n, max_bytes):
    """The character n-grams of the first `max_bytes` bytes of a message (bytes, as sent:
    its header lines too, as the spam tracks' filters read them), decoded as UTF-8 with
    its control characters as spaces, case kept, each between CHAR_GRAM_MARKS. Linear: at
    most `max_bytes` grams of n characters."""
    text = decode(data[:max_bytes]).translate(_CONTROLS_AS_SPACE)
    start, end = CHAR_GRAM_MARKS
    # the characters of each gram and its marks joined in C (text[k:] from its k-th character)
    return list(map("".join, zip(repeat(start), *(text[k:] for k in range(n)), repeat(end))))


def text_tokens(text):
    """The word tokens of already-decoded text (--lexer words)."""
    return _find_tokens(text.lower())


# --lexer mail: its rule, as the model file stores it. Each piece between two separators is
# one or more token characters, so a text is matched one way only.
MAIL_TOKEN_PATTERN = r"\$?[\w!]+(?:[.,][\w!]+)*"
# It is found in two passes of the same tokens (tests/test_tokenize.py): a `.` or `,` not
# between two token characters becomes a space, then each run left is a token. The pattern's
# repeated group keeps a backtracking entry for each joint of one match (a run like a.a.a.…
# costs many times its length; docs/performance.md); these character classes keep none.
# (Strings, compiled by re's cache at first use: a words model's start-up never pays for them.)
_LOOSE_JOINT = r"[.,](?:[.,]+|(?<![\w!][.,])|(?![\w!]))"
_MAIL_RUN = r"\$?[\w!.,]+"
MIN_MAIL_TOKEN = 3  # characters


def mail_lexer_tokens(text):
    """The tokens of already-decoded text by --lexer mail's rules (see the module's docstring):
    MAIL_TOKEN_PATTERN's, at least MIN_MAIL_TOKEN characters long."""
    runs = re.findall(_MAIL_RUN, re.sub(_LOOSE_JOINT, " ", text))
    return [token for token in runs if len(token) >= MIN_MAIL_TOKEN]


# Each lexer: (its pattern, whether it lower-cases, its tokens of decoded text); the model
# file stores the first two, and a model reader refuses a file whose lexer says otherwise.
LEXER_RULES = {
    "words": (TOKEN_PATTERN.pattern, True, text_tokens),
    "mail": (MAIL_TOKEN_PATTERN, False, mail_lexer_tokens),
}
assert tuple(LEXER_RULES) == LEXERS


def stored_lexer(settings):
    """The lexer that stored tokenizer settings name (words when they name none, as files of
    builds before --lexer), or None when it is unknown or its pattern and case are not those stored."""
    lexer = settings.get("lexer", "words")
    if (
        not isinstance(lexer, str)
        or lexer not in LEXER_RULES
        or LEXER_RULES[lexer][:2] != (settings.get("pattern"), settings.get("lowercase"))
    ):
        return None
    return lexer


class Tokenizer:
    """`tokenize(document) -> list of tokens` for one fixed set of settings.

    input: "text" reads every document as plain text; "mail" parses every document as an
    RFC 822 message (nbtext.reading.mail); "auto" parses those that start like one.
    """

    def __init__(
        self, ngrams=1, input="auto", headers=DEFAULT_HEADERS, lexer="words", char_ngrams=None, char_bytes=CHAR_BYTES
    ):
        if not isinstance(ngrams, int) or ngrams < 1:
            raise ValueError("ngrams must be a whole number >= 1")
        if char_ngrams is not None and (
            not isinstance(char_ngrams, int) or not 1 <= char_ngrams <= MAX_CHAR_NGRAMS or char_bytes != CHAR_BYTES
        ):
            raise ValueError(f"char_ngrams must be a whole number from 1 to {MAX_CHAR_NGRAMS}, of {CHAR_BYTES} bytes")
        if input not in INPUT_MODES:
            raise ValueError(f"input must be one of {', '.join(INPUT_MODES)}")
        if lexer not in LEXER_RULES:
            raise ValueError(f"lexer must be one of {', '.join(LEXER_RULES)}")
        self.lexer = lexer
        self.text_tokens = LEXER_RULES[lexer][2]
        self.ngrams = ngrams
        self.char_ngrams = char_ngrams  # the length of the character n-grams beside the words (None: none)
        self.mail_documents = 0  # how many documents this tokenizer has read as e-mail
        self.input = input
        self.headers = tuple(dict.fromkeys(h.lower() for h in headers))  # (each once: a name is read once)
        self._header_places = None  # (nbtext.reading.mail.header_places, made at the first message read as mail)

    def settings(self):
        """What the model file stores to rebuild this tokenizer (the lexer only when it is not
        words, as files of builds before --lexer hold it)."""
        pattern, lowercase, _ = LEXER_RULES[self.lexer]
        return {
            "pattern": pattern,
            "lowercase": lowercase,
            "ngrams": self.ngrams,
            "input": self.input,
            "headers": list(self.headers),
            **({} if self.lexer == "words" else {"lexer": self.lexer}),
            **({} if self.char_ngrams is None else {"char_ngrams": self.char_ngrams, "char_bytes": CHAR_BYTES}),
        }

    @classmethod
    def from_settings(cls, settings):
        lexer = stored_lexer(settings)
        if lexer is None:
            raise ValueError(f"unsupported tokenizer settings: {settings!r}")
        return cls(
            settings["ngrams"],
            settings["input"],
            settings["headers"],
            lexer,
            settings.get("char_ngrams"),
            settings.get("char_bytes", CHAR_BYTES),
        )

    def is_mail(self, data):
        if self.input == "text":
            return False
        if self.input == "mail":
            return True
        from nbtext.reading.mail import looks_like_mail

        return looks_like_mail(data)

    def reads_as_mail(self, document):
        """Whether this tokenizer reads `document` (str or bytes) as an e-mail message."""
        if self.input == "text":
            return False
        return self.is_mail(_message_bytes(document))

    def __call__(self, document):
        tokens = self._tokens(document)
        if self.char_ngrams is not None:
            tokens = tokens + char_ngrams(_keyed_bytes(document, CHAR_BYTES), self.char_ngrams, CHAR_BYTES)
        return tokens

    def _tokens(self, document):
        """The lexer's tokens of `document` and their word n-grams."""
        if self.input != "text":
            data = _message_bytes(document)
            if self.is_mail(data):
                from nbtext.reading.mail import header_places, mail_tokens

                if self._header_places is None:
                    self._header_places = header_places(self.headers)
                tokens = mail_tokens(data, self._header_places, self.text_tokens)
                self.mail_documents += 1
                return word_ngrams(tokens, self.ngrams)
            if isinstance(document, bytes):
                document = data  # (the message as sent, which _message_text takes as it is: made once)
        tokens = self.text_tokens(decode(_message_text(document)))
        if self.ngrams > 1:
            tokens = word_ngrams(tokens, self.ngrams)
        return tokens


def _message_bytes(document):
    """A document (str or bytes) as the bytes it is read as a message from: the message as
    sent (nbtext.reading.mail.message_as_sent: CR LFs as LF, without the local delivery's
    fields on top or nbtext's own verdict), so that its tokens are those of the bytes its
    journal key is of."""
    from nbtext.reading.mail import message_as_sent, text_bytes

    return message_as_sent(text_bytes(document))


def _keyed_bytes(document, max_bytes):
    """The first `max_bytes` bytes of the message whose hash is the document's journal key
    (nbtext.reading.documents.document_key): the message as sent without its `>From `
    quoting and, where they end it, its trailing line ends. The key leaves both out so that
    a message is one from an mbox, a file or stdin; its character n-grams must too (a
    message learned from stdin was then forgotten from a file with other grams: counts the
    model did not hold)."""
    from nbtext.reading.mail import unquoted_from

    data = unquoted_from(_message_bytes(document))
    # where its trailing line ends start (nbtext.journal.content_hash leaves them out), found in
    # its tail: no copy of the whole message (but of one that ends in 64 line ends or more)
    tail = data[-64:]
    kept = tail.rstrip(b"\r\n")
    end = len(data) - len(tail) + len(kept) if kept else len(data.rstrip(b"\r\n"))
    return data[: min(end, max_bytes)]


def _message_text(document):
    """A document read as text: the message as sent, as for one read as mail (its key is of
    those bytes whichever way it is read). (Its CR LFs as LF change no token: a CR is no token
    character of either lexer.) A str is given back as a str of the same code points."""
    from nbtext.reading.mail import message_as_sent, text_bytes

    if isinstance(document, str):
        return message_as_sent(text_bytes(document)).decode("utf-8", "surrogatepass")
    return message_as_sent(document)


class RowTokenizer:
    """A table row (a tuple of cell values, in `columns` order) -> ["column=value", ...]:
    one token per column, for categorical Naive Bayes."""

    def __init__(self, columns):
        for name in columns:
            if "=" in name:
                raise NbtextError(f"column name {name!r} contains '='; rename it")
        self.columns = list(columns)
        self.mail_documents = 0

    def settings(self):
        return {"kind": "row", "columns": self.columns}

    def reads_as_mail(self, row):
        return False

    def __call__(self, row):
        if isinstance(row, (str, bytes)):
            raise NbtextError("a categorical model classifies table rows (use --table FILE)")
        tokens = [f"{column}={value}" for column, value in zip(self.columns, row)]
        return [without_controls(t) for t in tokens]  # a cell's NUL or line break (tokens are split at NUL)
