import re

from hypothesis import given, strategies as st

from nbtext.tokenize import Tokenizer, decode, word_ngrams

SKLEARN_PATTERN = re.compile(r"(?u)\b\w\w+\b")


@given(st.text())
def test_tokens_are_exactly_those_of_the_sklearn_pattern(text):
    assert Tokenizer()(text) == SKLEARN_PATTERN.findall(text.lower())


def test_lowercases_and_drops_single_characters():
    assert Tokenizer()("A Cat, a DOG-house; I x2 ÉTÉ") == ["cat", "dog", "house", "x2", "été"]


def test_ngrams_are_joined_by_a_space_after_the_unigrams():
    assert Tokenizer(ngrams=3)("one two three four") == [
        "one", "two", "three", "four",
        "one two", "two three", "three four",
        "one two three", "two three four",
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


MESSAGE = b"From: a@b.c\nSubject: free free prize\n\nFree money, free now. Money!\n"
TEXT = "free money, free now. money!"


def test_mail_presence_gives_a_message_each_token_once_and_text_its_counts():
    counted, present = Tokenizer(ngrams=2), Tokenizer(ngrams=2, mail_presence=True)
    every = counted(MESSAGE)
    assert every.count("free") == 2 and every.count("subject:free") == 2 and every.count("free money") == 1
    once = present(MESSAGE)
    assert once == list(dict.fromkeys(every))  # first occurrences, in order
    assert len(once) == len(set(once)) < len(every)
    assert present(TEXT) == counted(TEXT) and present(TEXT).count("free") == 2  # plain text keeps its counts
    assert present.mail_documents == 1


def test_mail_presence_travels_in_the_settings_only_when_set():
    assert "mail_presence" not in Tokenizer().settings()  # files of models without it stay as they were
    settings = Tokenizer(mail_presence=True).settings()
    assert settings["mail_presence"] is True and Tokenizer.from_settings(settings).mail_presence
    assert not Tokenizer.from_settings(Tokenizer().settings()).mail_presence
