"""Every input kind, through the command line: mbox, Maildir, streams, tables, fastText."""

import json
import os
import sys
import threading
from pathlib import Path

import pytest

import nbtext
from nbtext.classifier.settings import make_settings
from nbtext.reading.documents import PAUSE
from nbtext.reading.sources import stream_records

from conftest import ROOT, one_line_error, run

NBTEXT = Path(sys.executable).with_name("nbtext")
GENERAL = ["--preset", "general"]  # the general defaults (classes spam and ham would train the spam preset)

SPAM = [b"Subject: win money\n\nCheap pills, free prize, click now", b"Subject: offer\n\nFree prize money now"]
HAM = [b"Subject: lunch\n\nMeeting notes for lunch on Thursday", b"Subject: notes\n\nThe meeting notes are attached"]


def write_mbox(path, messages):
    with open(path, "wb") as f:
        for i, message in enumerate(messages):
            f.write(b"From sender@example.com  Mon Jun 24 17:54:3%d 2002\n" % i + message + b"\n\n")


def write_maildir(path, messages):
    for sub in ("cur", "new", "tmp"):
        (path / sub).mkdir(parents=True)
    for i, message in enumerate(messages):
        (path / ("cur" if i % 2 else "new") / f"{1000 + i}.host:2,S").write_bytes(message)
    (path / "tmp" / "unfinished").write_bytes(b"Subject: partial\n\nnot delivered yet")


@pytest.fixture
def mail_model(tmp_path):
    write_mbox(tmp_path / "spam.mbox", SPAM * 3)
    write_maildir(tmp_path / "ham", HAM * 3)
    path = tmp_path / "mail.model"
    # every message learned (the spam preset's TONE pass would leave out the copies it already decides right)
    result = run("train", "--min-count", "1", "--learn", "all", "-o", path, tmp_path / "spam.mbox", tmp_path / "ham")
    assert result.exit_code == 0, result.stderr
    return path


def test_train_from_mbox_and_maildir(mail_model):
    model = nbtext.load(mail_model)
    assert model.classes == ["ham", "spam"]  # spam.mbox is class 'spam'
    assert model.class_count.tolist() == [6, 6]  # tmp/ is not read
    assert "subject:prize" not in model.vocabulary.tokens and "subject:offer" in model.vocabulary.tokens
    assert "partial" not in model.vocabulary.tokens


def test_the_headers_trained_with_are_stored_and_used(tmp_path):
    """--headers travels in the model: a loaded model reads the same headers, so a word of
    the From header is a token of a --headers from model and none of a subject-only one."""
    spam = [b"From: deals@shop.example\nSubject: hello\n\nsee you", b"From: deals@shop.example\nSubject: hi\n\nsee"]
    ham = [b"From: alice@home.example\nSubject: hello\n\nsee you", b"From: alice@home.example\nSubject: hi\n\nsee"]
    write_mbox(tmp_path / "spam.mbox", spam)
    write_mbox(tmp_path / "ham.mbox", ham)
    probe = b"From: deals@shop.example\nSubject: hello\n\nsee you"
    for headers, tokens in (("subject,from", ["subject", "from"]), ("subject", ["subject"])):
        path = tmp_path / f"{headers}.model"
        result = run(
            "train",
            *GENERAL,
            "--min-count",
            "1",
            "--headers",
            headers,
            "-o",
            path,
            tmp_path / "spam.mbox",
            tmp_path / "ham.mbox",
        )
        assert result.exit_code == 0, result.stderr
        model = nbtext.load(path)
        assert model.settings["tokenizer"]["headers"] == tokens
        assert ("from:shop" in model.vocabulary.tokens) == ("from" in tokens)
        assert model.tokenize(probe) == nbtext.train(
            spam + ham, ["s", "s", "h", "h"], headers=tuple(tokens), min_count=1
        ).tokenize(probe)
        label = run("predict", "-m", path, input=probe).stdout.strip()
        assert label == ("spam" if "from" in tokens else model.classes[0])  # a tie without From: the first


