import re

from hypothesis import given, strategies as st

from nbtext.reading.tokenize import Tokenizer, decode, word_ngrams

SKLEARN_PATTERN = re.compile(r"(?u)\b\w\w+\b")


@given(st.text())
def test_tokens_are_exactly_those_of_the_sklearn_pattern(text):
    assert Tokenizer()(text) == SKLEARN_PATTERN.findall(text.lower())


def test_lowercases_and_drops_single_characters():
    assert Tokenizer()("A Cat, a DOG-house; I x2 ÉTÉ") == ["cat", "dog", "house", "x2", "été"]


def test_ngrams_are_joined_by_a_space_after_the_unigrams():
    assert Tokenizer(ngrams=3)("one two three four") == [
        "one",
        "two",
        "three",
        "four",
        "one two",
        "two three",
        "three four",
        "one two three",
        "two three four",
    ]


@given(st.lists(st.sampled_from(["aa", "bb", "cc"]), max_size=8), st.integers(1, 4))
def test_ngram_count(tokens, n):
    expected = sum(max(0, len(tokens) - k + 1) for k in range(1, n + 1))
    assert len(word_ngrams(tokens, n)) == expected


def test_bad_utf8_becomes_replacement_characters():
    assert decode(b"caf\xe9 ok") == "caf\ufffd ok"
    assert Tokenizer()(b"caf\xe9 menu \xff\xfe") == ["caf", "menu"]


def test_settings_round_trip():
    tokenizer = Tokenizer(ngrams=2)
    assert Tokenizer.from_settings(tokenizer.settings()).ngrams == 2


# --- --lexer mail: each rule a case that fails without it ---------------------------------
def mail_lexed(text):
    return Tokenizer(input="text", lexer="mail")(text)


def test_the_mail_lexer_keeps_case():
    assert mail_lexed("FREE free Free") == ["FREE", "free", "Free"]


def test_the_mail_lexer_keeps_exclamation_marks_in_tokens():
    assert mail_lexed("act now!!! wow!") == ["act", "now!!!", "wow!"]


def test_the_mail_lexer_keeps_a_dot_or_comma_between_two_characters():
    assert mail_lexed("see www.example.com, or 10.1.2.3. end.") == ["see", "www.example.com", "10.1.2.3", "end"]
    assert mail_lexed("yes,sir ok..fine") == ["yes,sir", "fine"]  # (two dots are no joint: "ok" is too short)


def test_the_mail_lexer_reads_a_dollar_amount_as_a_token():
    assert mail_lexed("only $20 or $1,000.50 now") == ["only", "$20", "$1,000.50", "now"]


def test_the_mail_lexer_drops_tokens_shorter_than_three_characters():
    assert mail_lexed("a an the to be $5") == ["the"]


def test_the_mail_lexer_keeps_numbers_whole():
    assert mail_lexed("call 08712300220 or 1,000 at 3.14 from 192.168.0.1, 12") == [
        "call",
        "08712300220",
        "1,000",
        "3.14",
        "from",
        "192.168.0.1",
    ]


def test_the_mail_lexer_reads_mail_with_its_rules_and_tags():
    message = b"Subject: FREE $20!\nFrom: Shop <deals@shop.example>\n\nVisit shop.example NOW!"
    assert Tokenizer(lexer="mail", headers=("subject", "from"))(message) == [
        "subject:FREE",
        "subject:$20!",
        "from:Shop",
        "from:deals",
        "from:shop.example",
        "Visit",
        "shop.example",
        "NOW!",
    ]


