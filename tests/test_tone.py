"""`nbtext train --learn tone`: the model of the documents one TONE pass learns. The pass takes
the documents in the order of their content key, each scored by the multinomial of those
learned before it; the file is then the one `train` of the chosen documents writes (its
settings saying how they were chosen), whatever the files' order or names and -j."""

import random
import shutil

import pytest
from hypothesis import given, settings, strategies as st

import nbtext
from nbtext.choices import SPAM_PRESET
from nbtext.classifier.settings import make_tokenizer
from nbtext.jobs.loading import load_model, load_to_change
from nbtext.reading.documents import document_key

from conftest import ROOT, one_line_error, run

MAIL = ROOT / "corpora" / "mail" / "train"
MARGIN = 6.0  # nats: on this corpus, some of the rightly classified documents are within it and some not
FISHER_MARGIN = 1.0  # the same, on fisher's scale: ln I − ln(1 − I)
OPTIONS = ("--features", "binary", "--alpha", "0.1", "--min-count", "1")
UNCALIBRATED = ("--calibration", "none")  # (78 documents: too few for --calibration auto to fit T)
GENERAL = ("--preset", "general")  # the general defaults (spam/ham folders would train the spam preset)


def corpus():
    """[(path, label)] of the mail corpus's train split."""
    return [(path, label) for label in ("ham", "spam") for path in sorted((MAIL / label).iterdir())]


def chosen_by_the_protocol(documents, margin, alpha=0.1):
    """The paths of `documents` one TONE pass learns, by a loop of its own: in the order of
    their content key (then label), each scored by the presence multinomial (λ `alpha`,
    smoothed prior, UNK, every token a feature) of those learned before it, and learned when
    its most probable class is not its label or when the two classes' jll are within `margin`."""
    import math
    from collections import Counter

    tokenize = make_tokenizer(nbtext.train(["a b", "c d"], ["x", "y"], min_count=1).settings["tokenizer"])
    items = sorted(
        (document_key(path.read_bytes()), label, path, set(tokenize(path.read_bytes()))) for path, label in documents
    )
    classes = ["ham", "spam"]
    docs = Counter()  # class -> documents learned
    holding = {}  # token -> Counter(class -> learned documents holding it)
    chosen = []
    for _, label, path, tokens in items:
        vocabulary = len(holding) + 1  # the tokens seen so far and UNK
        totals = {k: sum(c[k] for c in holding.values()) for k in classes}
        unk = Counter()  # UNK: a token never learned counts once
        jll = {}
        for k in classes:
            unk_total = 0  # (with every token a feature, UNK's counts stay 0)
            total = totals[k] + unk_total
            prior = math.log((docs[k] + alpha) / (sum(docs.values()) + len(classes) * alpha))
            seen = [holding[t][k] for t in tokens if t in holding]
            unseen = any(t not in holding for t in tokens)
            jll[k] = (
                prior
                + sum(math.log((n + alpha) / (total + alpha * vocabulary)) for n in seen)
                + (math.log((unk[k] + alpha) / (total + alpha * vocabulary)) if unseen else 0.0)
            )
        guess = max(classes, key=lambda k: jll[k])
        if guess != label or abs(jll["spam"] - jll["ham"]) <= margin:
            docs[label] += 1
            for t in tokens:
                holding.setdefault(t, Counter())[label] += 1
            chosen.append(path)
    return chosen


def as_folders(root, documents, names=None):
    """`documents` copied under root/<label>/ (renamed by `names(path)` if given): the
    CLASS_DIR arguments LABEL=PATH of them."""
    for path, label in documents:
        target = root / label
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / (names(path) if names else path.name))
    return [f"{label}={root / label}" for label in ("ham", "spam")]


def trained(path, *args):
    result = run("train", "-q", "-o", path, *args)
    assert result.exit_code == 0, result.stderr
    return path.read_bytes()