def test_predict_names_mbox_messages_path_n(mail_model, tmp_path):
    write_mbox(tmp_path / "inbox", [SPAM[0], HAM[0], SPAM[1]])
    result = run("predict", "-m", mail_model, tmp_path / "inbox")
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [r[0] for r in rows] == [f"{tmp_path / 'inbox'}:{n}" for n in (1, 2, 3)]
    assert [r[1] for r in rows] == ["spam", "ham", "spam"]


def test_envelopes_as_real_mailboxes_write_them(mail_model, tmp_path):
    """A sender with spaces (two SpamAssassin messages have one: Python's mailbox module
    wrote them so, and they vanished into their neighbours), and a first message with no
    header line: every message is its own document."""
    with open(tmp_path / "inbox", "wb") as f:
        f.write(b"From MAILER-DAEMON Fri Jul  8 12:08:34 2011\nno headers at all, free prize\n\n")
        f.write(b"From zvfjenphuq@[1086695621] [ufa]  Sun Aug  5 09:51:15 2001\n" + SPAM[0] + b"\n\n")
        f.write(b"From - Sun Aug  5 09:51:15 2001\n" + HAM[0] + b"\n\nFrom here on, notes\n\n")
        f.write(b"From a@b Aug  5 09:51:15 2001\n" + SPAM[1] + b"\n")
    result = run("predict", "-m", mail_model, tmp_path / "inbox")
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [r[0] for r in rows] == [f"{tmp_path / 'inbox'}:{n}" for n in (1, 2, 3, 4)]
    assert [r[1] for r in rows[1:]] == ["spam", "ham", "spam"]


def test_a_file_of_one_message_is_named_by_its_path_however_given(mail_model, tmp_path):
    folder = tmp_path / "one"
    folder.mkdir()
    write_mbox(folder / "msg", [SPAM[0]])
    for args, stdin in (([folder], None), ([folder / "msg"], None), (["--files-from", "-"], f"{folder / 'msg'}\n")):
        result = run("predict", "-m", mail_model, *args, input=stdin)
        assert result.stdout.split("\t")[0] == str(folder / "msg"), (args, result.stdout)


def test_a_message_learned_from_a_folder_is_known_in_an_mbox(mail_model, tmp_path):
    """The journal keys a message without its envelope line: relearning the training
    messages from an mbox moves them instead of counting them twice."""
    write_mbox(tmp_path / "again.mbox", SPAM)
    result = run("train", "--update", "-m", mail_model, "ham=" + str(tmp_path / "again.mbox"))
    assert result.exit_code == 0 and "added 0, moved 2, already known 0" in result.stderr


def test_maildir_reads_cur_and_new_only(mail_model, tmp_path):
    write_maildir(tmp_path / "box", [SPAM[0], HAM[1]])
    rows = [l.split("\t") for l in run("predict", "-m", mail_model, tmp_path / "box").stdout.splitlines()]
    assert sorted(os.path.basename(os.path.dirname(r[0])) for r in rows) == ["cur", "new"]
    assert {r[1] for r in rows} == {"spam", "ham"}
    (tmp_path / "box" / "cur" / "sub").mkdir()  # a folder there is no message (it was "skipped: ... a device")
    again = run("predict", "-m", mail_model, tmp_path / "box")
    assert again.exit_code == 0 and again.stderr == "" and len(again.stdout.splitlines()) == 2


def test_lines_and_nul_streams(mail_model):
    result = run("predict", "-m", mail_model, "--lines", input="free prize money\n\nmeeting notes\r\n")
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [r[0] for r in rows] == ["-:1", "-:2", "-:3"]  # the empty line is a document too
    assert rows[0][1] == "spam" and rows[2][1] == "ham"
    result = run("predict", "-m", mail_model, "-0", input="free prize\nmoney\0meeting notes\0")
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [(r[0], r[1]) for r in rows] == [("-:1", "spam"), ("-:2", "ham")]


def test_a_text_file_starting_with_from_is_no_mbox(mail_model, tmp_path):
    (tmp_path / "note.txt").write_text("From tomorrow on: free prize money\nFrom then on, more prizes\n")
    rows = run("predict", "-m", mail_model, tmp_path / "note.txt").stdout.splitlines()
    assert [r.split("\t")[0] for r in rows] == [str(tmp_path / "note.txt")]  # one document, not PATH:N


