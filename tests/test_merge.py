"""Merge and shards (issue 11): a merge of models equals, byte for byte, the model of one
training on all their documents; `train --shard K/N` parts merge into that model too."""

import random
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.jobs.training import train_corpus
from nbtext.reading.documents import Document, in_batches
from nbtext.reading.sources import in_shard
from conftest import ROOT, one_line_error, real_corpus, run

# the general defaults: these tests are about merging, not about a spam filter's defaults (tests/test_preset.py),
# which --preset auto gives a model of spam and ham
GENERAL = ["--preset", "general"]
WORDS = ["free", "prize", "lunch", "noon", "click", "meeting", "money", "report", "now", "the"]


def trained(docs, labels, partial=True, **options):
    """A model of a part of a corpus (one class is enough, as for a shard), or with
    `partial` False of a whole one."""
    corpus = [Document(str(i), d, label) for i, (d, label) in enumerate(zip(docs, labels))]
    return train_corpus(lambda: in_batches(corpus, 7), make_settings(**options), partial=partial)


def file_bytes(model, path):
    model.save(path)
    return path.read_bytes()


document = st.builds(
    lambda words, mail: ("From: a@b.c\nSubject: " + words[0] + "\n\n" if mail else "") + " ".join(words),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=12),
    st.booleans(),
)
options = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["multinomial", "bernoulli", "fisher"]),
        "min_count": st.integers(1, 3),
        "max_features": st.sampled_from([None, 4]),
        "ngrams": st.integers(1, 2),
        "alpha": st.sampled_from([None, 0.5]),
        "features": st.sampled_from([None, "counts", "binary"]),
        "unsure_below": st.sampled_from([None, 0.9]),  # (the model's own decision: kept as any setting)
        "max_evidence": st.sampled_from([None, 2]),  # (the multinomial's alone: dropped for the others)
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    corpus=st.lists(st.tuples(document, st.sampled_from(["spam", "ham", "eggs"])), min_size=2, max_size=30),
    options=options,
    parts=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_merging_random_parts_equals_one_training(tmp_path, corpus, options, parts, seed):
    if options["model"] != "multinomial":
        options = {k: v for k, v in options.items() if k != "max_evidence"}
    if options["model"] == "bernoulli":
        options = {**options, "features": None, "unknown": "ignore"}
    if options["model"] == "fisher":  # two classes, its own presence features (no UNK)
        options = {**options, "features": None}
        corpus = [(d, "spam" if label == "spam" else "ham") for d, label in corpus]
    docs, labels = zip(*corpus)
    if len(set(labels)) < 2:
        return
    if options["features"] == "binary":  # presence with UNK merges while nothing is pruned
        options = {**options, "min_count": 1, "max_features": None}
    rng = random.Random(seed)
    part_of = [rng.randrange(parts) for _ in docs]
    models = []
    for k in range(parts):
        members = [i for i in range(len(docs)) if part_of[i] == k]
        if members:
            models.append(trained([docs[i] for i in members], [labels[i] for i in members], **options))
    # the order of one training: part by part (a document in two parts under two labels is
    # held under the later one, as the later input would be)
    order = sorted(range(len(docs)), key=lambda i: part_of[i])
    warnings.simplefilter("ignore")  # a document in two parts: said, and counted twice as in one training
    try:
        whole = nbtext.train([docs[i] for i in order], [labels[i] for i in order], preset="general", **options)
    except nbtext.NbtextError as e:  # e.g. nothing left after pruning: the merge says the same
        with pytest.raises(nbtext.NbtextError, match=str(e)[:20]):
            nbtext.merge(models)
        return
    merged = nbtext.merge(models)
    assert file_bytes(merged, tmp_path / "merged.model") == file_bytes(whole, tmp_path / "whole.model")