def with_learning(path, margin):
    """The bytes of the model file at `path` saved with the stored settings of --learn tone."""
    model = load_to_change(str(path))
    decision = {k: v for k, v in model.settings.items() if k == "unsure_below"}  # (stored after the learning)
    others = {k: v for k, v in model.settings.items() if k != "unsure_below"}
    model.settings = {**others, "learn": "tone", "tone_margin": margin, **decision}
    model.save(str(path) + ".tone")
    return (path.parent / (path.name + ".tone")).read_bytes()


def test_the_model_is_the_training_of_the_documents_the_pass_chose(tmp_path):
    """The file is byte for byte `train --learn all --calibration none` of the documents an independent loop of the
    protocol picks (in content-key order), but for the stored setting that says so; the pass
    chose some documents and left others."""
    documents = corpus()
    chosen = set(chosen_by_the_protocol(documents, MARGIN))
    assert 0 < len(chosen) < len(documents)
    tone = trained(
        tmp_path / "tone.model",
        *GENERAL,
        *OPTIONS,
        "--learn",
        "tone",
        "--tone-margin",
        MARGIN,
        "spam=" + str(MAIL / "spam"),
        "ham=" + str(MAIL / "ham"),
    )
    folders = as_folders(tmp_path / "chosen", [(p, label) for p, label in documents if p in chosen])
    trained(tmp_path / "all.model", *GENERAL, *OPTIONS, *UNCALIBRATED, *folders)
    assert with_learning(tmp_path / "all.model", MARGIN) == tone
    model = load_model(str(tmp_path / "tone.model"))
    assert sorted(model.journal) == sorted(document_key(p.read_bytes()) for p in chosen)
    assert model.summary()["settings"]["learn"] == "tone"


def test_the_pass_reads_each_document_once(tmp_path, monkeypatch):
    """The documents the pass chose were tokenized again to be counted (Enron1: 2,593 of
    4,155 twice): the model is now counted from the pass's own token lists (the file the
    same, as the test above shows)."""
    from nbtext.reading.tokenize import Tokenizer

    read = []
    tokenize = Tokenizer.__call__
    monkeypatch.setattr(Tokenizer, "__call__", lambda self, document: read.append(1) or tokenize(self, document))
    args = (*OPTIONS, *UNCALIBRATED, "--learn", "tone", "--tone-margin", MARGIN, "-j", "1")
    trained(tmp_path / "tone.model", *args, "spam=" + str(MAIL / "spam"), "ham=" + str(MAIL / "ham"))
    assert len(read) == len(corpus())


@pytest.mark.parametrize("calibration", ["auto", "temperature"])
def test_the_files_order_their_names_and_workers_change_nothing(tmp_path, calibration):
    """Files renamed (so read in another order), class folders renamed, -j 1 or 2: the same
    file, its temperature too."""
    documents = corpus()
    args = (*OPTIONS, "--learn", "tone", "--tone-margin", MARGIN, "--calibration", calibration)
    first = trained(tmp_path / "a.model", *args, "-j", "1", *as_folders(tmp_path / "a", documents))
    shuffled = list(range(len(documents)))
    random.Random(5).shuffle(shuffled)
    new_name = {path: f"{n:03d}.eml" for (path, _), n in zip(documents, shuffled)}
    folders = as_folders(tmp_path / "b", documents, names=new_name.get)
    renamed = [f.replace("/ham", "/good").replace("/spam", "/junk") for f in folders]
    for f, r in zip(folders, renamed):
        shutil.move(f.split("=", 1)[1], r.split("=", 1)[1])
    assert trained(tmp_path / "b.model", *args, "-j", "2", *renamed) == first
    assert trained(tmp_path / "c.model", *args, "-j", "1", *reversed(renamed)) == first


