"""nbtext in a real Dovecot (docs/mail.md, "Dovecot"), with the files contrib/dovecot ships:
SpamAssassin messages delivered through LMTP and the LDA are tagged and spam is filed into Junk, every
byte kept; moving messages into and out of Junk over IMAP learns them, and the model is then
the one a fresh training of their final classes writes; a model that is missing, broken or
locked never loses a message nor fails a move. Each test starts its own server
(tests/dovecot_server.py) and stops it by its PID; without the Dovecot packages they skip."""

import fcntl
import json
import re
import shutil
import subprocess
import time

import pytest

import nbtext

from conftest import GENERAL, ROOT, real_corpus, small_spamassassin_model
from dovecot_server import NBTEXT, SENDER, SHIPPED, Dovecot, mail_user_cannot_run_nbtext, missing_packages
from test_docs import fenced_blocks

RETURN_PATH = f"Return-Path: <{SENDER}>\n".encode()  # the line Dovecot's LMTP puts first


@pytest.fixture(scope="module")
def spamassassin():
    missing = missing_packages()
    if missing is not None:
        pytest.skip(missing)
    return real_corpus("spamassassin")


@pytest.fixture(scope="module")
def small_model(spamassassin, tmp_path_factory):
    """(conftest's small_spamassassin_model, the folder of the spam/ and ham/ it was trained from)."""
    folder = tmp_path_factory.mktemp("small")
    return small_spamassassin_model(spamassassin, folder), folder


@pytest.fixture(scope="module")
def service():
    """Whether nbtext runs through the shipped script service (nbtext-service.conf) rather than as
    the mail user: here when the mail user cannot reach nbtext (a Python below a closed folder)."""
    return mail_user_cannot_run_nbtext() is not None


@pytest.fixture
def dovecot(tmp_path, small_model, service):
    server = Dovecot(tmp_path)
    try:
        server.install(small_model[0], service=service)
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("via, each", [("lmtp", 10), ("lda", 3)])
def test_delivered_messages_are_tagged_and_spam_is_filed_into_junk(dovecot, spamassassin, via, each):
    """Each message comes out of Dovecot as it went in, with nbtext's two verdict lines at the
    end of its header block (and LMTP's Return-Path line first), in the folder the verdict
    names; nbtext's own filter gives the same bytes."""
    dovecot.start()
    added = RETURN_PATH if via == "lmtp" else b""
    messages = [f for label in ("spam", "ham") for f in sorted((spamassassin / "test" / label).iterdir())[:each]]
    folders = {"INBOX": 0, "Junk": 0}
    for f in messages:
        message = sent(f)
        dovecot.deliver(message, via)
        folder, stored = dovecot.last_delivered()
        folders[folder] += 1
        filtered = subprocess.run(
            [NBTEXT, "filter", "-m", dovecot.model], input=added + transported(message), capture_output=True, check=True
        ).stdout
        assert stored == filtered, f
        verdict = re.search(
            rb"^X-Nbtext-Class: (\S+)\nX-Nbtext-Probability: [0-9.]+\nX-Nbtext-Score: [-0-9.inf]+ / [0-9.inf]+\n",
            stored,
            re.M,
        )
        assert verdict, f
        assert (folder == "Junk") == (verdict[1] == b"spam"), f
        assert stored.replace(verdict[0], b"", 1) == added + transported(message), f
    assert min(folders.values()) >= each * 2 // 3, folders  # the small model tells them apart