def test_the_default_alpha_is_chosen_again_from_all_documents(tmp_path):
    """λ = 0.1 when most documents are mail: a part of mail and a larger part of text
    merge into a text model (λ = 1), as one training on both is."""
    mail = ["From: a@b.c\nSubject: free prize\n\nclick now"] * 3
    text = ["lunch at noon", "meeting report now", "free lunch", "the report", "noon meeting"]
    part1 = trained(mail, ["spam"] * 3)
    part2 = trained(text, ["ham", "ham", "spam", "ham", "ham"])
    assert part1.alpha == 0.1 and part2.alpha == 1.0
    merged = nbtext.merge([part1, part2])
    assert merged.alpha == 1.0 and merged.corpus == {"mail_documents": 3, "default_alpha": True}
    whole = trained(mail + text, ["spam"] * 3 + ["ham", "ham", "spam", "ham", "ham"], partial=False)
    assert file_bytes(merged, tmp_path / "m") == file_bytes(whole, tmp_path / "w")


def test_update_and_forget_keep_the_count_of_mail_documents():
    mail = "From: a@b.c\nSubject: free prize\n\nclick now"
    model = trained([mail, "lunch at noon"], ["spam", "ham"], partial=False)
    more, _ = nbtext.jobs.training.update(
        model, lambda: [[Document("x", mail.replace("now", "today"), "spam"), Document("y", mail, "spam")]]
    )
    assert more.corpus["mail_documents"] == 2  # the new message; the known one counts once
    fewer, stats = nbtext.jobs.training.forget(more, lambda: [[Document("z", mail)]])
    assert stats["forgotten"] == 1 and fewer.corpus["mail_documents"] == 1


def test_shards_split_a_corpus_with_no_document_lost_or_repeated():
    names = [f"spam/{i:04d}.eml" for i in range(2000)]
    owners = [[k for k in range(1, 5) if in_shard(name, (k, 4))] for name in names]
    assert all(len(o) == 1 for o in owners)
    sizes = [sum(o == [k] for o in owners) for k in range(1, 5)]
    assert min(sizes) > 400, sizes  # a hash spreads them evenly (500 each, give or take)


@pytest.mark.parametrize(
    "corpus, parts, options", [("spamassassin", 3, ()), ("20news", 2, ()), ("spamassassin", 2, ("--model", "fisher"))]
)
def test_shards_merge_into_one_training_on_real_corpora(tmp_path, corpus, parts, options):
    train = real_corpus(corpus) / "train"
    classes = sorted(str(p) for p in train.iterdir() if p.is_dir())
    for k in range(1, parts + 1):
        result = run(
            "train", *GENERAL, *options, "--shard", f"{k}/{parts}", "-o", tmp_path / f"part{k}.model", *classes
        )
        assert result.exit_code == 0, result.stderr
    result = run("merge", "-o", tmp_path / "merged.model", *[tmp_path / f"part{k}.model" for k in range(1, parts + 1)])
    assert result.exit_code == 0 and result.stderr.startswith(f"merged {parts} models: "), result.stderr
    assert run("train", *GENERAL, *options, "-o", tmp_path / "whole.model", *classes).exit_code == 0
    assert (tmp_path / "merged.model").read_bytes() == (tmp_path / "whole.model").read_bytes()
    # by default (--calibration auto) the parts keep their calibration samples and the merge fits T
    assert nbtext.load(tmp_path / "part1.model").calibration_sample is not None
    assert "kept to fit T again" in run("info", "-m", tmp_path / "part1.model").stdout
    assert nbtext.load(tmp_path / "merged.model").calibration["documents"] > 1000


def test_an_mbox_is_shared_out_by_message(tmp_path):
    box = tmp_path / "spam.mbox"
    box.write_bytes(
        b"".join(
            b"From a@b Mon Jun 24 17:54:30 2002\nSubject: offer %d\n\nfree prize %d\n\n" % (i, i) for i in range(40)
        )
    )
    ham = ROOT / "corpora" / "mail" / "train" / "ham"
    counts = []
    for k in (1, 2):
        result = run(
            "train", *GENERAL, "--shard", f"{k}/2", "--min-count", "1", "-o", tmp_path / f"{k}.model", box, ham
        )
        assert result.exit_code == 0, result.stderr
        counts.append(
            dict(zip(*[nbtext.load(tmp_path / f"{k}.model").classes, nbtext.load(tmp_path / f"{k}.model").class_count]))
        )
    assert counts[0]["spam"] + counts[1]["spam"] == 40 and 0 < counts[0]["spam"] < 40