def test_lines_of_a_file_are_named_path_n(mail_model, tmp_path):
    (tmp_path / "t.txt").write_text("free prize\nmeeting notes\n")
    out = run("predict", "-m", mail_model, "--lines", tmp_path / "t.txt").stdout
    assert [l.split("\t")[0] for l in out.splitlines()] == [f"{tmp_path / 't.txt'}:1", f"{tmp_path / 't.txt'}:2"]


def test_stream_records_pause_when_no_input_is_ready():
    read_end, write_end = os.pipe()
    os.write(write_end, b"first\nsecond\nthird-partial")
    with os.fdopen(read_end, "rb") as stream:
        records = stream_records(stream, b"\n")
        assert next(records) == b"first" and next(records) == b"second"
        assert next(records) is PAUSE  # nothing more to read yet: the consumer may flush

        def finish():
            os.write(write_end, b" done\n")
            os.close(write_end)

        threading.Timer(0.05, finish).start()
        assert [r for r in records if r is not PAUSE] == [b"third-partial done"]


def test_sms_style_headerless_table(tmp_path):
    table = tmp_path / "sms.tsv"
    table.write_text(
        "ham\tsee you at lunch\nspam\tWIN a free prize now\nham\tlunch at noon?\nspam\tfree prize call now\n"
    )
    assert run("train", "--table", table, "-o", tmp_path / "m", "--min-count", "1").exit_code == 0
    report = json.loads(run("eval", "-m", tmp_path / "m", "--table", table, "--format", "json").stdout)
    assert report["n"] == 4 and report["accuracy"] == 1.0
    out = run("predict", "-m", tmp_path / "m", "--table", table, "--text-col", "2").stdout
    assert out.splitlines() == ["ham", "spam", "ham", "spam"]  # one label per row
    out = run("predict", "-m", tmp_path / "m", "--table", table, "--proba").stdout
    assert [l.split("\t")[:2] for l in out.splitlines()] == [
        [f"{table}:1", "ham"],
        [f"{table}:2", "spam"],
        [f"{table}:3", "ham"],
        [f"{table}:4", "spam"],
    ]


def test_csv_with_header_names_and_quoted_newlines(tmp_path):
    table = tmp_path / "data.csv"
    table.write_text(
        'id,text,category\n1,"free prize, now\nclick",spam\n2,"lunch, notes",ham\n3,"prize money",spam\n4,"lunch meeting",ham\n'
    )
    result = run(
        "train",
        "--table",
        table,
        "--label-col",
        "category",
        "--text-col",
        "text",
        "--min-count",
        "1",
        "-o",
        tmp_path / "m",
    )
    assert result.exit_code == 0, result.stderr
    assert nbtext.load(tmp_path / "m").class_count.tolist() == [2, 2]
    bad = run("train", "--table", table, "--label-col", "nope", "--text-col", "text", "-o", tmp_path / "m")
    assert bad.exit_code == 1 and "has no column 'nope' (its columns: id, text, category)" in bad.stderr


def test_fasttext_lines(tmp_path):
    data = tmp_path / "ft.txt"
    data.write_text(
        "__label__spam free prize now\n__label__ham lunch notes\n\n__label__spam prize money\n__label__ham meeting lunch\n"
    )
    assert run("train", "--fasttext", data, "--min-count", "1", "-o", tmp_path / "m").exit_code == 0
    model = nbtext.load(tmp_path / "m")
    assert model.classes == ["ham", "spam"] and model.class_count.tolist() == [2, 2]
    data.write_text("no label here\n")
    result = run("train", "--fasttext", data, "-o", tmp_path / "m")
    assert "has no __label__" in result.stderr and result.exit_code == 1  # skipped by name, then nothing to train


def test_dash_is_stdin_for_fasttext_and_table_inputs(general_demo_model, tmp_path):
    demo_model = general_demo_model  # (the spam preset's band would leave a line unsure: eval's n counts the decided)
    lines = "__label__spam free prize now\n__label__ham lunch notes at noon\n"
    data = tmp_path / "ft.txt"
    data.write_text(lines)
    from_file = run("predict", "-m", demo_model, "--fasttext", data)
    from_stdin = run("predict", "-m", demo_model, "--fasttext", "-", input=lines)
    assert from_stdin.exit_code == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout.replace(str(data), "-") and from_stdin.stdout.startswith("-:1\t")
    table = "text\nfree prize now\nlunch notes at noon\n"
    (tmp_path / "t.tsv").write_text(table)
    args = ("predict", "-m", demo_model, "--text-col", "text", "--table")
    assert run(*args, "-", input=table).stdout == run(*args, tmp_path / "t.tsv").stdout != ""
    report = run("eval", "-m", demo_model, "--format", "json", "--fasttext", "-", input=lines)
    assert report.exit_code == 0 and json.loads(report.stdout)["n"] == 2