def test_update_and_forget_of_a_tone_model_learn_what_they_are_given(tmp_path):
    """A tone model's --update learns the documents given, as for any model: the file of
    --learn all of the documents it had learned and those, the setting kept; forget unlearns
    them, through the pending section or the full way. (Presence features without UNK: a binary
    model with UNK cannot be updated.)"""
    documents, options = corpus(), (*OPTIONS, "--unknown", "ignore")
    model = tmp_path / "tone.model"
    before = trained(
        model, *options, "--learn", "tone", "--tone-margin", MARGIN, *as_folders(tmp_path / "c", documents)
    )
    learned = set(load_model(str(model)).journal)
    chosen = [(p, label) for p, label in documents if document_key(p.read_bytes()) in learned]
    left = [p for p, label in documents if (p, label) not in chosen and label == "spam"][:3]
    assert 0 < len(chosen) < len(documents) and left
    extra = tmp_path / "extra"
    extra.mkdir()
    for p in left:
        shutil.copyfile(p, extra / p.name)
    assert run("train", "-q", "--update", "-m", model, f"spam={extra}").exit_code == 0
    trained(
        tmp_path / "all.model",
        *options,
        *UNCALIBRATED,
        "--learn",
        "all",  # (typed, it leaves out the preset's decision: typed as well)
        "--unsure-below",
        str(SPAM_PRESET["unsure_below"]),
        *as_folders(tmp_path / "d", chosen + [(p, "spam") for p in left]),
    )
    assert with_learning(tmp_path / "all.model", MARGIN) == folded(model)  # (a few: through the pending section)
    assert run("forget", "-q", "-m", model, str(extra)).exit_code == 0
    assert folded(model) == before


def folded(path):
    """The bytes of the model file at `path` with its pending section folded in, as the full
    way writes them."""
    out = path.with_name(path.name + ".folded")
    nbtext.load(str(path), fold=True).save(str(out))
    return out.read_bytes()


def test_the_python_api_trains_the_same_model(tmp_path):
    documents = corpus()
    model = nbtext.train(
        [p.read_bytes() for p, _ in documents],
        [label for _, label in documents],
        features="binary",
        alpha=0.1,
        min_count=1,
        learn="tone",
        tone_margin=MARGIN,
    )
    model.save(str(tmp_path / "api.model"))
    cli = trained(
        tmp_path / "cli.model",
        *OPTIONS,
        "--learn",
        "tone",
        "--tone-margin",
        MARGIN,
        *as_folders(tmp_path / "e", documents),
    )
    assert (tmp_path / "api.model").read_bytes() == cli


def test_learn_all_is_the_file_of_before(tmp_path):
    """--learn all (the default) writes what train wrote before --learn: no setting added."""
    args = ("spam=" + str(MAIL / "spam"), "ham=" + str(MAIL / "ham"))
    assert trained(tmp_path / "a.model", *GENERAL, "--learn", "all", *args) == trained(
        tmp_path / "b.model", *GENERAL, *args
    )
    assert "learn" not in load_model(str(tmp_path / "a.model")).settings


@pytest.mark.parametrize(
    "args, says",
    [
        (["--model", "bernoulli"], "--learn does nothing here: its pass scores a multinomial"),
        (["--features", "tfidf", "--unknown", "ignore"], "not of tfidf features"),
        (["--model", "complement"], "not --model complement"),
        (["--shard", "1/2"], "takes every document in one order: --shard does not go with it"),
        (["--scheduler", "tcp://127.0.0.1:1"], "takes every document in one order: --scheduler does not go with it"),
        (["--tone-margin", "-1"], "--tone-margin"),
    ],
)
def test_what_a_tone_pass_cannot_do_is_refused_in_one_line(tmp_path, args, says):
    result = run("train", "-o", tmp_path / "m", "--learn", "tone", *args, MAIL / "spam", MAIL / "ham")
    if result.exit_code == 2:  # (a usage error: click's range check)
        assert result.stderr.count("\n") == 1 and says in result.stderr, result.stderr
    else:
        one_line_error(result, says)
    assert not (tmp_path / "m").exists()


def test_a_tone_pass_of_more_classes_than_the_model_takes_is_refused_in_one_line(tmp_path):
    """--model fisher --learn tone of three classes: the event model's own refusal, before the
    pass makes its form of them (it was a ValueError traceback from Fisher's form of one document)."""
    third = tmp_path / "eggs"
    third.mkdir()
    (third / "1").write_text("scrambled eggs on toast")
    result = run(
        "train", "-o", tmp_path / "m", "--model", "fisher", "--learn", "tone", MAIL / "spam", MAIL / "ham", third
    )
    one_line_error(result, "--model fisher takes 2 classes at most, got 3")
    assert not (tmp_path / "m").exists()