def test_every_other_header_line_is_read_with_a_star_but_ids_and_dates():
    message = (
        b"Subject: hello\nDate: Mon, 1 Jul 2002 10:00:00\nMessage-ID: <abc123@host.example>\n"
        b"In-Reply-To: <def@host>\nReferences: <ghi@host>\nX-Mailer: Mailer 5.5\n"
        b"Received: from relay.example ([10.0.0.1])\n\nbody"
    )
    assert Tokenizer(lexer="mail", headers=("subject", "*"))(message) == [
        "subject:hello",
        "x-mailer:Mailer",
        "x-mailer:5.5",
        "received:from",
        "received:relay.example",
        "received:10.0.0.1",
        "body",
    ]
    assert Tokenizer(headers=("subject",))(message) == ["subject:hello", "body"]  # (without *: the named only)


def test_a_header_name_is_cut_to_a_bounded_tag():
    from nbtext.reading.mail import MAX_TAG

    for headers in (("*",), ("X" * 10_000,), ("X" * 10_000, "*")):
        tokens = Tokenizer(input="mail", lexer="mail", headers=headers)(
            b"Subject: x\n" + b"X" * 10_000 + b": one two\n\nbody"
        )
        assert tokens == ["x" * MAX_TAG + ":one", "x" * MAX_TAG + ":two", "body"], headers


@given(
    name=st.builds(  # names short and long, of the characters of a header line's name
        lambda piece, length: (piece * length)[:length],
        st.text(alphabet=st.sampled_from([chr(c) for c in range(0x21, 0x7F) if chr(c) not in ":*"]), min_size=1),
        st.integers(1, 3 * 40),
    ),
    lexer=st.sampled_from(["words", "mail"]),
)
def test_a_header_line_named_or_read_by_a_star_is_tagged_by_its_name_cut_to_a_bounded_tag(name, lexer):
    """Named headers' tags were the whole name (a model file may name one of a megabyte),
    those of --headers '*' cut: every way to a header's tokens now cuts it the same."""
    from hypothesis import assume

    from nbtext.reading.mail import MAX_TAG, UNIQUE_HEADERS, header_name_problem

    assume(name.lower() not in UNIQUE_HEADERS | {"subject"} and not header_name_problem(name))
    assume(not name.lower().startswith("x-nbtext-"))  # nbtext's own verdict is no evidence (test_local_delivery)
    message = b"Subject: x\n" + name.encode() + b": one two\n\nbody"
    tag = name.lower()[:MAX_TAG]
    for headers in ((name,), ("*",), (name, "*")):
        tokens = Tokenizer(input="mail", lexer=lexer, headers=headers)(message)
        assert [t for t in tokens if t.endswith(("one", "two"))] == [f"{tag}:one", f"{tag}:two"], headers


@given(
    names=st.lists(st.sampled_from(["subject", "Subject", "from", "x-long-" + "a" * 45, "x-long-" + "a" * 46, "*"])),
    lexer=st.sampled_from(["words", "mail"]),
)
def test_a_header_named_more_than_once_is_read_once(names, lexer):
    """A model file may repeat a name (or the command line, in two cases): each of that
    line's tokens came once per repeat (a file naming Subject 20,000 times, 230 KB, took a
    300-word subject to 440 MB). The tokens are those of the names each given once."""
    message = (
        b"From: a@b.c\nSubject: cheap pills\nX-Long-" + b"a" * 45 + b": one\nX-Long-" + b"a" * 46 + b": two\n"
        b"X-Other: three\n\nbody"
    )
    once = list(dict.fromkeys(name.lower() for name in names))
    assert Tokenizer(input="mail", lexer=lexer, headers=names)(message) == Tokenizer(
        input="mail", lexer=lexer, headers=once
    )(message)


