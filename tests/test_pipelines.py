"""Shell pipelines and mail filters: --is, --unsure-below, filter mode, --update, broken pipes."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbtext
from nbtext.delivery.headers import with_headers

from conftest import ROOT, evaluated_on_mail, real_corpus, run

DEMO = ROOT / "corpora" / "mail"
NBTEXT = Path(sys.executable).with_name("nbtext")
GENERAL = ["--preset", "general"]  # the general defaults (spam/ham folders would train the spam preset)


def test_is_exit_statuses(demo_model, tmp_path):
    spammy, hammy = "Claim your free prize now, click here", "Meeting notes for lunch on Thursday"
    assert run("predict", "-m", demo_model, "--is", "spam", input=spammy).exit_code == 0
    assert run("predict", "-m", demo_model, "--is", "spam", input=hammy).exit_code == 1
    unsure = run("predict", "-m", demo_model, "--is", "spam", "--unsure-below", "0.999999999", input="prize")
    assert unsure.exit_code == 2  # (P(spam) 0.993)
    # errors: status 3 and always one line on stderr (a delivery log shows it), never stdout
    for model, label, said in (
        (tmp_path / "missing", "spam", "does not exist"),
        (demo_model, "nosuchclass", "is not a class of the model (ham, spam)"),
    ):
        result = run("predict", "-m", model, "--is", label, input=spammy)
        assert result.exit_code == 3 and result.stdout == "" and result.stderr.count("\n") == 1
        assert result.stderr.startswith("Error: ") and said in result.stderr
    bogus = run("predict", "-m", demo_model, "--is", "spam", "--bogus-option", input=spammy)
    assert bogus.exit_code == 3 and bogus.stderr.startswith("Error: No such option")
    verbose = run("predict", "-m", demo_model, "--is", "spam", "-v", input=spammy)
    assert verbose.exit_code == 0 and verbose.stdout.startswith("spam\t")
    # a file argument is the message (not stdin); more than one is refused
    message = tmp_path / "msg"
    message.write_text(spammy)
    assert run("predict", "-m", demo_model, "--is", "spam", message, input=hammy).exit_code == 0
    two = run("predict", "-m", demo_model, "--is", "spam", message, message)
    assert two.exit_code == 3 and two.stderr == "Error: --is classifies one message: give one FILE, or none for stdin\n"


def test_the_no_model_error_names_nbtext_model(tmp_path):
    from conftest import one_line_error

    missing = str(tmp_path / "gone.model")
    one_line_error(
        run("predict", input="x", env={"NBTEXT_MODEL": missing}), f"model {missing} (from $NBTEXT_MODEL) does not exist"
    )


def test_unsure_label_and_eval_counts(demo_model):
    rows = run("predict", "-m", demo_model, "--unsure-below", "0.9999", "--format", "json", DEMO / "test").stdout
    records = [json.loads(line) for line in rows.splitlines()]
    labels = [r["label"] for r in records]
    probabilities = [max(r["probabilities"].values()) for r in records]
    assert "unsure" in labels
    assert all((l == "unsure") == (p < 0.9999) for l, p in zip(labels, probabilities))
    report = evaluated_on_mail(demo_model, "--unsure-below", "0.9999")
    assert report["unsure"] == labels.count("unsure") and report["n"] == 26 - labels.count("unsure")


def test_with_headers_inserts_at_the_end_of_the_header_block():
    message = b"From: a@b.c\r\nSubject: hi\r\n\r\nbody\r\n\r\nmore\r\n"
    tagged = with_headers(message, [("X-Nbtext-Class", "spam"), ("X-Nbtext-Probability", "0.9987")])
    assert tagged == (
        b"From: a@b.c\r\nSubject: hi\r\nX-Nbtext-Class: spam\r\n"
        b"X-Nbtext-Probability: 0.9987\r\n\r\nbody\r\n\r\nmore\r\n"
    )
    # a last header line with no line end stays last, whole (a line end put into it was a changed byte)
    assert with_headers(b"Subject: no body", [("X-A", "b")]) == b"X-A: b\nSubject: no body"
    assert with_headers(b"not mail", [("X-A", "error")]) == b"X-A: error\n\nnot mail"


def header_end(message):
    """Where the blank line after a message's header block starts."""
    return message.index(b"\n", message.find(b"\n\n") if b"\n\n" in message else message.find(b"\n\r\n")) + 1