@pytest.mark.parametrize("model_is", ["missing", "broken"])
def test_without_a_working_model_the_message_is_delivered_untouched(dovecot, spamassassin, model_is):
    """nbtext filter exits 1 (the message written out, tagged error): Dovecot drops its output
    and goes on with the message as it came, delivered to INBOX; the reason is in its log."""
    if model_is == "missing":
        dovecot.model.unlink()
    else:
        dovecot.model.write_bytes(b"not a model\n" * 10)
    dovecot.start()
    for f in sorted((spamassassin / "test" / "spam").iterdir())[:3]:
        dovecot.deliver(sent(f))
        assert dovecot.last_delivered() == ("INBOX", RETURN_PATH + transported(sent(f)))
    # The script goes on after the failed filter (it is not ended, leaving an implicit keep):
    # a verdict line the sender wrote himself is then what its header test sees.
    forged = b"X-Nbtext-Class: spam\n" + sent(sorted((spamassassin / "test" / "ham").iterdir())[0])
    dovecot.deliver(forged)
    assert dovecot.last_delivered() == ("Junk", RETURN_PATH + transported(forged))
    assert "nbtext" in dovecot.log_text() and "Error" in dovecot.log_text(), dovecot.log_text()
    # the line names the user's model, once Error: (Dovecot's script service logs `nbtext: Error: ` and
    # the line, from a process of no user; nbtext's own `Error: ` made it `Error: Error:`)
    said = [line for line in dovecot.log_text().splitlines() if "mail.model" in line]
    assert (
        not dovecot.service
        or said
        and all(f"filter -m {dovecot.model}: " in line and line.count("Error:") <= 1 for line in said)
    ), said


def sent(path):
    """A SpamAssassin file as an MTA hands it over: without its mbox envelope line."""
    message = path.read_bytes()
    return message.split(b"\n", 1)[1] if message.startswith(b"From ") else message


def transported(message):
    """The bytes Dovecot stores of a message sent over SMTP/LMTP: LF line ends, ending in one."""
    message = message.replace(b"\r\n", b"\n")
    return message if message.endswith(b"\n") else message + b"\n"


def delivered_to(dovecot, files, folder, wanted):
    """The stored bytes of `wanted` messages of `files` that Dovecot delivered into `folder`."""
    return [stored for _, stored in delivered_files(dovecot, files, folder, wanted)]


def test_moving_into_and_out_of_junk_learns_the_final_classes(dovecot, spamassassin, small_model):
    """Messages moved over IMAP (MOVE, or COPY + UID STORE \\Deleted + EXPUNGE) into Junk are
    learned as spam, out of Junk as ham, into Trash not at all; one moved back and forth is
    learned once, under its last class. The model is then, byte for byte, a fresh training of
    the small model's messages and the moved ones under their final classes."""
    dovecot.start()
    inbox = delivered_to(dovecot, sorted((spamassassin / "test" / "ham").iterdir()), "INBOX", 4)
    junk = delivered_to(dovecot, sorted((spamassassin / "test" / "spam").iterdir()), "Junk", 3)
    client = dovecot.imap()
    client.create("Archive")
    where = {m: "INBOX" for m in inbox} | {m: "Junk" for m in junk}
    learned = {}

    def move(message, to, how="MOVE"):
        dovecot.move(client, message, where[message], to, how)
        if to == "Junk":
            learned[message] = "spam"
        elif where[message] == "Junk" and to != "Trash":
            learned[message] = "ham"
        where[message] = to

    move(inbox[0], "Junk")  # ham called spam
    for to, how in [("Junk", "MOVE"), ("INBOX", "COPY"), ("Junk", "COPY"), ("Archive", "MOVE"), ("Junk", "MOVE")]:
        move(inbox[1], to, how)  # back and forth: spam at last
    move(inbox[2], "Junk", "COPY"), move(inbox[2], "INBOX")  # and back: ham
    move(inbox[3], "Junk"), move(inbox[3], "Trash")  # spam, then thrown away
    move(junk[0], "INBOX")  # spam called ham
    move(junk[1], "Trash")  # not learned
    move(junk[2], "Archive", "COPY")  # out of Junk elsewhere: ham
    for folder in ("INBOX", "Junk", "Trash", "Archive"):  # none left marked for removal by a script
        client.select(folder)
        _, flags = client.fetch("1:*", "(FLAGS)")
        assert not [f for f in flags if f and b"\\Deleted" in f], (folder, flags)
    client.logout()
    assert learned == {
        inbox[0]: "spam",
        inbox[1]: "spam",
        inbox[2]: "ham",
        inbox[3]: "spam",
        junk[0]: "ham",
        junk[2]: "ham",
    }

    for message, folder in where.items():  # every message once, in the folder it was moved to, its bytes kept
        holding = [
            name
            for name in ("INBOX", "Junk", "Trash", "Archive")
            if message in [p.read_bytes() for p in dovecot.folder(name)]
        ]
        assert holding == [folder]
    assert "nbtext" not in dovecot.log_text()  # no learner said anything: each one succeeded

    corpus = dovecot.world / "final"  # the small model's messages and the moved ones, in their final classes
    shutil.copytree(small_model[1], corpus, ignore=shutil.ignore_patterns("*.model*"))
    for n, (message, label) in enumerate(learned.items()):
        (corpus / label / f"moved-{n}").write_bytes(message)
    fresh = dovecot.world / "fresh.model"
    subprocess.run(
        [NBTEXT, "train", "-q", *GENERAL, "-o", fresh, f"spam={corpus / 'spam'}", f"ham={corpus / 'ham'}"], check=True
    )
    folded = dovecot.world / "folded.model"
    nbtext.load(str(dovecot.model), fold=True).save(str(folded))  # the pending records folded in, as a learner does
    assert folded.read_bytes() == fresh.read_bytes()