def test_the_star_beside_many_named_headers_costs_each_line_one_look_up():
    """--headers '*' leaves out the lines named before it: each line of the message was
    compared with every name (a crafted file of 20,000 names and a message of 10,000 lines:
    4.5 s a message). Counted here by the names' comparisons, linear in the two."""
    from nbtext.reading.mail import read_headers

    compared = 0

    class Name(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            nonlocal compared
            compared += 1
            return str.__eq__(self, other)

    names = [Name(f"x-named-{i}") for i in range(300)] + ["*"]
    fields = {f"x-line-{i}": [f"value {i}"] for i in range(300)}
    tags = [tag for tag, _ in read_headers(fields, names)]
    assert tags == list(fields) and compared <= 2 * (len(names) + len(fields)), compared


def test_the_lexer_round_trips_through_the_settings_and_words_is_stored_as_before():
    mail = Tokenizer(ngrams=2, lexer="mail").settings()
    assert mail["lexer"] == "mail" and mail["lowercase"] is False
    assert Tokenizer.from_settings(mail).lexer == "mail"
    words = Tokenizer().settings()
    assert "lexer" not in words and Tokenizer.from_settings(words).lexer == "words"


def test_settings_of_an_unknown_lexer_or_of_other_rules_are_refused():
    import pytest

    for settings in (
        {**Tokenizer().settings(), "lexer": "bytes"},
        {**Tokenizer(lexer="mail").settings(), "lexer": "words"},  # the mail pattern, called words
        {**Tokenizer(lexer="mail").settings(), "lowercase": True},
        {**Tokenizer(lexer="mail").settings(), "pattern": r"\w+"},
        {**Tokenizer(lexer="mail").settings(), "lexer": ["mail"]},  # (no TypeError: a model file's refusal)
        {**Tokenizer(lexer="mail").settings(), "lexer": {"mail": 1}},
    ):
        with pytest.raises(ValueError, match="unsupported tokenizer settings"):
            Tokenizer.from_settings(settings)


@given(st.text(alphabet=st.sampled_from("aZ9.,!$ \n\r\0\x85\u2028é_-@:")), st.sampled_from([1, 2]))
def test_the_mail_lexers_tokens_hold_no_nul_or_line_break(text, ngrams):
    tokens = Tokenizer(ngrams=ngrams, input="text", lexer="mail")(text)
    assert not any(set(token) & set("\0\n\r\x85\u2028") for token in tokens)
    assert all(len(token) >= 3 for token in tokens)


@given(
    st.text(alphabet=st.sampled_from("a_9!.,$ \n\u0301ß٣-")) | st.text(),
)
def test_the_mail_lexers_tokens_are_those_of_its_stored_pattern(text):
    """The lexer finds its tokens in two passes of its own (bounded memory); they are the
    stored pattern's matches of MIN_MAIL_TOKEN characters or more, however the joints run."""
    from nbtext.reading.tokenize import MAIL_TOKEN_PATTERN, MIN_MAIL_TOKEN, mail_lexer_tokens

    expected = [t for t in re.findall(MAIL_TOKEN_PATTERN, text) if len(t) >= MIN_MAIL_TOKEN]
    assert mail_lexer_tokens(text) == expected


@given(st.binary(max_size=400), st.integers(1, 6), st.sampled_from(["auto", "mail", "text"]))
def test_character_ngrams_are_marked_apart_from_every_other_token(data, n, input_mode):
    """--char-ngrams: the n-grams of the first CHAR_BYTES bytes as sent (as the journal knows
    them: no `>From ` quoting, no trailing line ends), after the lexer's own
    tokens (every header line read too), each marked so that no word or tagged token is one,
    and none holding a control character (the model file separates tokens with NUL)."""
    from nbtext.choices import CHAR_BYTES, DEFAULT_HEADERS
    from nbtext.labels import CONTROLS
    from nbtext.reading.mail import message_as_sent, unquoted_from
    from nbtext.reading.tokenize import CHAR_GRAM_MARKS

    words = Tokenizer(input=input_mode, headers=(*DEFAULT_HEADERS, "*"))
    chars = Tokenizer(input=input_mode, headers=(*DEFAULT_HEADERS, "*"), char_ngrams=n)
    assert Tokenizer.from_settings(chars.settings()).settings() == chars.settings()
    plain, tokens = words(data), chars(data)
    assert tokens[: len(plain)] == plain
    grams = tokens[len(plain) :]
    known = unquoted_from(message_as_sent(data)).rstrip(b"\r\n")  # the bytes the journal's key is of
    text = decode(known[:CHAR_BYTES])
    assert len(grams) == max(0, len(text) - n + 1)
    assert all(g[0] == CHAR_GRAM_MARKS[0] and g[-1] == CHAR_GRAM_MARKS[1] and len(g) == n + 2 for g in grams)
    spaced = "".join(" " if ord(c) in CONTROLS else c for c in text)  # (the i-th gram: its n characters from the i-th)
    assert [g[1:-1] for g in grams] == [spaced[i : i + n] for i in range(len(spaced) - n + 1)]
    assert not any(t.startswith(CHAR_GRAM_MARKS[0]) for t in plain)
    assert not any(ord(c) in CONTROLS for g in grams for c in g)


LINES = st.sampled_from(["Subject: free", "From the start", ">From quoted", "From: a@b", "", "body text", "x" * 40])


@given(
    st.lists(LINES, min_size=1, max_size=12),
    st.integers(0, 3100),
    st.integers(0, 3),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["auto", "text"]),
)
def test_copies_of_one_message_have_the_same_character_ngrams(lines, pad, ends, crlf, quoted, input_mode):
    """Two copies the journal takes for one message (one key: CR LF or LF, mboxrd's `>From `
    quoting or none, more line ends at the end or fewer) give the same tokens, up to the
    3,000 bytes' edge, so that one learned from stdin is forgotten from its mbox. With
    --char-ngrams their trailing line ends and `>` were grams: forget refused, "the model's
    counts do not hold a document its journal says it learned"."""
    import re as regex

    from nbtext.reading.documents import document_key

    message = ("\n".join(lines) + "\n" + "y" * pad + "\n").encode()
    copy = regex.sub(rb"(?m)^(>*From )", rb">\1", message) if quoted else message
    copy = copy + b"\n" * ends
    if crlf:
        copy = copy.replace(b"\n", b"\r\n")
    assert document_key(copy) == document_key(message)
    tokenize = Tokenizer(input=input_mode, char_ngrams=3)
    assert tokenize(copy) == tokenize(message)


