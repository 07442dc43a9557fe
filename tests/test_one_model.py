"""One model whatever the path: training at once, `train --update`, `forget` and `merge`
give the same file, byte for byte, calibration (T and γ, and the sample kept to fit them)
included."""

import random
import shutil
import warnings

import pytest

from hypothesis import HealthCheck, example, given, settings, strategies as st

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.jobs.calibration import SAMPLE, sample_rate, stored_rate
from nbtext.jobs.training import forget, train_corpus, update
from nbtext.reading.documents import Document, in_batches

from conftest import real_corpus, run

# the general defaults, on the command line: a model of spam and ham starts from the spam preset by default, whose
# TONE pass learns by the order it reads (tests/test_preset.py); these tests are about the general model's paths
GENERAL = ["--preset", "general"]
# the event models whose files the paths must agree on: the default, and the spam filters' (presence counts)
MODELS = [{}, {"model": "fisher"}]
WORDS = ["free", "prize", "cash", "offer", "click", "lunch", "meeting", "notes", "report", "friday", "the", "and"]


def corpus(n, seed):
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        label = rng.choice(["spam", "ham"])
        words = rng.sample(WORDS[:5] if label == "spam" else WORDS[5:10], 3) + rng.sample(WORDS, 2)
        docs.append(Document(f"d{i}", " ".join(words) + f" w{i % 41} v{i}", label))
    return docs


def batches(docs):
    return lambda: in_batches(docs, 50)


def saved(model, path):
    model.save(path)
    return path.read_bytes()


def test_the_stored_rate_is_a_step_that_never_falls_below_the_fit():
    for n in (1, 2, 3, 1999, 2000, 2047, 2048, 4095, 4096, 4862, 11314, 10**7):
        assert sample_rate(n) <= stored_rate(n) <= min(1.0, 2 * sample_rate(n))
    assert stored_rate(4096) == stored_rate(8191) == SAMPLE / 4096 and stored_rate(8192) == SAMPLE / 8192


# (each case trains five models and fits each one's temperature, seconds a case: fewer cases, each of the
# class, and its edges given as examples)
@pytest.mark.parametrize("options", MODELS, ids=["multinomial", "fisher"])
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.integers(2100, 2600), st.integers(0, 10**6), st.floats(0.05, 0.95))
@example(2100, 0, 0.05)  # (the least past 2,000 documents, a first part of 105)
@example(2600, 1, 0.95)  # (the most, a second part of 130)
def test_update_and_merge_give_one_trainings_file(tmp_path_factory, options, n, seed, share):
    """Past 2,000 documents, where the sample is a part of the corpus: A then --update B,
    and A merged with B, are byte for byte the training on A and B."""
    folder = tmp_path_factory.mktemp("paths")
    docs = corpus(n, seed)
    cut = int(n * share)
    whole = saved(train_corpus(batches(docs), make_settings(**options)), folder / "whole")
    first = train_corpus(batches(docs[:cut]), make_settings(**options))
    updated, _ = update(first, batches(docs[cut:]))
    assert saved(updated, folder / "updated") == whole
    merged = nbtext.merge([first, train_corpus(batches(docs[cut:]), make_settings(**options))])
    assert saved(merged, folder / "merged") == whole
    assert nbtext.load(folder / "whole").calibration is not None


@pytest.mark.parametrize("options", MODELS, ids=["multinomial", "fisher"])
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.integers(2100, 2500), st.integers(0, 10**6), st.integers(1, 40))
@example(2100, 0, 40)  # (the fewest left: 2,060, just past the power of two, 2,048)
@example(2500, 1, 1)
def test_forget_within_the_same_power_of_two_gives_one_trainings_file(tmp_path_factory, options, n, seed, k):
    folder = tmp_path_factory.mktemp("forget")
    docs = corpus(n, seed)
    model = train_corpus(batches(docs), make_settings(**options))
    forgotten = random.Random(seed).sample(range(n), k)
    gone = set(forgotten)
    rest = [d for i, d in enumerate(docs) if i not in gone]
    changed, stats = forget(model, batches([docs[i] for i in forgotten]))
    assert stats["forgotten"] == k
    assert saved(changed, folder / "forgot") == saved(
        train_corpus(batches(rest), make_settings(**options)), folder / "rest"
    )


def _shouted(docs):
    return [Document(d.name, d.data.upper() + " FREE!! $20 a.example.com", d.label) for d in docs]


