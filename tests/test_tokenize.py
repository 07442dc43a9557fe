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