def test_character_ngrams_are_of_the_first_bytes_only():
    from nbtext.choices import CHAR_BYTES

    tokens = Tokenizer(input="text", char_ngrams=4)("ab " * CHAR_BYTES)
    assert len([t for t in tokens if t.startswith("«")]) == CHAR_BYTES - 3


SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)


@given(st.text(alphabet=st.one_of(st.characters(), SURROGATES, st.sampled_from(" \n:")), max_size=60))
def test_text_with_a_lone_surrogate_is_read_as_its_bytes_on_every_path(text):
    """The Python API's text may hold a lone surrogate (the command line's never does): its key,
    its tokens and its character n-grams are those of its bytes (UTF-8, each surrogate as its own
    three bytes) on every path, as train, predict and forget read it. Before, its tokens failed
    (UnicodeEncodeError) while its key was made."""
    from nbtext.reading.documents import document_key
    from nbtext.reading.mail import text_bytes

    data = text_bytes(text)
    assert document_key(text) == document_key(data)
    for input_mode in ("auto", "text"):
        tokenize = Tokenizer(input=input_mode, char_ngrams=3)
        assert tokenize(text) == tokenize(data)


def test_the_python_api_trains_and_predicts_text_with_a_lone_surrogate():
    import nbtext

    documents = ["cheap pills \ud800 now", "lunch at \udcff noon", "cheap pills again", "lunch menu"]
    for options in ({}, {"input": "text"}, {"preset": "general", "min_count": 1}):
        model = nbtext.train(documents, ["spam", "ham", "spam", "ham"], **options)
        assert model.predict(["cheap \udcff pills", "lunch \ud800 noon"]) == ["spam", "ham"]