def test_a_pass_learns_the_first_document_of_each_class(tmp_path):
    """Two documents, margin 0: the second is rightly classified by the first (its tokens
    unseen, the prior of the learned class lower) and learned all the same, the first of its
    class: a margin over a class the model holds no document of is none. The pass refused
    ("learned documents of one class only"), and so did every training of the spam preset
    with --features counts: counts of character n-grams put each spam past any margin over a
    ham-only model, so no spam was ever learned."""
    for label, text in (("a", "hello world"), ("b", "buy now")):
        (tmp_path / label).mkdir()
        (tmp_path / label / "1").write_text(text)
    args = ("train", "-o", tmp_path / "m", "--learn", "tone", "--calibration", "none", tmp_path / "a", tmp_path / "b")
    assert run(*args, "--tone-margin", "0").exit_code == 0
    assert nbtext.load(tmp_path / "m").class_count.tolist() == [1, 1]
    counts = tmp_path / "counts.model"
    assert run("train", "-q", "--features", "counts", "-o", counts, MAIL / "spam", MAIL / "ham").exit_code == 0
    assert nbtext.load(counts).settings["tokenizer"]["char_ngrams"] and all(nbtext.load(counts).class_count > 0)


@pytest.mark.parametrize("command", ["train", "eval"])
def test_the_help_says_the_pass_learns_the_first_of_each_class(command):
    """--learn tone's help names the three documents `learns` takes: misclassified, within the
    margin, the first of its class (the help said the first two alone)."""
    text = "".join(run(command, "--help").stdout.split())  # (click wraps lines, also after a hyphen)
    assert "--tone-marginofeven" in text and "firstofitsclass" in text


def test_merge_of_a_tone_model_and_another_names_both_ways_of_learning(tmp_path):
    """It said "their learn differs ('tone' and None)"."""
    tone, every = tmp_path / "tone.model", tmp_path / "all.model"
    trained(
        tone, *GENERAL, *OPTIONS, *UNCALIBRATED, "--learn", "tone", "--tone-margin", MARGIN, MAIL / "spam", MAIL / "ham"
    )
    trained(every, *GENERAL, *OPTIONS, *UNCALIBRATED, MAIL / "spam", MAIL / "ham")
    one_line_error(run("merge", "-o", tmp_path / "m", tone, every), "their learn setting differs ('tone' and 'all')")


def test_a_margin_without_tone_and_learn_with_update_are_usage_errors(tmp_path, demo_model):
    result = run("train", "-o", tmp_path / "m", "--update", "-m", demo_model, "--learn", "tone", MAIL / "spam")
    assert result.exit_code == 2 and "--update keeps the model's own settings; drop --learn" in result.stderr
    # a margin where the training learns by another rule: the settings' one check (make_settings), one line
    for args in ([*GENERAL, "--tone-margin", "3"], ["--learn", "all", "--tone-margin", "3"]):  # (general: all)
        one_line_error(
            run("train", "-o", tmp_path / "m", *args, MAIL / "spam", MAIL / "ham"), "--tone-margin does nothing here"
        )
    # ... and taken where it learns by tone without --learn: the spam preset's rule (spam and ham folders)
    trained = run("train", "-o", tmp_path / "t", "--tone-margin", "3", MAIL / "spam", MAIL / "ham")
    assert trained.exit_code == 0, trained.stderr
    assert nbtext.load(str(tmp_path / "t")).settings["tone_margin"] == 3.0
    one_line_error(
        run(
            "train",
            "-o",
            tmp_path / "m",
            "--learn",
            "tone",
            "--calibration",
            "none",
            "--model",
            "bernoulli",
            MAIL / "spam",
            MAIL / "ham",
        ),
        "--learn does nothing here",
    )


def test_info_says_how_the_documents_were_chosen(tmp_path):
    path = tmp_path / "tone.model"
    trained(path, *OPTIONS, "--learn", "tone", "--tone-margin", MARGIN, MAIL / "spam", MAIL / "ham")
    text = run("info", "-m", path).stdout
    assert "--learn tone" in text and "6 nats" in text