@pytest.mark.parametrize(
    "options, made, stored",
    [
        ({"lexer": "mail", "headers": "subject,*"}, _shouted, ("lexer", "mail")),
        ({"char_ngrams": 4}, list, ("char_ngrams", 4)),
    ],
    ids=["mail lexer", "char n-grams"],
)
def test_a_model_of_a_tokenizer_setting_is_one_trainings_file_by_every_path(tmp_path, options, made, stored):
    """The tokenizer's settings (--lexer mail, --char-ngrams) travel in the settings the paths
    compare: update, merge and forget of such a model give the training's file (one case
    each: the paths are the tokenizer's own)."""
    docs = made(corpus(2200, 3))
    whole = saved(train_corpus(batches(docs), make_settings(**options)), tmp_path / "whole")
    first = train_corpus(batches(docs[:900]), make_settings(**options))
    assert saved(update(first, batches(docs[900:]))[0], tmp_path / "updated") == whole
    assert (
        saved(nbtext.merge([first, train_corpus(batches(docs[900:]), make_settings(**options))]), tmp_path / "merged")
        == whole
    )
    rest = train_corpus(batches(docs[:2190]), make_settings(**options))
    changed, _ = forget(nbtext.load(tmp_path / "whole"), batches(docs[2190:]))
    assert saved(changed, tmp_path / "forgot") == saved(rest, tmp_path / "rest")
    key, value = stored
    assert nbtext.load(tmp_path / "whole").settings["tokenizer"][key] == value


def test_forget_past_the_power_of_two_keeps_t_and_says_so(tmp_path):
    """Forgetting below the power of two the sample was cut for leaves it without documents a
    training would fit on: T is kept as it was, and a warning says to retrain."""
    docs = corpus(2300, 5)
    model = train_corpus(batches(docs), make_settings())
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        changed, _ = forget(model, batches(docs[:600]))  # 1,700 documents, below 2,048
    assert any("retrain to refit it" in str(w.message) for w in said)
    assert changed.calibration == model.calibration


def test_a_spamassassin_mailbox_learned_in_two_halves_is_the_whole_training(tmp_path):
    """The issue's case, from the command line: SpamAssassin's training split in halves A
    and B; `train A` then `train --update -m M B`, and `merge a.model b.model`, each the
    file of `train A+B` (it differed by up to 0.071 in probabilities, and the merge was
    refused); then forgetting 100 messages gives the training without them."""
    train = real_corpus("spamassassin") / "train"
    halves = {"A": {}, "B": {}}
    for label in ("spam", "ham"):
        files = sorted(p for p in (train / label).iterdir() if p.is_file())
        for half, chosen in (("A", files[::2]), ("B", files[1::2])):
            folder = tmp_path / half / label
            folder.mkdir(parents=True)
            for path in chosen:
                (folder / path.name).symlink_to(path)
            halves[half][label] = folder

    def given(*names):
        return [f"{label}={halves[h][label]}" for h in names for label in ("spam", "ham")]

    assert run("train", *GENERAL, "-o", tmp_path / "whole.model", *given("A", "B")).exit_code == 0
    assert run("train", *GENERAL, "-o", tmp_path / "a.model", *given("A")).exit_code == 0
    shutil.copy(tmp_path / "a.model", tmp_path / "m.model")  # (the training of A: updated here, merged below)
    assert run("train", "--update", "-m", tmp_path / "m.model", *given("B")).exit_code == 0
    whole = (tmp_path / "whole.model").read_bytes()
    assert (tmp_path / "m.model").read_bytes() == whole
    assert run("train", *GENERAL, "-o", tmp_path / "b.model", *given("B")).exit_code == 0
    merged = run("merge", "-o", tmp_path / "merged.model", tmp_path / "a.model", tmp_path / "b.model")
    assert merged.exit_code == 0, merged.stderr
    assert (tmp_path / "merged.model").read_bytes() == whole
    assert nbtext.load(tmp_path / "merged.model").calibration["documents"] > 1000
    some = sorted(halves["B"]["spam"].iterdir())[:100]
    assert run("forget", "-m", tmp_path / "whole.model", *some).exit_code == 0
    for path in some:
        path.unlink()
    assert run("train", *GENERAL, "-o", tmp_path / "rest.model", *given("A", "B")).exit_code == 0
    assert (tmp_path / "whole.model").read_bytes() == (tmp_path / "rest.model").read_bytes()


def test_the_one_message_path_never_reads_the_sample(tmp_path, monkeypatch):
    """filter and predict of one message read the header and the arrays, not the sample
    section after them (its bytes would be read and checksummed for every message)."""
    from nbtext.modelfile import container

    model = tmp_path / "m.model"
    train_corpus(batches(corpus(300, 1)), make_settings()).save(model)
    header, _ = container.split(container.read_bytes(model, sample=True), str(model))
    full = model.stat().st_size
    assert header["sample"]["bytes"] > 0
    assert len(container.read_bytes(model)) == full - header["sample"]["bytes"]
    result = run("predict", "-m", model, input="free prize cash")
    assert result.exit_code == 0 and result.stdout == "spam\n"
