"""Training and prediction on a Dask cluster (issue 11), on one machine with
distributed.LocalCluster: the same model file and the same output lines as a local run."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, one_line_error, real_corpus, run

distributed = pytest.importorskip("distributed", reason="the dask extra is not installed (pip install '.[dask]')")
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Port .* is already in use"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
MAIL = ROOT / "corpora" / "mail"
# the general defaults: classes spam and ham would train the spam preset, whose TONE pass no cluster splits
GENERAL = ["--preset", "general"]


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes with a nanny each (a killed worker is started again)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


@pytest.fixture(scope="module")
def threaded_cluster():
    """Workers as threads of this process: they see its memory:// file system."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        yield c


def trained_bytes(tmp_path, name, *args):
    result = run("train", *GENERAL, "-o", tmp_path / name, *args)
    assert result.exit_code == 0, result.stderr
    return (tmp_path / name).read_bytes()


@pytest.mark.parametrize(
    "options",
    [
        (),
        ("--model", "complement"),
        ("--model", "bernoulli", "--min-count", "3"),
        ("--calibration", "temperature", "--max-ham-flagged", "5%"),
        ("--max-bytes", "60"),
    ],
)
@pytest.mark.filterwarnings("default::UserWarning")  # --max-bytes says documents were cut
def test_train_on_a_cluster_writes_the_local_model(tmp_path, cluster, options):
    """Counting on the workers, and the second pass of tf-idf and UNK models too."""
    classes = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    local = trained_bytes(tmp_path, "local.model", *options, *classes)
    assert (
        trained_bytes(tmp_path, "cluster.model", "--scheduler", cluster.scheduler_address, *options, *classes) == local
    )


def test_train_on_a_cluster_from_the_environment_on_a_real_corpus(tmp_path, cluster, monkeypatch):
    train = real_corpus("spamassassin") / "train"
    local = trained_bytes(tmp_path, "local.model", train / "spam", train / "ham")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
    assert trained_bytes(tmp_path, "cluster.model", f"spam=file://{train}/spam", train / "ham") == local


@pytest.mark.parametrize(
    "options",
    [(), ("--proba", "--explain", "3"), ("--format", "json", "--alpha", "0.5"), ("--max-bytes", "400", "--proba")],
)
@pytest.mark.filterwarnings("default::UserWarning")  # --max-bytes says documents were cut
def test_predict_on_a_cluster_writes_the_local_lines_in_order(tmp_path, cluster, options):
    test = real_corpus("spamassassin") / "test"
    model = tmp_path / "m.model"
    assert run("train", "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    local = run("predict", "-m", model, *options, test / "ham", test / "spam")
    remote = run(
        "predict", "-m", model, "--scheduler", cluster.scheduler_address, *options, test / "ham", test / "spam"
    )
    assert remote.exit_code == 0, remote.stderr
    assert remote.stdout == local.stdout and remote.stdout.count("\n") > 1000


def test_fsspec_urls_are_read_by_the_workers(tmp_path, threaded_cluster):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for label in ("spam", "ham"):
        for path in sorted((MAIL / "train" / label).iterdir()):
            fs.pipe(f"/corpus/{label}/{path.name}", path.read_bytes())
    fs.pipe("/corpus/spam/.hidden", b"never read")
    local = trained_bytes(tmp_path, "local.model", MAIL / "train" / "spam", MAIL / "train" / "ham")
    address = threaded_cluster.scheduler_address
    assert (
        trained_bytes(tmp_path, "url.model", "--scheduler", address, "memory://corpus/spam", "ham=memory://corpus/ham")
        == local
    )
    result = run("predict", "-m", tmp_path / "url.model", "--scheduler", address, "memory://corpus/ham")
    assert result.exit_code == 0 and result.stdout.splitlines()[0].startswith("memory://corpus/ham/")
    one_line_error(
        run(
            "train",
            *GENERAL,
            "-o",
            tmp_path / "x",
            "--scheduler",
            address,
            "memory://nothing/here",
            MAIL / "train" / "ham",
        ),
        "memory://nothing/here does not exist",
    )


def test_a_worker_killed_mid_job_is_replaced_and_every_partition_counted_once(tmp_path, cluster):
    from nbtext.classifier.settings import make_settings
    from nbtext.jobs.cluster import train_on_cluster

    train = real_corpus("20news") / "train"
    classes = sorted(str(p) for p in train.iterdir())
    client = distributed.Client(cluster.scheduler_address, set_as_default=False)
    try:
        pids = client.run(os.getpid)
        done = {}
        job = threading.Thread(target=lambda: done.update(model=train_on_cluster(client, classes, make_settings())))
        job.start()
        deadline = time.monotonic() + 60
        while not any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.02)
        busy = next(worker for worker, tasks in client.processing().items() if tasks)
        os.kill(pids[busy], signal.SIGKILL)  # a crash, mid-partition
        killed_while_running = job.is_alive()
        job.join(timeout=300)
        assert killed_while_running and "model" in done
        assert busy not in client.run(os.getpid)  # that worker is gone (its nanny started a new one)
    finally:
        client.close()
    done["model"].save(tmp_path / "cluster.model")
    assert (tmp_path / "cluster.model").read_bytes() == trained_bytes(tmp_path, "local.model", *classes)