@pytest.mark.parametrize(
    "model_options, margin", [(OPTIONS, 80.0), (("--model", "fisher"), 4.0)], ids=["multinomial", "fisher"]
)
def test_the_margin_by_default_is_the_event_models_own(tmp_path, model_options, margin):
    """--tone-margin not given: the event model's (its jll's scale: fisher's is ln I − ln(1 − I)),
    for train --learn tone and eval --online --learn tone alike."""
    import json

    path = tmp_path / "tone.model"
    trained(path, *GENERAL, *model_options, "--learn", "tone", "--calibration", "none", MAIL / "spam", MAIL / "ham")
    assert load_model(str(path)).settings["tone_margin"] == margin
    online = run(
        "eval", "--online", *GENERAL, "--learn", "tone", "--format", "json", *model_options, MAIL / "spam", MAIL / "ham"
    )
    assert online.exit_code == 0, online.stderr
    assert json.loads(online.stdout)["tone_margin"] == margin


@pytest.mark.parametrize(
    "settings",
    [
        {"learn": "all", "tone_margin": 1.0},
        {"learn": "tone"},
        {"learn": "tone", "tone_margin": -1.0},
        {"learn": "tone", "tone_margin": True},
        {"tone_margin": 3.0},
        {"learn": "errors", "tone_margin": 3.0},
    ],
)
def test_the_model_reader_refuses_a_learning_setting_train_never_writes(settings):
    from nbtext.modelfile.schema import check_settings_record

    stored = dict(nbtext.train(["a b", "c d"], ["x", "y"], min_count=1, features="binary").settings)
    check_settings_record({**stored, "learn": "tone", "tone_margin": 2.0})
    with pytest.raises(ValueError):
        check_settings_record({**stored, **settings})


@pytest.mark.parametrize(
    "model_options, margin",
    [
        ((*OPTIONS, "--unknown", "ignore"), MARGIN),
        (("--model", "fisher", "--alpha", "1", "--min-count", "1"), FISHER_MARGIN),
    ],
    ids=["presence", "fisher"],
)
def test_a_calibrated_tone_model_is_fitted_on_every_document_the_pass_saw(tmp_path, model_options, margin):
    """T and γ (and --max-ham-flagged's cut-off) are fitted on the pass's documents: each one
    the model learned scored out of fold among the learned, each other one by the model
    itself; not on the learned ones alone (the hard documents). --update keeps the temperature
    (no sample is kept) without a warning; merge refuses it in one line."""
    import numpy as np

    from nbtext.stats.counting import token_hash
    from nbtext.stats.fitting import fit_tempering
    from nbtext.stats.out_of_fold import FOLDS, out_of_fold_jll

    documents, options = corpus(), (*model_options, "--learn", "tone", "--tone-margin", margin)
    folders = as_folders(tmp_path / "c", documents)
    path = tmp_path / "tone.model"
    trained(path, *options, "--calibration", "temperature", *folders)
    model = load_to_change(str(path))
    tokens = [model.tokenize(p.read_bytes()) for p, _ in documents]
    labels = [label for _, label in documents]
    inside = [i for i, (p, _) in enumerate(documents) if document_key(p.read_bytes()) in model.journal]
    outside = [i for i in range(len(documents)) if i not in inside]
    assert inside and outside and model.calibration_sample is None
    rows = np.array([model.classes.index(labels[i]) for i in inside + outside])
    learned_jll, learned_n = out_of_fold_jll(
        model, [tokens[i] for i in inside], [labels[i] for i in inside], [token_hash(tokens[i]) % FOLDS for i in inside]
    )
    others_jll, others_n = model.jll_and_lengths([tokens[i] for i in outside])
    fitted = fit_tempering(np.vstack([learned_jll, others_jll]), rows, np.concatenate([learned_n, others_n]))
    c = model.calibration
    assert (c["temperature"], c["length_exponent"], c.get("length_floor", 1)) == pytest.approx(fitted, rel=1e-6)
    assert c["documents"] == len(documents)
    alone = fit_tempering(learned_jll, rows[: len(inside)], learned_n)
    assert alone != pytest.approx(fitted, rel=1e-3)

    budgeted = tmp_path / "budget.model"
    trained(budgeted, *options, "--calibration", "temperature", "--max-ham-flagged", "10%", *folders)
    assert load_model(str(budgeted)).calibration["max_ham_flagged"] == 0.1

    extra = tmp_path / "extra"
    extra.mkdir()
    shutil.copyfile(documents[outside[0]][0], extra / "one.eml")
    result = run("train", "--update", "-m", path, f"{labels[outside[0]]}={extra}")
    assert result.exit_code == 0 and "warning" not in result.stderr, result.stderr
    assert load_model(str(path)).calibration == c
    one_line_error(run("merge", "-o", tmp_path / "m", path, budgeted), "--learn tone model's temperature")