def filtered(model, message):
    return subprocess.run([NBTEXT, "filter", "-m", model], input=message, capture_output=True)


def added_lines_removed(message, output):
    """The output with the three added header lines taken out again."""
    at = header_end(message)
    newline = b"\r\n" if b"\r\n" in message[: at + 2] else b"\n"
    lines = output[at:].split(newline, 3)
    assert lines[0].startswith(b"X-Nbtext-Class: ") and lines[1].startswith(b"X-Nbtext-Probability: ")
    assert lines[2].startswith(b"X-Nbtext-Score: ")
    return output[:at] + lines[3]


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed here")
def test_filter_is_byte_for_byte_on_real_mail(tmp_path):
    corpus = real_corpus("spamassassin")
    model = tmp_path / "sa.model"
    assert run("train", "-o", model, corpus / "train" / "spam", corpus / "train" / "ham").exit_code == 0
    messages = sorted((corpus / "test" / "spam").iterdir())[:3] + sorted((corpus / "test" / "ham").iterdir())[:3]
    for path in messages:
        for message in (path.read_bytes(), path.read_bytes().replace(b"\n", b"\r\n")):
            result = filtered(model, message)
            assert result.returncode == 0 and result.stderr == b""
            assert added_lines_removed(message, result.stdout) == message
            label = result.stdout[header_end(message) :].split(b"\n", 1)[0].split(b": ")[1].strip()
            assert label.decode() == path.parent.name or path.name.startswith("hard_ham")


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed here")
def test_filter_passes_everything_through(demo_model, tmp_path):
    garbage = bytes(range(256)) * 4
    result = filtered(demo_model, garbage)
    assert result.returncode == 0 and result.stdout == b"X-Nbtext-Class: error\n\n" + garbage
    message = b"Subject: hello\n\nlunch notes\n"
    result = filtered(tmp_path / "missing.model", message)
    assert result.returncode == 1 and b"does not exist" in result.stderr
    assert result.stdout == b"Subject: hello\nX-Nbtext-Class: error\n\nlunch notes\n"


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed here")
def test_a_closed_pipe_ends_quietly(demo_model, tmp_path):
    lines = tmp_path / "big.txt"
    lines.write_text("free prize money now\nmeeting notes lunch\n" * 100_000)
    result = subprocess.run(
        f"'{NBTEXT}' predict -m '{demo_model}' --lines < '{lines}' | head -1", shell=True, capture_output=True
    )
    assert result.stdout == b"-:1\tspam\t" + result.stdout.split(b"\t")[2] and result.stderr == b""


def corpus_folders(tmp_path, name, docs):
    folder = tmp_path / name
    for label, texts in docs.items():
        (folder / label).mkdir(parents=True)
        for i, text in enumerate(texts):
            (folder / label / f"{i}.txt").write_text(text)
    return [folder / label for label in docs]


FIRST = {"spam": ["free prize money", "cheap pills now"], "ham": ["lunch at noon", "meeting notes today"]}
SECOND = {
    "spam": ["win free money today", "prize draw tonight"],
    "eggs": ["scrambled eggs recipe"],
    "ham": ["notes from the meeting"],
}


def test_update_equals_training_on_everything(tmp_path):
    first, second = corpus_folders(tmp_path, "a", FIRST), corpus_folders(tmp_path, "b", SECOND)
    assert run("train", *GENERAL, "-o", tmp_path / "m", *first).exit_code == 0
    # a class the model does not have is added only when asked (tests/test_new_classes.py)
    assert run("train", "--update", "-m", tmp_path / "m", *second).exit_code == 1
    result = run("train", "--update", "--new-classes", "-m", tmp_path / "m", *second)
    assert result.exit_code == 0 and "added 4, moved 0, already known 0" in result.stderr
    assert run("train", "--update", "-m", tmp_path / "m", *second).exit_code == 0  # a class it has now
    both = corpus_folders(tmp_path, "c", {k: FIRST.get(k, []) + SECOND.get(k, []) for k in ("spam", "ham", "eggs")})
    assert run("train", *GENERAL, "-o", tmp_path / "all", *both).exit_code == 0
    updated, retrained = nbtext.load(tmp_path / "m"), nbtext.load(tmp_path / "all")
    assert updated.classes == retrained.classes == ["eggs", "ham", "spam"]
    assert updated.vocabulary.tokens == retrained.vocabulary.tokens
    np.testing.assert_array_equal(updated.class_count, retrained.class_count)
    np.testing.assert_array_equal(updated.token_counts.dense, retrained.token_counts.dense)
    assert updated.journal == retrained.journal
    probes = ["free eggs", "meeting prize", "unknown words here"]
    np.testing.assert_allclose(updated.predict_proba(probes), retrained.predict_proba(probes), rtol=1e-12)