@pytest.mark.filterwarnings("default::UserWarning")  # the same corpus twice: a refusal is said alone, no warning
def test_merge_refuses_what_it_cannot_do_exactly(tmp_path):
    train = ROOT / "corpora" / "mail" / "train"
    spam, ham = train / "spam", train / "ham"

    def model(name, *options):
        assert run("train", *GENERAL, "-o", tmp_path / name, *options, spam, ham).exit_code == 0
        return tmp_path / name

    counts, pruned = model("a.model"), model("b.model", "--min-count", "3")
    one_line_error(run("merge", "-o", tmp_path / "x", counts, pruned), "their min_count setting differs (2 and 3)")
    one_line_error(
        run("merge", "-o", tmp_path / "x", counts, model("c.model", "--alpha", "1")),
        "was trained with a λ given (--alpha",
    )
    one_line_error(
        run("merge", "-o", tmp_path / "x", counts, model("d.model", "--model", "complement")),
        "tf-idf features need every document's idf",
    )
    one_line_error(
        run(
            "merge",
            "-o",
            tmp_path / "x",
            model("e.model", "--model", "bernoulli", "--min-count", "5"),
            model("f.model", "--model", "bernoulli", "--min-count", "5"),
        ),
        "pruned token",
    )
    one_line_error(
        run("merge", "-o", tmp_path / "x", counts, model("g.model", "--headers", "subject")),
        "their headers setting differs",
    )
    one_line_error(
        run(
            "merge",
            "-o",
            tmp_path / "x",
            counts,
            model("h.model", "--model", "bernoulli", "--unknown", "ignore", "--alpha", "0.5"),
        ),
        "one is a multinomial model, the other a bernoulli one",
    )  # (it blamed --alpha)
    one_line_error(run("merge", "-o", tmp_path / "x", counts, tmp_path / "missing.model"), "does not exist")
    one_line_error(run("train", *GENERAL, "--shard", "3/2", spam, ham), "--shard must be K/N")
    assert not (tmp_path / "x").exists()


@pytest.mark.filterwarnings("default::UserWarning")  # the command line prints it as one line
@pytest.mark.parametrize(
    "options, message",
    [
        (["--calibration", "temperature", "--max-ham-flagged", "20%"], "different --max-ham-flagged budgets"),
        (["--calibration", "none"], "was trained with --calibration none and others were not"),
        ([], "--calibration auto and temperature"),
    ],
)
def test_a_refused_merge_of_overlapping_models_says_its_refusal_alone(tmp_path, options, message):
    """The models share documents (a warning when merged), and their calibrations cannot be
    merged: the refusal is the one line, with no warning before it."""
    train = ROOT / "corpora" / "mail" / "train"
    plain, other = tmp_path / "plain.model", tmp_path / "other.model"
    assert (
        run("train", *GENERAL, "--calibration", "temperature", "-o", plain, train / "spam", train / "ham").exit_code
        == 0
    )
    assert run("train", *GENERAL, *options, "-o", other, train / "spam", train / "ham").exit_code == 0
    for models in ((plain, other), (other, plain)):
        one_line_error(run("merge", "-o", tmp_path / "x", *models), message)
    assert not (tmp_path / "x").exists()


@pytest.mark.filterwarnings("default::UserWarning")  # the command line prints it as one line
def test_a_merge_that_cannot_be_written_says_that_alone(tmp_path, monkeypatch):
    """The disk fills up as the merged model is written: its one line, not the warnings of
    the merge before it (here the documents both models learned), and no file."""
    import os

    train = ROOT / "corpora" / "mail" / "train"
    model = tmp_path / "a.model"
    assert run("train", "-o", model, train / "spam", train / "ham").exit_code == 0

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    result = run("merge", "-o", tmp_path / "x", model, model)
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot write {tmp_path / 'x'}: No space left on device\n"
    assert not (tmp_path / "x").exists()