# --- eval --folds --learn tone: each fold's model is the TONE training of the other folds ----------
@pytest.mark.parametrize(
    "options, margin",
    [({"features": "binary", "min_count": 1}, MARGIN), ({"model": "fisher"}, FISHER_MARGIN)],
    ids=["multinomial", "fisher"],
)
def test_each_fold_of_eval_folds_learns_what_train_learn_tone_learns(options, margin):
    """Each fold's guesses are those of `train --learn tone` of the other folds' documents
    (the Python API's training, an independent path: it reads, tokenizes and passes them
    itself), and they differ from learning every document (the pass chose some)."""
    import json

    from nbtext.classifier.settings import make_settings
    from nbtext.jobs.crossval import held_out_guesses, stratified_folds
    from nbtext.reading.documents import Document, tokenized

    paths = corpus()
    data, labels = [p.read_bytes() for p, _ in paths], [label for _, label in paths]
    options = {**options, "alpha": 0.1, "calibration": "none", "preset": "general"}
    settings = make_settings(**options, learn="tone", tone_margin=margin).resolved(0, len(data))
    folds = stratified_folds(labels, 3, 0)
    kept, token_lists = tokenized(
        make_tokenizer(settings["tokenizer"]), [Document(str(i), d, l) for i, (d, l) in enumerate(zip(data, labels))]
    )
    keys = [document_key(doc.data) for doc in kept]
    every = make_settings(**options).resolved(0, len(data))
    differs, accuracies = False, []
    for f in range(3):
        test, guesses, _, _ = held_out_guesses(settings, token_lists, labels, folds, keys, None, f)
        train = [i for i in range(len(data)) if folds[i] != f]
        model = nbtext.train(
            [data[i] for i in train], [labels[i] for i in train], learn="tone", tone_margin=margin, **options
        )
        assert guesses == list(model.predict([data[i] for i in test]))
        differs |= guesses != held_out_guesses(every, token_lists, labels, folds, keys, None, f)[1]
        accuracies.append(sum(g == labels[i] for g, i in zip(guesses, test)) / len(test))
    assert differs
    result = run(
        "eval", "--folds", "3", "--format", "json", "--learn", "tone", "--tone-margin", margin,
        *[a for k, v in options.items() for a in (f"--{k.replace('_', '-')}", v)], MAIL / "spam", MAIL / "ham",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    (report,) = json.loads(result.stdout)["models"].values()
    assert [fold["accuracy"] for fold in report["folds"]] == accuracies  # the command line's folds: the same


def test_eval_learns_by_train_rules_with_folds_and_by_the_online_ones_online(tmp_path, demo_model):
    for args, says in [
        (["--folds", "3", "--learn", "errors"], "--learn errors goes with --online"),
        (["-m", demo_model, "--learn", "tone"], "--learn goes with --online (what the run learns) or --folds"),
        # (the general defaults: the spam preset's folds learn by a TONE pass, which takes it: test_preset)
    ]:
        result = run("eval", *args, MAIL / "spam", MAIL / "ham")
        assert result.exit_code == 2 and says in result.stderr and result.stderr.count("\n") == 1, result.stderr
    one_line_error(
        run("eval", "--folds", "3", *GENERAL, "--tone-margin", "3", MAIL / "spam", MAIL / "ham"),
        "--tone-margin does nothing here",
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_eval_folds_whose_pass_would_learn_one_class_learns_the_first_of_each(tmp_path, jobs):
    """Each fold's TONE pass, in this process or a forked worker (-j 2), at margin 0 with the
    classes' words apart (the first document learned rightly classifies the rest) learns the
    first document of each class, as train's does: every fold is a model of both classes. It
    failed, in one line naming the fold."""
    import json

    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        for i in range(6):
            (tmp_path / label / str(i)).write_text(f"{label}word {label}{i} {label}{i}x")
    args = ("eval", "--folds", "3", "-j", jobs, "--format", "json", "--learn", "tone", tmp_path / "a", tmp_path / "b")
    result = run(*args, "--tone-margin", "0")
    assert result.exit_code == 0, result.stderr
    assert [fold["n"] for fold in json.loads(result.stdout)["models"]["multinomial"]["folds"]] == [4, 4, 4]


@pytest.mark.parametrize("calibration", [UNCALIBRATED, ("--calibration", "temperature")])
def test_the_summary_says_what_the_pass_read_and_what_it_learned(tmp_path, calibration):
    """train's summary counted the documents the TONE pass kept (476) and never the 4,862 it
    read: it says both, by the independent loop's count, calibrated or not, and a training
    of every document says one count as before."""
    documents = corpus()
    chosen = chosen_by_the_protocol(documents, MARGIN)
    args = [*GENERAL, *OPTIONS, *calibration, "--tone-margin", MARGIN, f"spam={MAIL / 'spam'}", f"ham={MAIL / 'ham'}"]
    result = run("train", "-o", tmp_path / "tone.model", "--learn", "tone", *args)
    assert result.exit_code == 0, result.stderr
    assert f" of {len(chosen)} documents (" in result.stderr
    assert f") learned by a TONE pass of the {len(documents)} it read; " in result.stderr
    result = run("train", "-o", tmp_path / "all.model", "--learn", "all", *args[:-4], *args[-2:])
    assert f" of {len(documents)} documents (" in result.stderr and "TONE" not in result.stderr


WORDS = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "", "é"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    documents=st.lists(st.tuples(WORDS, st.sampled_from(["ham", "spam", "x"])), max_size=30),
    n_classes=st.sampled_from([2, 3]),
    presence=st.booleans(),
    unk=st.booleans(),
    max_evidence=st.sampled_from([None, 1, 2, 4]),
    alpha=st.sampled_from([0.1, 1.0]),
    prior=st.sampled_from(["smoothed", "uniform", "empirical"]),
    margin=st.sampled_from([0.0, 1.5, 20.0]),
)
def test_the_pass_over_held_token_numbers_steps_as_the_pass_over_token_lists(
    documents, n_classes, presence, unk, max_evidence, alpha, prior, margin
):
    """train's pass (held_steps: the documents held as token numbers, the counts an array) gives
    each step's P(k | x), jll, guess and learning bit for bit as `step` over the token lists
    (eval --folds' pass, eval --online's), of counts or presence, UNK or not, capped or not."""
    import numpy as np

    from nbtext.features.vocabulary import TokenRows
    from nbtext.jobs.online import OnlineMultinomial, held_steps, step

    classes = ["ham", "spam", "x"][:n_classes]
    documents = [(tokens, label) for tokens, label in documents if label in classes]
    numbering = {}
    rows = [
        np.array([numbering.setdefault(t, len(numbering)) for t in tokens], dtype=np.uint32) for tokens, _ in documents
    ]
    labels = [label for _, label in documents]
    order = list(range(len(documents)))[::-1]

    def learner():
        return OnlineMultinomial(classes, alpha, 1, unk, prior, presence=presence, max_evidence=max_evidence)

    by_lists, by_numbers = learner(), learner()
    held = held_steps(TokenRows(rows, list(numbering)), labels, order, by_numbers, margin)
    for i, (p, jll, guess, learned) in zip(order, held, strict=True):
        assert (p, jll, guess, learned) == step(by_lists, documents[i][0], labels[i], "tone", margin)