def documents_of(model):
    """{class: its documents} as `nbtext info` says them."""
    info = subprocess.run([NBTEXT, "info", "-m", model], capture_output=True, check=True).stdout.decode()
    return {name: int(n) for name, n in re.findall(r"^  (\S+)\t(\d+) documents", info, re.M)}


@pytest.mark.parametrize("server", ["MOVE", "COPY"])
def test_the_moves_imap_scan_makes_are_not_learned_and_a_users_are(dovecot, spamassassin, server):
    """Issue 49: where the server runs the learn-on-move scripts, imap-scan's moves of 20 spam
    into Junk gave the model 20 more spam documents (it learned its own verdicts). imap-scan
    marks what it moves with $NbtextMoved (with MOVE, or COPY, \\Deleted and UID EXPUNGE),
    and the scripts skip it: the model's documents are as they were. A user's moves are still
    learned: a message of the user's moved into Junk, and one imap-scan moved taken out of Junk
    (as ham) and put back (as spam again: out of Junk it lost the keyword), and one of
    imap-scan's thrown into Trash, then taken back and moved into Junk (as spam)."""
    without_move = "imap_capability = IMAP4rev1 LITERAL+ SASL-IR ID ENABLE IDLE NAMESPACE UIDPLUS SPECIAL-USE"
    dovecot.start(extra=without_move if server == "COPY" else "")
    dovecot.append("INBOX", [sent(f) for f in sorted((spamassassin / "test" / "spam").iterdir())[:20]])
    before = documents_of(dovecot.model)
    scan = subprocess.run(
        [NBTEXT, "imap-scan", "-m", dovecot.model, "--move-to", "Junk", "--state", dovecot.world / "scan.state"]
        + [f"imap://alice@127.0.0.1:{dovecot.imap_port}/INBOX"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "NBTEXT_IMAP_PASSWORD": "secret"},
        check=True,
    )
    moved = [line for line in scan.stdout.decode().splitlines() if line.endswith("\tmoved to Junk")]
    assert len(moved) >= 15 and len(dovecot.folder("Junk")) == len(moved), scan.stdout.decode()
    assert documents_of(dovecot.model) == before, dovecot.log_text()

    client = dovecot.imap()
    dovecot.seen.update(p for name in ("INBOX", "Junk") for p in dovecot.folder(name))  # (not delivered)
    (ham,) = delivered_to(dovecot, sorted((spamassassin / "test" / "ham").iterdir()), "INBOX", 1)
    dovecot.move(client, ham, "INBOX", "Junk", "MOVE" if server == "MOVE" else "COPY")
    assert documents_of(dovecot.model) == {"spam": before["spam"] + 1, "ham": before["ham"]}
    nbtexts = dovecot.folder("Junk")[0].read_bytes()
    dovecot.move(client, nbtexts, "Junk", "INBOX", "MOVE" if server == "MOVE" else "COPY")
    assert documents_of(dovecot.model) == {"spam": before["spam"] + 1, "ham": before["ham"] + 1}
    dovecot.move(client, nbtexts, "INBOX", "Junk", "MOVE" if server == "MOVE" else "COPY")
    assert documents_of(dovecot.model) == {"spam": before["spam"] + 2, "ham": before["ham"]}
    thrown = dovecot.folder("Junk")[1].read_bytes()  # one of imap-scan's into Trash, back to INBOX, into Junk
    for source, target in [("Junk", "Trash"), ("Trash", "INBOX")]:
        dovecot.move(client, thrown, source, target)
    assert documents_of(dovecot.model) == {"spam": before["spam"] + 2, "ham": before["ham"]}  # (none from Junk)
    dovecot.move(client, thrown, "INBOX", "Junk")
    assert documents_of(dovecot.model) == {"spam": before["spam"] + 3, "ham": before["ham"]}
    client.logout()