def test_cluster_errors_are_one_line(tmp_path, threaded_cluster, monkeypatch):
    spam, ham = MAIL / "train" / "spam", MAIL / "train" / "ham"
    address = threaded_cluster.scheduler_address
    monkeypatch.setattr("nbtext.jobs.cluster.__version__", "0.0.1")
    one_line_error(
        run("train", *GENERAL, "--scheduler", address, "-o", tmp_path / "x", spam, ham),
        "has nbtext 0.1.0, this client nbtext 0.0.1: install the same version on both",
    )
    monkeypatch.undo()
    one_line_error(
        run("train", *GENERAL, "--scheduler", address, "--shard", "1/2", "-o", tmp_path / "x", spam, ham),
        "without --shard",
    )
    assert run("train", "-o", tmp_path / "m.model", spam, ham).exit_code == 0
    here = run("predict", "--scheduler", "tcp://127.0.0.1:9", "-m", tmp_path / "m.model", input="free prize now")
    assert here.exit_code == 0 and here.stdout.strip() in ("spam", "ham")  # stdin is classified here
    one_line_error(run("train", *GENERAL, "-o", tmp_path / "x", "s3://bucket/spam", ham), "only --scheduler")
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were not installed
    one_line_error(
        run("train", *GENERAL, "--scheduler", address, "-o", tmp_path / "x", spam, ham),
        "--scheduler needs the dask extra: pip install 'nbtext[dask]'",
    )
    assert not (tmp_path / "x").exists()


def test_an_unreachable_scheduler_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("nbtext.jobs.cluster.CONNECT_SECONDS", 1)
    one_line_error(
        run(
            "train",
            *GENERAL,
            "--scheduler",
            "tcp://127.0.0.1:9",
            "-o",
            tmp_path / "x",
            MAIL / "train" / "spam",
            MAIL / "train" / "ham",
        ),
        "cannot reach the Dask scheduler at tcp://127.0.0.1:9",
    )