@pytest.mark.parametrize("option", ["--fasttext", "--table", "--files-from"])
def test_an_input_that_cannot_be_opened_is_named_as_read_not_written(demo_model, tmp_path, option):
    # (a folder where a file is wanted: an OSError used to come out as "cannot write output")
    one_line_error(run("predict", "-m", demo_model, option, tmp_path), f"cannot read {tmp_path}: Is a directory")
    if option != "--files-from":
        one_line_error(run("train", option, tmp_path, "-o", tmp_path / "m"), f"cannot read {tmp_path}")


def test_a_pipe_is_refused_where_train_reads_its_corpus_twice(tmp_path):
    # presence features with an UNK feature: which documents hold a pruned token is found in
    # a second reading, which a pipe (here stdin) answers with nothing
    lines = "".join(f"__label__{'spam' if i % 2 else 'ham'} word{i % 7} word{i} shared\n" for i in range(40))
    (tmp_path / "ft.txt").write_text(lines)
    train = ("train", "--model", "bernoulli", "--calibration", "none", "-o")
    assert run(*train, tmp_path / "file.model", "--fasttext", tmp_path / "ft.txt").exit_code == 0
    result = run(*train, tmp_path / "pipe.model", "--fasttext", "-", input=lines)
    one_line_error(result, "stdin can be read only once, and this training reads its corpus twice")
    assert not (tmp_path / "pipe.model").exists()
    os.mkfifo(tmp_path / "fifo")  # stat'ed, never opened: the refusal comes before any reading
    result = run(*train, tmp_path / "pipe.model", f"spam={tmp_path / 'fifo'}", f"ham={tmp_path / 'ft.txt'}")
    one_line_error(result, f"{tmp_path / 'fifo'}, a pipe, can be read only once")
    # found before reading; and should a second reading still differ (a file changed, a pipe
    # where none was expected), training stops rather than count two different corpora
    from nbtext.jobs.training import train_corpus
    from nbtext.reading.documents import Document

    docs = [
        Document(f"d{i}", text, label)
        for i, (label, text) in enumerate(line[len("__label__") :].split(" ", 1) for line in lines.splitlines())
    ]
    readings = iter([docs, docs[:25]])
    with pytest.raises(nbtext.NbtextError, match="the second reading found 25 documents where the first found 40"):
        train_corpus(lambda: [next(readings)], make_settings(model="bernoulli", calibration="none"))
    # one reading (counts): stdin gives the file's model, byte for byte
    result = run("train", "-o", tmp_path / "stdin.model", "--fasttext", "-", input=lines)
    assert result.exit_code == 0, result.stderr
    run("train", "-o", tmp_path / "file.model", "--fasttext", tmp_path / "ft.txt")
    assert (tmp_path / "stdin.model").read_bytes() == (tmp_path / "file.model").read_bytes()
    categorical = run(
        "train",
        "--model",
        "categorical",
        "--table",
        "-",
        "--label-col",
        "y",
        "-o",
        tmp_path / "c",
        input="x\ty\na\tb\n",
    )
    one_line_error(categorical, "reads its table twice (the header, then the rows): give a regular file, not stdin")


def test_real_sms_table_matches_the_folders(tmp_path):
    from conftest import SHARED_CORPORA

    table = SHARED_CORPORA / "SMSSpamCollection.tsv"
    if not table.exists():
        pytest.skip("no shared corpora here")
    from nbtext.reading.sources import table_documents

    rows = list(table_documents(str(table)))
    assert len(rows) == 5574 and {d.label for d in rows} == {"ham", "spam"}
    assert sum(d.label == "spam" for d in rows) == 747