@pytest.mark.parametrize("model_is", ["locked", "missing", "broken"])
def test_a_learner_that_fails_never_fails_the_move(dovecot, spamassassin, service, model_is):
    """The learner cannot learn (another learner holds the model's lock past the pipe's time
    limit, the model is missing, or broken): the MOVE still succeeds, the message is in Junk
    whole and nowhere else, the model file is as it was, and the reason is in Dovecot's log.
    Past the time limit a learner run directly is ended; one run by the script service waits on
    and learns the message once the lock is let go."""
    dovecot.start(extra="plugin {\n  sieve_pipe_exec_timeout = 2s\n}\n")  # the shipped 10s, shortened
    (message,) = delivered_to(dovecot, sorted((spamassassin / "test" / "ham").iterdir()), "INBOX", 1)
    if model_is == "missing":
        dovecot.model.unlink()
    elif model_is == "broken":
        dovecot.model.write_bytes(b"NBTEXT but not a model\n")
    before = dovecot.model.read_bytes() if dovecot.model.exists() else None
    client = dovecot.imap()
    with open(f"{dovecot.model}.lock", "a") as lock:
        if model_is == "locked":
            fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        dovecot.move(client, message, "INBOX", "Junk")
        took = time.monotonic() - started
        # (a learner stopped by the time limit through the script service goes on waiting for
        # the lock, and learns once it is let go: the model is read before that)
        assert (dovecot.model.read_bytes() if dovecot.model.exists() else None) == before
    client.logout()
    assert [p.read_bytes() for p in dovecot.folder("Junk")] == [message]
    assert dovecot.folder("INBOX") == []
    assert "nbtext" in dovecot.log_text(), dovecot.log_text()
    if model_is == "locked":
        assert 2 <= took < 10, took  # held up to the time limit, then the command went on
        if service:  # the script service's learner goes on waiting, and learns once the lock is let go
            deadline = time.monotonic() + 60
            while dovecot.model.read_bytes() == before:
                assert time.monotonic() < deadline, "the waiting learner never learned"
                time.sleep(0.1)
        else:  # run directly, Dovecot ended it
            assert "Forcibly terminated with signal 15" in dovecot.log_text()


def test_the_docs_show_the_shipped_files_as_they_are():
    """docs/mail.md's Dovecot section names every file of contrib/dovecot, and each of its text
    blocks is lines of one of them, as they are (so the page cannot drift from what is tested)."""
    page = (ROOT / "docs" / "mail.md").read_text(encoding="utf-8")
    section = page[page.index("## Dovecot") :]
    section = section[: section.find("\n## ", 1) % (len(section) + 1)]  # (to the next section, if any)
    shipped = {f.name: f.read_text().splitlines() for f in SHIPPED.iterdir()}
    assert all(f"`{name}`" in section for name in shipped), sorted(shipped)
    blocks = [lines for language, lines in fenced_blocks(section) if language == "text"]
    assert len(blocks) >= 4
    for block in blocks:
        assert any(block == lines[i : i + len(block)] for lines in shipped.values() for i in range(len(lines))), block


# Dovecot's LMTP as it comes: Return-Path, Delivered-To and `Received: ... by HOST with LMTP ... for
# <user>; DATE` on top of each message stored (the tests' server turns the last two off elsewhere)
LMTP_TRACE = "lmtp_add_received_header = yes\nlmtp_hdr_delivery_address = final\n"
# every header line read (`*`), received and return-path among them: a token of the trace would show
READ_EVERY_HEADER = [*GENERAL, "--headers", "subject,from,to,content-type,received,return-path,*"]