@pytest.mark.parametrize("address", ["notaurl", "tcp://nohost"])
def test_a_malformed_scheduler_address_is_one_line_at_once(tmp_path, address):
    """A Client that fails on its address waited 20 s at exit to close what it never
    opened, and printed a traceback ("Exception ignored in Client.__del__")."""
    import subprocess

    nbtext = os.path.join(os.path.dirname(sys.executable), "nbtext")
    started = time.perf_counter()
    result = subprocess.run(
        [
            nbtext,
            "train",
            *GENERAL,
            "--scheduler",
            address,
            "-o",
            tmp_path / "x",
            MAIL / "train" / "spam",
            MAIL / "train" / "ham",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # under the 20 s the old Client waited at exit, with room for a loaded machine's start-up and name lookup
    assert time.perf_counter() - started < 18
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"Error: --scheduler '{address}' is not a scheduler's address")


def test_a_document_that_cannot_be_read_is_reported_as_locally(tmp_path, cluster):
    import shutil

    spam = tmp_path / "spam"
    shutil.copytree(MAIL / "train" / "spam", spam)
    os.mkfifo(spam / "a-fifo")  # a worker must not wait on it forever
    local = run("train", *GENERAL, "-o", tmp_path / "local.model", spam, MAIL / "train" / "ham")
    remote = run(
        "train",
        *GENERAL,
        "--scheduler",
        cluster.scheduler_address,
        "-o",
        tmp_path / "cluster.model",
        spam,
        MAIL / "train" / "ham",
    )
    assert remote.exit_code == local.exit_code == 1
    said = f"nbtext: skipped {spam / 'a-fifo'}: cannot read it (not a regular file (a FIFO))"
    assert said in remote.stderr and said in local.stderr
    assert (tmp_path / "cluster.model").read_bytes() == (tmp_path / "local.model").read_bytes()


def test_the_environment_variable_leaves_what_a_cluster_cannot_do_local(tmp_path, monkeypatch):
    """$DASK_SCHEDULER_ADDRESS set (even to nothing that answers) does not stop a --table,
    a --shard or an --update training: those run here. Typed on the command line, it is
    an error for them."""
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:9")
    table = tmp_path / "t.tsv"
    table.write_text("ham\tlunch at noon\nspam\tfree prize now\nham\tnotes at noon\nspam\tclaim a free prize\n")
    assert run("train", "--table", table, "--min-count", "1", "-o", tmp_path / "t.model").exit_code == 0
    spam, ham = MAIL / "train" / "spam", MAIL / "train" / "ham"
    assert run("train", *GENERAL, "--shard", "1/2", "-o", tmp_path / "s.model", spam, ham).exit_code == 0
    one_line_error(
        run("train", "--scheduler", "tcp://127.0.0.1:9", "--table", table, "-o", tmp_path / "x"),
        "--scheduler trains from CLASS_DIR",
    )


def test_a_calibrated_training_on_a_cluster_is_the_local_one(tmp_path, cluster):
    classes = [MAIL / "train" / "spam", MAIL / "train" / "ham"]
    local = trained_bytes(tmp_path, "local.model", "--calibration", "temperature", *classes)
    assert (
        trained_bytes(
            tmp_path,
            "cluster.model",
            "--scheduler",
            cluster.scheduler_address,
            "--calibration",
            "temperature",
            *classes,
        )
        == local
    )


def test_cluster_jobs_show_progress_on_a_terminal(tmp_path, cluster):
    from test_progress import on_a_terminal

    test = real_corpus("20news") / "test"
    total = sum(len(files) for _, _, files in os.walk(test))
    model = tmp_path / "m.model"
    assert run("train", "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    stdout, shown = on_a_terminal("predict", "--scheduler", cluster.scheduler_address, "-m", model, test)
    assert stdout.count("\n") == total and "classifying on the cluster" in shown and f"/{total}" in shown
    train = real_corpus("20news") / "train"
    _, shown = on_a_terminal(
        "train", "--scheduler", cluster.scheduler_address, "-o", tmp_path / "t.model", *sorted(train.iterdir())
    )
    assert "counting on the cluster" in shown and "documents/s" in shown


def test_a_calibrated_cluster_training_with_few_entries_counted_makes_one_more_pass(tmp_path, cluster):
    """The candidates' bound assumes 80% of the listed entries are counted; with fewer (here
    FIFOs, said and skipped) the client takes the sample in one more pass: the same file."""
    spam, ham = tmp_path / "spam", tmp_path / "ham"
    for folder, words in ((spam, "free prize money click"), (ham, "lunch meeting report noon")):
        folder.mkdir()
        for i in range(70):
            (folder / f"{i}.txt").write_text(f"{words} w{i % 13} {words.split()[i % 4]}")
    for i in range(40):
        os.mkfifo(spam / f"fifo-{i}")
    local = run("train", "-q", *GENERAL, "-o", tmp_path / "local.model", spam, ham)
    remote = run(
        "train", "-q", *GENERAL, "--scheduler", cluster.scheduler_address, "-o", tmp_path / "cluster.model", spam, ham
    )
    assert remote.exit_code == local.exit_code == 1  # the FIFOs are reported
    assert "calibrated (T = " in local.stderr and "calibrated (T = " in remote.stderr
    assert (tmp_path / "cluster.model").read_bytes() == (tmp_path / "local.model").read_bytes()


def test_an_mbox_in_a_class_folder_is_its_messages_on_a_cluster_too(tmp_path, cluster):
    """As locally (documents.each_loaded): the workers read a file of a folder that is an mbox
    as its messages, not as one document."""
    spam = tmp_path / "spam"
    spam.mkdir()
    envelope = "From a@b.example Mon Jun 24 17:54:30 2002\n"
    (spam / "box").write_text(envelope + "Subject: win\n\nfree prize\n\n" + envelope + "Subject: cash\n\nclaim now\n")
    classes = [spam, MAIL / "train" / "ham"]
    local = trained_bytes(tmp_path, "local.model", *classes)
    assert trained_bytes(tmp_path, "cluster.model", "--scheduler", cluster.scheduler_address, *classes) == local
    from nbtext.jobs.loading import load

    local_model = load(tmp_path / "local.model")
    assert dict(zip(local_model.classes, local_model.class_count))["spam"] == 2


def test_predict_on_a_cluster_goes_on_past_a_missing_path_as_locally(tmp_path, cluster):
    """A PATH that does not exist is named and skipped, the others classified, exit 1, on
    a cluster as locally (the cluster refused the whole run)."""
    model = tmp_path / "m.model"
    assert run("train", "-o", model, MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    paths = (MAIL / "test" / "spam", tmp_path / "nope", MAIL / "test" / "ham")
    local = run("predict", "-m", model, *paths)
    remote = run("predict", "-m", model, "--scheduler", cluster.scheduler_address, *paths)
    assert remote.exit_code == local.exit_code == 1
    assert remote.stdout == local.stdout and remote.stdout.count("\n") == 26
    assert f"skipped {tmp_path / 'nope'}: cannot read it (No such file or directory)" in remote.stderr


def test_relative_paths_are_the_clients_on_a_cluster(tmp_path, cluster, monkeypatch):
    """A relative PATH names a file from the client's folder, whatever folder a worker runs
    in (every file was skipped as not found); names print as given."""
    import shutil

    shutil.copytree(MAIL / "train", tmp_path / "train")
    shutil.copytree(MAIL / "test", tmp_path / "test")
    monkeypatch.chdir(tmp_path)  # the workers started elsewhere
    local = trained_bytes(tmp_path, "local.model", "train/spam", "train/ham")
    assert (
        trained_bytes(tmp_path, "cluster.model", "--scheduler", cluster.scheduler_address, "train/spam", "train/ham")
        == local
    )
    here = run("predict", "-m", tmp_path / "local.model", "test/spam")
    there = run("predict", "-m", tmp_path / "local.model", "--scheduler", cluster.scheduler_address, "test/spam")
    assert there.exit_code == 0 and there.stdout == here.stdout and there.stdout.startswith("test/spam/")


@pytest.mark.parametrize("command", ["train", "predict"])
def test_the_notice_of_documents_cut_on_the_workers_is_said_as_locally(tmp_path, cluster, command):
    """A worker of the cluster reads the documents: its --max-bytes notice went to the
    worker's own stderr (a log) and the client said nothing, where a local run says it once.
    Run twice: a worker process serves many runs, and says each notice once in its life."""
    from conftest import NBTEXT

    args = [*GENERAL, "-o", tmp_path / "m"] if command == "train" else ["-m", tmp_path / "m"]
    if command == "predict":
        assert run("train", "-o", tmp_path / "m", MAIL / "train" / "spam", MAIL / "train" / "ham").exit_code == 0
    for _ in range(2):
        result = subprocess.run(
            [NBTEXT, command, "--scheduler", cluster.scheduler_address, "--max-bytes", "20", *args]
            + [MAIL / "train" / "spam", MAIL / "train" / "ham"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr.count("nbtext: warning: documents over 20 bytes are cut") == 1, result.stderr