def test_unreadable_documents_are_reported_and_skipped(mail_model, tmp_path):
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "a").write_bytes(SPAM[0])
    os.symlink(tmp_path / "gone", folder / "b")  # a dangling link cannot be read, even by root
    (folder / "c").write_bytes(HAM[0])
    result = run("predict", "-m", mail_model, folder)
    assert [l.split("\t")[1] for l in result.stdout.splitlines()] == ["spam", "ham"]
    assert f"nbtext: skipped {folder / 'b'}: cannot read it" in result.stderr
    assert "2 documents done, 1 skipped" in result.stderr and result.exit_code == 1


@pytest.fixture
def pools(monkeypatch):
    """The worker pools started (their sizes), with -j's default set to hand over after
    the first chunk (AUTO_SECONDS 0, any document heavy enough) to 2 workers."""
    import nbtext.jobs.parallel as parallel

    started, ordered = [], parallel._ordered
    monkeypatch.setattr(parallel, "_ordered", lambda *args: started.append(args[2]) or ordered(*args))
    monkeypatch.setattr(parallel, "AUTO_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "WORKER_WORTHY", 0.0)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    return started


def test_jobs_give_the_same_output(mail_model, tmp_path, monkeypatch, pools):
    """-j 1, -j 2 and the default, which hands what is left after AUTO_SECONDS (here 0:
    after the first chunk) to the cores' workers, write the same lines in the same order."""
    import nbtext.jobs.parallel as parallel
    from nbtext.jobs.parallel import CHUNK

    copies = 2 * CHUNK // len(SPAM + HAM) + 3  # three chunks, the last one short: order kept across them
    write_mbox(tmp_path / "inbox", (SPAM + HAM) * copies)
    one = run("predict", "-m", mail_model, "-j", "1", tmp_path / "inbox")
    two = run("predict", "-m", mail_model, "-j", "2", tmp_path / "inbox")
    assert one.exit_code == two.exit_code == 0
    assert one.stdout == two.stdout and len(one.stdout.splitlines()) == copies * len(SPAM + HAM)
    assert pools == [2]  # -j 2's
    auto = run("predict", "-m", mail_model, tmp_path / "inbox")
    assert auto.exit_code == 0 and auto.stdout == one.stdout and pools == [2, 2]  # the rest went to 2 workers
    monkeypatch.setattr(parallel, "AUTO_SECONDS", 3600.0)
    assert run("predict", "-m", mail_model, tmp_path / "inbox").stdout == one.stdout and pools == [2, 2]  # no pool
    monkeypatch.setattr(parallel, "AUTO_SECONDS", 0.0)
    monkeypatch.setattr(parallel, "WORKER_WORTHY", 3600.0)  # documents too light to be worth sending
    assert run("predict", "-m", mail_model, tmp_path / "inbox").stdout == one.stdout and pools == [2, 2]  # no pool


@pytest.mark.parametrize("jobs", [None, "2"])
def test_every_document_is_scored_once_whatever_batches_its_bytes_cut(mail_model, tmp_path, monkeypatch, pools, jobs):
    """A batch cut by its bytes is yielded when the next document does not fit, which the
    batcher then holds: the default -j, which scores the first chunk here and hands the rest
    to workers, started a new batcher over the documents and lost that one without a word
    (one of 20 messages of 4 MB). Generated sizes: every document is written once, in order,
    as -j 1 writes them."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    import nbtext.reading.documents as documents

    monkeypatch.setattr(documents, "BATCH_BYTES", 3000)
    runs = iter(range(10**6))

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(sizes=st.lists(st.integers(40, 4000), min_size=1, max_size=10))
    def every_document_once(sizes):
        folder = tmp_path / str(next(runs))
        folder.mkdir()
        for i, size in enumerate(sizes):
            (folder / f"{i:02}").write_bytes((SPAM + HAM)[i % 4] + b" word" * (size // 5))
        one = run("predict", "-m", mail_model, "-j", "1", folder)
        other = run("predict", "-m", mail_model, *(["-j", jobs] if jobs else []), folder)
        assert one.exit_code == other.exit_code == 0
        assert [line.split("\t")[0] for line in one.stdout.splitlines()] == [
            str(folder / f"{i:02}") for i in range(len(sizes))
        ]
        assert other.stdout == one.stdout

    every_document_once()


def test_default_jobs_are_the_cores_this_process_may_use(monkeypatch):
    """At most 4; a process pinned to one core (taskset, a container's cpuset) gets one;
    without fork (the workers are forks) there are none to start."""
    import multiprocessing

    import nbtext.jobs.parallel as parallel

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert parallel.default_jobs() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert parallel.default_jobs() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert parallel.default_jobs() == 2
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert parallel.default_jobs() == 1


def test_eval_hands_a_long_job_to_workers_with_the_same_report(mail_model, tmp_path, pools):
    from nbtext.jobs.parallel import CHUNK

    copies = CHUNK // len(SPAM) + 1
    write_mbox(tmp_path / "spam.mbox", SPAM * copies)
    write_mbox(tmp_path / "ham.mbox", HAM * copies)
    args = (
        "eval",
        "-m",
        mail_model,
        "--format",
        "json",
        f"spam={tmp_path / 'spam.mbox'}",
        f"ham={tmp_path / 'ham.mbox'}",
    )
    one = run(*args, "-j", "1")
    auto = run(*args)
    assert one.exit_code == auto.exit_code == 0 and pools == [2]
    assert json.loads(auto.stdout) == json.loads(one.stdout) and json.loads(one.stdout)["n"] > CHUNK


def test_files_from_a_list_lines_or_nul_separated(demo_model, tmp_path):

    files = sorted(str(p) for p in (ROOT / "corpora" / "mail" / "test" / "spam").iterdir())[:3]
    direct = run("predict", "-m", demo_model, *files).stdout
    listing = tmp_path / "list"
    listing.write_text("\n".join(files) + "\n")
    assert run("predict", "-m", demo_model, "--files-from", listing).stdout == direct
    assert run("predict", "-m", demo_model, "-0", "--files-from", "-", input="\0".join(files)).stdout == direct
    assert run("predict", "-m", demo_model, "--files-from", "-", input="").stdout == ""
    # a listed file that is gone (renamed since it was listed) is said and skipped; the rest are classified
    gone = str(tmp_path / "gone.eml")
    result = run("predict", "-m", demo_model, "--files-from", "-", input="\n".join(files[:1] + [gone] + files[1:]))
    assert result.stdout == direct and result.exit_code == 1
    assert (
        result.stderr == f"nbtext: skipped {gone}: cannot read it (No such file or directory)\n"
        "nbtext: 3 documents done, 1 skipped\n"
    )


@pytest.mark.filterwarnings("default::UserWarning")  # the command line prints it as one line
def test_label_paths_expand_the_home_folder_and_a_path_twice_counts_once(tmp_path):
    home = tmp_path / "home"
    for label in ("spam", "ham"):
        (home / label).mkdir(parents=True)
        (home / label / "1.txt").write_text(f"{label} words")
    result = run(
        "train",
        "--min-count",
        "1",
        "-o",
        tmp_path / "m",
        "junk=~/spam",
        "ham=~/ham",
        "more=~/ham",
        env={"HOME": str(home)},
    )
    assert result.exit_code == 0, result.stderr
    assert "is given twice (as 'ham' and 'more'): read once, as 'ham'" in result.stderr
    model = nbtext.load(tmp_path / "m")
    assert model.classes == ["ham", "junk"] and model.class_count.tolist() == [1, 1]
    assert run("-V").stdout == run("--version").stdout != ""


def test_read_at_most_reads_what_a_plain_read_would(tmp_path, monkeypatch):
    """read_at_most(f, n) == f.read(n) for regular files smaller and larger than n, from the
    start or after a first read, for a pipe, and for a file that grew after its size was taken."""
    import nbtext.reading.documents as documents

    data = bytes(range(256)) * 40
    path = tmp_path / "doc"
    path.write_bytes(data)
    for limit in (1, 100, len(data), len(data) + 1, 10**7):
        for skip in (0, 7):
            with open(path, "rb") as f, open(path, "rb") as g:
                f.read(skip), g.read(skip)
                assert documents.read_at_most(f, limit) == g.read(limit)
    read, write = os.pipe()
    os.write(write, data[:3000])
    os.close(write)
    with os.fdopen(read, "rb") as f:
        assert documents.read_at_most(f, 10**7) == data[:3000]
    real_fstat = os.fstat
    stale = lambda fd: os.stat_result((*real_fstat(fd)[:6], 10, *real_fstat(fd)[7:]))  # noqa: E731  size 10
    monkeypatch.setattr(documents.os, "fstat", stale)
    with open(path, "rb") as f:
        assert documents.read_at_most(f, 10**7) == data  # read on past the stale size
    with open(path, "rb") as f:
        assert documents.read_at_most(f, 500) == data[:500]


def test_every_spamassassin_message_written_as_one_mbox_is_read_back(tmp_path):
    """Python's mailbox module writes the 6,047 messages as one mbox: 6,047 documents, each
    the message it was (two envelope senders with spaces once merged four into two)."""
    import mailbox

    from conftest import real_corpus
    from nbtext.reading.mbox import is_separator
    from nbtext.reading.sources import documents

    files = sorted(p for p in real_corpus("spamassassin").rglob("*") if p.is_file() and not p.name.startswith("."))
    box = mailbox.mbox(tmp_path / "all.mbox")
    for path in files:
        box.add(mailbox.mboxMessage(path.read_bytes()))
    box.flush()
    box.close()
    read = list(documents(str(tmp_path / "all.mbox")))
    assert len(read) == len(files) == 6047
    for doc in read:  # no message holds its neighbour: mailbox quotes a body's "From " lines as ">From "
        assert not any(is_separator(part.split(b"\n", 1)[0]) for part in doc.data.split(b"\n\n")[1:]), doc.name


@pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
def test_every_output_line_stays_parseable_whatever_the_file_names(mail_model, tmp_path):
    """A tab, line feed, carriage return or backslash in a name is escaped in TSV (\\t, \\n,
    \\r, \\\\): one line, three fields per document; JSON stays valid UTF-8 for a name that is
    not UTF-8 (its bytes as \\udcXX escapes)."""
    import subprocess

    folder = os.fsencode(tmp_path / "names")
    os.mkdir(folder)
    for name in (b"a\tb.eml", b"c\nd.eml", b"e\rf.eml", b"g\\h.eml", b"i\xffj.eml"):
        with open(folder + b"/" + name, "wb") as f:
            f.write(SPAM[0])
    tsv = subprocess.run([NBTEXT, "predict", "-m", mail_model, folder], capture_output=True, check=True).stdout
    rows = [line.split(b"\t") for line in tsv.split(b"\n")[:-1]]
    assert len(rows) == 5 and all(len(row) == 3 for row in rows)
    assert {row[0].rsplit(b"/", 1)[1] for row in rows} == {
        b"a\\tb.eml",
        b"c\\nd.eml",
        b"e\\rf.eml",
        b"g\\\\h.eml",
        b"i\xffj.eml",
    }
    os.mkfifo(folder + b"/k\nl.fifo")  # skipped by name: the name on one line of stderr as well
    skipped = subprocess.run([NBTEXT, "predict", "-m", mail_model, folder], capture_output=True).stderr
    assert skipped.count(b"\n") == 2 and b"skipped " + folder + b"/k\\nl.fifo: " in skipped
    os.unlink(folder + b"/k\nl.fifo")
    out = subprocess.run(
        [NBTEXT, "predict", "-m", mail_model, "--format", "json", folder], capture_output=True, check=True
    ).stdout
    records = [json.loads(line) for line in out.decode("utf-8").splitlines()]  # strict UTF-8
    assert len(records) == 5 and any(r["path"].endswith("i\udcffj.eml") for r in records)


def test_an_mbox_is_an_mbox_wherever_it_is_found(mail_model, tmp_path):
    """An mbox inside a class folder is its messages, as when named directly (`junk=mboxdir`
    with a 54-message mbox trained 1 document)."""
    folder = tmp_path / "junk"
    folder.mkdir()
    write_mbox(folder / "box", [SPAM[i % 2] + b" %d" % i for i in range(54)])
    (folder / "plain.txt").write_bytes(b"free prize")
    model = tmp_path / "m.model"
    train = ("train", "--min-count", "1", "--learn", "all", "-o", model, f"junk={folder}", f"ham={tmp_path / 'ham'}")
    assert run(*train).exit_code == 0
    assert dict(zip(nbtext.load(model).classes, nbtext.load(model).class_count))["junk"] == 55
    names = [line.split("\t")[0] for line in run("predict", "-m", model, folder).stdout.splitlines()]
    assert names == [f"{folder / 'box'}:{n}" for n in range(1, 55)] + [str(folder / "plain.txt")]


GOOD_ROWS = [
    ("spam", "free prize money now"),
    ("ham", "lunch notes at noon"),
    ("spam", "cheap prize pills"),
    ("ham", "meeting notes agenda"),
    ("spam", "win free money"),
    ("ham", "project lunch review"),
]
BAD_RECORDS = {  # a reader's bad record: (file's text with it at line 3, what the skip says)
    "table: a short row": ("table", "ham\n", "the row has 1 column, where 2 are needed"),
    "table: an empty label": ("table", "\tno label here\n", "its label is empty"),
    "fasttext: no label": ("fasttext", "no label here\n", "the line has no __label__"),
    "fasttext: an empty label": ("fasttext", "__label__ some text\n", "its label is empty"),
}


@pytest.mark.parametrize("bad", BAD_RECORDS)
@pytest.mark.parametrize(
    "command",
    [
        ["train", "--min-count", "1", "-o", "{tmp}/m"],
        ["eval", "-m", "{model}"],
        ["eval", "--online"],
        ["eval", "--folds", "2", "--min-count", "1"],
    ],
)
def test_one_bad_record_is_skipped_by_name_and_the_rest_go_on(demo_model, tmp_path, bad, command):
    """A short table row, a fastText line without a label, an empty label: each stopped the
    whole run (train, eval, eval --online, eval --folds) with one error; now it is skipped by
    name, the rest are read, and the status is 1, as for a file that cannot be read."""
    kind, record, said = BAD_RECORDS[bad]
    lines = [f"{label}\t{text}\n" if kind == "table" else f"__label__{label} {text}\n" for label, text in GOOD_ROWS]
    data = tmp_path / ("data.tsv" if kind == "table" else "data.txt")
    data.write_text("".join(lines[:2] + [record] + lines[2:]))
    args = [a.format(tmp=tmp_path, model=demo_model) for a in command]
    result = run(*args, f"--{kind}", data, *(["--format", "json"] if args[0] == "eval" else []))
    assert result.exit_code == 1, result.stderr
    assert f"nbtext: skipped {data}:3: cannot read it ({said}" in result.stderr and "Traceback" not in result.stderr
    if args[0] == "train":
        assert nbtext.load(tmp_path / "m").class_count.tolist() == [3, 3]
    else:  # every good record, and only those, evaluated
        report = json.loads(result.stdout)
        folds = report["models"]["multinomial"]["folds"] if "models" in report else None
        assert (sum(f["n"] for f in folds) if folds else report["n"] + report.get("unsure", 0)) == len(GOOD_ROWS)


def test_predict_skips_a_short_table_row_by_name(demo_model, tmp_path):
    data = tmp_path / "data.tsv"
    data.write_text("free prize\nlunch\tnotes\n\nmeeting notes\n")  # row 2 only has a second column
    result = run("predict", "-m", demo_model, "--table", data, "--text-col", "2")
    assert result.exit_code == 1 and f"skipped {data}:1: cannot read it (the row has 1 column" in result.stderr
    assert len(result.stdout.splitlines()) == 1


def test_eval_of_nothing_readable_is_an_error_not_a_report_of_dashes(demo_model, tmp_path):
    for text in ("", "ham\n"):
        (tmp_path / "t.tsv").write_text(text)
        result = run("eval", "-m", demo_model, "--table", tmp_path / "t.tsv")
        assert result.exit_code == 1 and result.stdout == ""
        assert "no documents to evaluate" in result.stderr


def test_a_long_name_is_said_short(demo_model, tmp_path):
    """A --files-from line of megabytes was echoed whole to stderr in its `skipped` line."""
    listed = tmp_path / "list"
    listed.write_text("b" * 3_000_000 + "\n")
    result = run("predict", "-m", demo_model, "--files-from", listed)
    assert result.exit_code == 1 and len(result.stderr) < 1000
    assert "... (3,000,000 characters): cannot read it" in result.stderr