def test_a_stored_message_is_the_message_the_filter_judged(dovecot, spamassassin, small_model):
    """With LMTP's own trace lines on top of each stored message (docs/mail.md, "What nbtext reads
    of a stored message"): predict of a stored copy gives the probability filter wrote into it;
    ham moved into Junk and back leaves the model a fresh training of the files it was sent from
    (the trace's tokens, of this server, the user and the month, are not learned); and a message
    learned from its stored copy (moved out of Junk) is forgotten by the file it was sent from,
    the model back to what it was."""
    corpus, world = small_model[1], dovecot.world
    trained = world / "trained.model"
    subprocess.run(
        [NBTEXT, "train", "-q", *READ_EVERY_HEADER, "-o", trained, f"spam={corpus / 'spam'}", f"ham={corpus / 'ham'}"],
        check=True,
    )
    dovecot.model.write_bytes(trained.read_bytes())  # (the mail user's file, its owner kept)
    dovecot.start(extra=LMTP_TRACE)
    ham = delivered_files(dovecot, sorted((spamassassin / "test" / "ham").iterdir()), "INBOX", 3)
    ((spam_file, spam),) = delivered_files(dovecot, sorted((spamassassin / "test" / "spam").iterdir()), "Junk", 1)
    for _, stored in [*ham, (spam_file, spam)]:
        assert stored.startswith(b"Return-Path: <") and b" with LMTP" in stored.split(b"\n\n")[0]
        shown = re.search(rb"^X-Nbtext-Probability: ([0-9.]+)$", stored, re.M)[1].decode()
        assert f"{spam_probability(dovecot.model, stored, world):.{len(shown.split('.')[1])}f}" == shown

    client = dovecot.imap()
    for _, stored in ham:  # ham called spam by mistake, and put back: learned as ham, from the stored copy
        dovecot.move(client, stored, "INBOX", "Junk")
        dovecot.move(client, stored, "Junk", "INBOX")
    final = world / "final"
    shutil.copytree(corpus, final, ignore=shutil.ignore_patterns("*.model*"))
    for f, _ in ham:
        (final / "ham" / f.name).write_bytes(sent(f))
    fresh = world / "fresh.model"
    subprocess.run(
        [NBTEXT, "train", "-q", *READ_EVERY_HEADER, "-o", fresh, f"spam={final / 'spam'}", f"ham={final / 'ham'}"],
        check=True,
    )
    assert folded(dovecot.model, world) == fresh.read_bytes()
    original = world / "spam.eml"
    original.write_bytes(sent(spam_file))
    assert spam_probability(dovecot.model, spam, world) == spam_probability(dovecot.model, sent(spam_file), world)

    # The spam learned as ham from its stored copy (moved out of Junk), then forgotten by its file.
    dovecot.move(client, spam, "Junk", "INBOX")
    client.logout()
    assert folded(dovecot.model, world) != fresh.read_bytes()  # it was learned
    forgotten = subprocess.run([NBTEXT, "forget", "-m", dovecot.model, original], capture_output=True, text=True)
    assert forgotten.returncode == 0 and "forgot 1," in forgotten.stderr, forgotten.stderr
    assert folded(dovecot.model, world) == fresh.read_bytes()
    assert "nbtext" not in dovecot.log_text()  # no learner said anything: each one succeeded


def delivered_files(dovecot, files, folder, wanted):
    """[(file, its stored bytes)] of `wanted` messages of `files` that Dovecot delivered into `folder`."""
    found = []
    for f in files:
        dovecot.deliver(sent(f))
        landed, stored = dovecot.last_delivered()
        if landed == folder:
            found.append((f, stored))
        if len(found) == wanted:
            return found
    raise AssertionError(f"fewer than {wanted} of {len(files)} messages were delivered into {folder}")


def spam_probability(model, message, world):
    """The probability of spam `nbtext predict --proba` prints for the message of these bytes."""
    path = world / "predicted.eml"
    path.write_bytes(message)
    printed = subprocess.run(
        [NBTEXT, "predict", "--format", "json", "--proba", "-m", model, path], capture_output=True, check=True
    ).stdout
    return json.loads(printed)["probabilities"]["spam"]


def folded(model, world):
    """The model file with its pending records folded in: what a fresh training of the same writes."""
    into = world / "folded.model"
    nbtext.load(str(model), fold=True).save(str(into))
    return into.read_bytes()