@pytest.mark.filterwarnings("default::UserWarning")  # the command line prints it as one line
def test_a_model_merged_with_itself_counts_its_documents_twice(tmp_path):
    """Merging is adding (the journal knows each document once, the counts do not dedupe:
    as training on the same folder given under two names would)."""
    train = ROOT / "corpora" / "mail" / "train"
    assert run("train", "-o", tmp_path / "a.model", train / "spam", train / "ham").exit_code == 0
    result = run("merge", "-o", tmp_path / "a2.model", tmp_path / "a.model", tmp_path / "a.model")
    once, twice = nbtext.load(tmp_path / "a.model"), nbtext.load(tmp_path / "a2.model")
    learned = len(once.journal)  # of the 78 read, those the spam preset's TONE pass learned
    assert 0 < learned < 78 and learned == sum(once.class_count)
    assert (
        result.exit_code == 0 and f"nbtext: warning: {learned} documents were learned by more than one" in result.stderr
    )
    assert list(twice.class_count) == [2 * n for n in once.class_count]
    assert twice.journal == once.journal


def test_merge_into_one_of_its_inputs(tmp_path):
    """`merge -o A A B`: A is replaced whole by the merge (written atomically, under the lock)."""
    train = ROOT / "corpora" / "mail" / "train"
    assert (
        run("train", *GENERAL, "--shard", "1/2", "-o", tmp_path / "a.model", train / "spam", train / "ham").exit_code
        == 0
    )
    assert (
        run("train", *GENERAL, "--shard", "2/2", "-o", tmp_path / "b.model", train / "spam", train / "ham").exit_code
        == 0
    )
    assert run("merge", "-o", tmp_path / "a.model", tmp_path / "a.model", tmp_path / "b.model").exit_code == 0
    assert run("train", *GENERAL, "-o", tmp_path / "whole.model", train / "spam", train / "ham").exit_code == 0
    assert (tmp_path / "a.model").read_bytes() == (tmp_path / "whole.model").read_bytes()


def test_calibrated_parts_merge_into_one_calibrated_training(tmp_path):
    """Parts keep their calibration samples; the merge fits T on the documents one
    training's sample takes from them all: the same file, byte for byte."""
    rng = random.Random(7)
    docs, labels = [], []
    for i in range(400):
        label = rng.choice(["spam", "ham"])
        words = rng.sample(WORDS[:5] if label == "spam" else WORDS[5:], 3) + rng.sample(WORDS, 2)
        docs.append(" ".join(words) + f" w{i % 37}")
        labels.append(label)
    whole = trained(docs, labels, partial=False)
    assert whole.calibration is not None and whole.calibration["documents"] == 400
    order = list(range(400))
    rng.shuffle(order)
    parts = [trained([docs[i] for i in order[k::3]], [labels[i] for i in order[k::3]]) for k in range(3)]
    assert all(part.calibration is None and len(part.calibration_sample[1]) > 100 for part in parts)
    for k, part in enumerate(parts):  # the sample goes through the file
        part.save(tmp_path / f"{k}.model")
    merged = nbtext.merge([nbtext.load(tmp_path / f"{k}.model") for k in range(3)])
    assert file_bytes(merged, tmp_path / "m") == file_bytes(whole, tmp_path / "w")
    raw = trained([d + " again" for d in docs[:50]], labels[:50], calibration="none")
    with pytest.raises(nbtext.NbtextError, match="was trained with --calibration none and others were not"):
        nbtext.merge([parts[0], raw])
    with pytest.raises(nbtext.NbtextError, match="--calibration auto and temperature"):
        nbtext.merge([parts[0], trained([d + " more" for d in docs[:60]], labels[:60], calibration="temperature")])


@pytest.mark.parametrize(
    "options, said",
    [
        (("--lexer", "mail"), "their lexer setting differs ('words' and 'mail')"),
        (("--char-ngrams", "3"), "their char_ngrams setting differs (None and 3)"),
    ],
    ids=["lexer", "character n-grams"],
)
def test_merge_refuses_models_of_two_tokenizers(tmp_path, options, said):
    """The tokenizer setting that differs is named, as the user gave it (--char-ngrams, not
    the char_bytes stored with it)."""
    train = ROOT / "corpora" / "mail" / "train"
    for name, typed in (("words.model", ()), ("mail.model", options)):
        assert (
            run(
                "train", *GENERAL, "--shard", "1/2", *typed, "-o", tmp_path / name, train / "spam", train / "ham"
            ).exit_code
            == 0
        )
    one_line_error(
        run("merge", "-o", tmp_path / "x", tmp_path / "words.model", tmp_path / "mail.model"),
        said,
    )