def test_update_counts_a_message_once_and_moves_it(tmp_path):
    first = corpus_folders(tmp_path, "a", FIRST)
    assert run("train", "-o", tmp_path / "m", *first).exit_code == 0
    before = nbtext.load(tmp_path / "m")
    again = run("train", "--update", "-m", tmp_path / "m", *first)
    assert "added 0, moved 0, already known 4" in again.stderr
    np.testing.assert_array_equal(nbtext.load(tmp_path / "m").token_counts.dense, before.token_counts.dense)
    # "lunch at noon" relearned as spam: it leaves ham
    (tmp_path / "moved" / "spam").mkdir(parents=True)
    (tmp_path / "moved" / "spam" / "x").write_text("lunch at noon")
    moved = run("train", "--update", "-m", tmp_path / "m", tmp_path / "moved" / "spam")
    assert "added 0, moved 1" in moved.stderr
    after = nbtext.load(tmp_path / "m")
    expected = corpus_folders(tmp_path, "e", {"spam": FIRST["spam"] + ["lunch at noon"], "ham": FIRST["ham"][1:]})
    run("train", "-o", tmp_path / "expected", *expected)
    reference = nbtext.load(tmp_path / "expected")
    np.testing.assert_array_equal(after.class_count, reference.class_count)
    assert after.vocabulary.tokens == reference.vocabulary.tokens
    np.testing.assert_array_equal(after.token_counts.dense, reference.token_counts.dense)


def test_update_refuses_settings_and_bernoulli_unk(tmp_path):
    first = corpus_folders(tmp_path, "a", FIRST)
    run("train", "-o", tmp_path / "m", *first)
    result = run("train", "--update", "--alpha", "0.5", "-m", tmp_path / "m", *first)
    assert result.exit_code == 2 and "--update keeps the model's own settings; drop --alpha" in result.stderr
    result = run("train", "--update", "--model", "bernoulli", "-m", tmp_path / "m", "ham=-", input="Subject: x\n\nhi\n")
    assert result.exit_code == 2 and "drop --model" in result.stderr  # (it said stdin could be read only once)
    run("train", "--model", "bernoulli", "-o", tmp_path / "b", *first)
    result = run("train", "--update", "-m", tmp_path / "b", *first)
    assert (
        result.exit_code == 1
        and "cannot --update a Bernoulli or binary-feature model with an UNK feature" in result.stderr
    )


PRESENCE_UNPRUNED = [
    ["--features", "binary", "--min-count", "1"],
    ["--model", "bernoulli", "--min-count", "1"],
    # the spam preset's settings, typed (its own --unsure-below kept by --update and forget)
    ["--features", "binary", "--min-count", "1", "--ngrams", "2", "--calibration", "none", "--unsure-below", "0.97"]
    + ["--max-evidence", "150"],
]


def _counts(model):
    return (model.classes, model.vocabulary.tokens, model.class_count.tolist(), model.token_counts.dense.tolist())


@pytest.mark.parametrize("options", PRESENCE_UNPRUNED)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(
        st.lists(st.sampled_from(["free", "prize", "lunch", "notes", "money", "noon"]), min_size=1),
        min_size=8,
        unique_by=" ".join,  # (a copy is learned once by --update, counted again by a training)
    )
)
def test_presence_with_an_unk_feature_and_nothing_pruned_learns_and_forgets_exactly(tmp_path_factory, options, texts):
    """An UNK feature of presence cannot be updated once tokens are pruned (which documents held
    one is not stored), but with --min-count 1 every token is kept: train --update then equals a
    training of every document at once, and forget gives back the model before (refused before)."""
    tmp_path = tmp_path_factory.mktemp("unpruned")
    docs = {"spam": [" ".join(t) for t in texts[0::2]], "ham": [" ".join(t) for t in texts[1::2]]}
    half = {label: d[: len(d) // 2] or d[:1] for label, d in docs.items()}
    rest = {label: d[len(half[label]) :] for label, d in docs.items()}
    assert run("train", *options, "-o", tmp_path / "m", *corpus_folders(tmp_path, "a", half)).exit_code == 0
    before = _counts(nbtext.load(tmp_path / "m"))
    second = corpus_folders(tmp_path, "b", rest)
    result = run("train", "--update", "-m", tmp_path / "m", *second)
    assert result.exit_code == 0, result.stderr
    assert run("train", *options, "-o", tmp_path / "all", *corpus_folders(tmp_path, "c", docs)).exit_code == 0
    updated, retrained = nbtext.load(tmp_path / "m"), nbtext.load(tmp_path / "all")
    assert _counts(updated) == _counts(retrained) and updated.journal == retrained.journal
    assert updated.settings == retrained.settings
    probes = ["free noon", "lunch money prize", "unknown words here"]
    np.testing.assert_allclose(updated.predict_proba(probes), retrained.predict_proba(probes), rtol=1e-12)
    assert run("forget", "-q", "-m", tmp_path / "m", *second).exit_code == 0
    assert _counts(nbtext.load(tmp_path / "m")) == before


def test_train_jobs_gives_the_same_model(tmp_path):
    corpus = real_corpus("sms")
    folders = [corpus / "train" / "spam", corpus / "train" / "ham"]
    assert run("train", "-j", "1", "-o", tmp_path / "one", *folders).exit_code == 0
    assert run("train", "-j", "2", "-o", tmp_path / "two", *folders).exit_code == 0
    assert (tmp_path / "one").read_bytes() == (tmp_path / "two").read_bytes()


@pytest.mark.parametrize(
    "head",
    [
        b"Received: from " + b"relay.example.org " * 200 + b"\n",  # a first line over 2 KB
        b"".join(b"X-Spam-Check-%d: passed by a very long filter chain of some sort\n" % i for i in range(40)),
        b"ARC-Seal: i=1; a=rsa-sha256; t=1; cv=none;\n d=example.org; s=arc; b=" + b"A" * 3000 + b"\n",
    ],
)
def test_filter_keeps_a_long_or_unusual_header_block_a_header_block(demo_model, head):
    """filter adds its lines at the end of the header block, even when the block starts
    with a line over 2 KB or only X-, ARC or DKIM headers fill its first 2 KB."""
    message = head + b"Subject: free prize\nFrom: a@example.com\n\nclaim your free prize now\n"
    result = run("filter", "-m", demo_model, input=message)
    out = result.stdout_bytes
    assert result.exit_code == 0 and out.startswith(head)
    header, body = out.split(b"\n\n", 1)
    assert body == b"claim your free prize now\n"
    assert re.search(rb"X-Nbtext-Class: spam\nX-Nbtext-Probability: [0-9.]+\nX-Nbtext-Score: [-0-9.]+ / 6.91\Z", header)


def test_filter_passes_the_message_on_even_when_classifying_fails(demo_model, monkeypatch):
    """A fault inside classification still writes the message out, tagged error."""
    from nbtext.classifier.model import NaiveBayes
    from nbtext.classifier.purescore import PureModel

    def broken(self, *args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(NaiveBayes, "jll_and_lengths", broken)
    monkeypatch.setattr(PureModel, "joint_log_likelihood", broken)  # the pure path then hands it to numpy
    message = b"Subject: hi\n\nfree prize\n"
    result = run("filter", "-m", demo_model, input=message)
    assert result.exit_code == 0 and result.stdout_bytes == b"Subject: hi\nX-Nbtext-Class: error\n\nfree prize\n"
    assert "cannot classify the message (ValueError: a bug)" in result.stderr


def test_filter_twice_leaves_one_verdict_and_evidence(demo_model):
    message = b"Subject: win\nX-Nbtext-Class: ham\n  folded old verdict\nX-NBTEXT-Probability: 0.1\n\nfree prize now\n"
    once = run("filter", "-m", demo_model, "--explain", "2", input=message).stdout_bytes
    twice = run("filter", "-m", demo_model, "--explain", "2", input=once).stdout_bytes
    assert once == twice
    head, body = once.split(b"\n\n", 1)
    assert body == b"free prize now\n" and head.lower().count(b"x-nbtext-class") == 1
    assert b"folded old verdict" not in head
    evidence = [line for line in head.split(b"\n") if line.startswith(b"X-Nbtext-Evidence: ")]
    assert len(evidence) == 1 and evidence[0].count(b":") == 3  # header colon + two token:value pairs


def test_learn_forget_relearn_is_the_same_model(tmp_path):
    base = tmp_path / "base.model"
    assert run("train", "-o", base, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    learned = tmp_path / "learned.model"
    learned.write_bytes(base.read_bytes())
    assert run("train", "--update", "-m", learned, "spam=" + str(DEMO / "test" / "spam")).exit_code == 0
    forgot = tmp_path / "forgot.model"
    forgot.write_bytes(learned.read_bytes())
    unknown = tmp_path / "never-learned.txt"
    unknown.write_text("a message nobody taught the model")
    result = run("forget", "-m", forgot, DEMO / "test" / "spam", unknown)
    assert result.exit_code == 0
    assert f"not learned, left alone: {unknown}" in result.stderr and "forgot 13, not learned 1" in result.stderr

    def folded(path):  # the model file with its pending section folded in (what the 50th change writes)
        nbtext.load(path, fold=True).save(tmp_path / "folded.model")
        return (tmp_path / "folded.model").read_bytes()

    assert folded(forgot) == base.read_bytes()  # forgetting = never having learned
    assert run("train", "--update", "-m", forgot, "spam=" + str(DEMO / "test" / "spam")).exit_code == 0
    assert folded(forgot) == folded(learned)


def test_two_concurrent_updates_both_land(tmp_path):
    """Two `train --update` at once on one model (a procmail recipe learning from two
    folders): the lock makes them take turns, and the counts are those of one update with
    both sets of messages."""
    import subprocess
    import sys
    from pathlib import Path

    executable = Path(sys.executable).with_name("nbtext")
    first, second = tmp_path / "a", tmp_path / "b"
    for folder, label in ((first, "spam"), (second, "ham")):
        folder.mkdir()
        for i in range(300):
            (folder / f"{i}.txt").write_text(f"{label} message {i} with words {i % 17} and more {i % 5}")
    model, reference = tmp_path / "m", tmp_path / "ref"
    assert run("train", "-o", model, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    reference.write_bytes(model.read_bytes())
    runs = [
        subprocess.Popen([executable, "train", "--update", "-m", model, f"{label}={folder}"], stderr=subprocess.PIPE)
        for folder, label in ((first, "spam"), (second, "ham"))
    ]
    assert [p.wait() for p in runs] == [0, 0], [p.stderr.read() for p in runs]
    for p in runs:
        p.stderr.close()
    assert run("train", "--update", "-m", reference, f"spam={first}", f"ham={second}").exit_code == 0
    together, apart = nbtext.load(reference), nbtext.load(model)
    assert apart.class_count.tolist() == together.class_count.tolist()
    np.testing.assert_array_equal(apart.token_counts.dense, together.token_counts.dense)
    assert set(apart.journal.items()) == set(together.journal.items())


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_writing_a_model_keeps_its_mode_and_its_symlink(tmp_path, mode):
    import os

    real = tmp_path / "models" / "mail.model"
    real.parent.mkdir()
    assert run("train", "-o", real, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    os.chmod(real, mode)
    learned = nbtext.load(real).class_count.sum()
    link = tmp_path / "current.model"
    link.symlink_to(real)
    assert run("train", "--update", "-m", link, "spam=" + str(DEMO / "test" / "spam")).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    # (the spam preset's TONE pass learns some of the 13: those it does not already decide surely)
    assert (real.stat().st_mode & 0o777) == mode and learned < nbtext.load(real).class_count.sum() <= learned + 13


@pytest.mark.parametrize("jobs", [["-j", "1"], ["-j", "2"], []])
def test_a_slow_producers_lines_are_answered_as_they_come(demo_model, jobs):
    """`predict --lines` on a pipe: each line is answered before the next is written, with
    workers too (-j 2 held the answers back until four chunks were waiting, so a line
    written by hand got none until stdin closed) and with the default."""
    import select

    process = subprocess.Popen(
        [NBTEXT, "predict", "--lines", *jobs, "-m", demo_model], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        for n, line in enumerate([b"free prize money now\n", b"meeting notes for lunch\n"], 1):
            process.stdin.write(line)
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], 30.0)  # liveness, not speed
            assert ready, f"no answer to line {n} while the producer waits"
            assert process.stdout.readline().startswith(f"-:{n}\t".encode())
    finally:
        process.stdin.close()
        process.stdout.close()
    assert process.wait(30) == 0


def _readme_crontab_command():
    """The learn-on-error command of the README's crontab line, as a user copies it."""
    import re

    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if re.match(r"\*/10 \* \* \* \* ", line)]
    assert len(lines) == 1, lines
    return lines[0].split(None, 5)[5]


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_the_readmes_learn_on_error_recipe_learns_whatever_is_moved(tmp_path):
    """The crontab line as written: silent when it succeeds (cron mails whatever a job
    prints), with both folders empty or not; a spam moved to .Learn-Spam alone (none to
    .Learn-Ham) is learned and its file removed; then a ham moved alone is learned and put
    back in the inbox."""
    import os

    home = tmp_path / "home"
    model = home / ".nbtext" / "mail.model"
    model.parent.mkdir(parents=True)
    assert run("train", "-o", model, DEMO / "train" / "spam", DEMO / "train" / "ham").exit_code == 0
    for folder in (".Learn-Spam", ".Learn-Ham", "."):
        for part in ("cur", "new", "tmp"):
            (home / "Maildir" / folder / part).mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, "HOME": str(home), "PATH": f"{NBTEXT.parent}{os.pathsep}{os.environ['PATH']}"}

    def cron():
        return subprocess.run(["sh", "-c", _readme_crontab_command()], env=environment, capture_output=True, text=True)

    before = model.read_bytes()
    empty = cron()
    assert empty.returncode == 0 and empty.stderr == "" and empty.stdout == ""
    assert model.read_bytes() == before
    counts = dict(zip(nbtext.load(model).classes, nbtext.load(model).class_count))
    for folder, label, message, sub in (
        (".Learn-Spam", "spam", DEMO / "test" / "spam" / "spam-004.txt", "cur"),
        (".Learn-Ham", "ham", DEMO / "test" / "ham" / "ham-004.txt", "new"),
    ):
        moved = home / "Maildir" / folder / sub / "1700000000.M1P1.host:2,S"
        moved.write_bytes(message.read_bytes())
        result = cron()
        assert result.returncode == 0 and result.stderr == "" and result.stdout == "", result.stderr
        assert not moved.exists()
        assert (home / "Maildir" / "cur" / moved.name).exists() == (label == "ham")  # ham: back in the inbox
        counts[label] += 1
        assert dict(zip(nbtext.load(model).classes, nbtext.load(model).class_count)) == counts


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed here")
def test_a_reader_that_goes_away_ends_nbtext_as_it_ends_gnu_tools(demo_model, tmp_path):
    """`nbtext predict ... | head -1`: a quiet death by SIGPIPE, status 141 as `cat` or
    `grep` give (it was exit 1, which a `set -o pipefail` script could not tell from an
    error); filter, whose message is then not delivered, says so and exits 75."""
    lines = tmp_path / "big.txt"
    lines.write_text("free prize money now\nmeeting notes lunch\n" * 100_000)
    message = tmp_path / "big.eml"
    message.write_text("Subject: notes\n\n" + "meeting notes lunch\n" * 100_000)
    for command in (
        f"predict -m '{demo_model}' --lines < '{lines}'",
        f"predict -m '{demo_model}' < '{lines}'",
        f"predict -m '{demo_model}' '{DEMO}'",
        f"info -m '{demo_model}' --top 100",
        f"filter -m '{demo_model}' < '{message}'",
    ):
        result = subprocess.run(
            ["bash", "-c", f"'{NBTEXT}' {command} | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}"],
            capture_output=True,
            text=True,
        )
        status = int(result.stdout)
        if command.startswith("filter"):
            assert status == 75 and result.stderr == "Error: cannot write the message: Broken pipe\n"
        else:  # (a short output may be written whole before head goes: then 0)
            assert status in (141, 0) and result.stderr == "", (command, result)
    result = subprocess.run(
        [
            "bash",
            "-c",
            f"'{NBTEXT}' predict -m '{demo_model}' --lines < '{lines}' | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}",
        ],
        capture_output=True,
        text=True,
    )
    assert int(result.stdout) == 141 and result.stderr == ""
