"""IMAP folders as PATHs and `nbtext imap-scan` (docs/mail.md, "IMAP folders"), against a real
Dovecot of the tests' own (tests/dovecot_server.py) holding real SpamAssassin messages: training
from imap:// folders writes the model a training from the same messages in their Maildir
folders writes, byte for byte (train; train --update and forget once their pending records are
folded); reading a folder sets no flag;
the scan moves spam, remembers what it scanned and starts again when UIDVALIDITY changes;
every failure is one line that never holds the password. Without the Dovecot packages they skip."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nbtext

from dovecot_server import NBTEXT, PASSWORD, USER, Dovecot, LoopbackProxy
import test_dovecot
from test_dovecot import sent
from conftest import GENERAL, free_port
from test_hostile_models import assemble, parts, with_key

spamassassin = test_dovecot.spamassassin  # the fixture: the real corpus, or a skip (one line) without Dovecot

EACH = 30  # messages of each class put into the server's folders


def messages(spamassassin, split, label, n, skip=0):
    """`n` messages of a class, as an MTA hands them over (no mbox envelope line)."""
    return [sent(f) for f in sorted((spamassassin / split / label).iterdir())[skip : skip + n]]


@pytest.fixture(scope="module")
def mail_model(spamassassin, tmp_path_factory):
    """A model of 300 messages of each class of SpamAssassin's train split."""
    folder = tmp_path_factory.mktemp("model")
    for label in ("spam", "ham"):
        (folder / label).mkdir()
        for f in sorted((spamassassin / "train" / label).iterdir())[:300]:
            shutil.copy(f, folder / label / f.name)
    model = folder / "mail.model"
    run("train", "-q", "-o", model, f"spam={folder / 'spam'}", f"ham={folder / 'ham'}")
    return model


@pytest.fixture
def dovecot(tmp_path, spamassassin):
    server = Dovecot(tmp_path)
    try:
        server.install(None)
        yield server
    finally:
        server.stop()


def run(*args, check=True, env=None, password=PASSWORD):
    """nbtext ARGS, the password in its environment variable (never on the command line)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NBTEXT_IMAP")}
    if password is not None:
        environment["NBTEXT_IMAP_PASSWORD"] = password
    done = subprocess.run([NBTEXT, *map(str, args)], capture_output=True, env=environment | (env or {}), timeout=300)
    if check:
        assert done.returncode == 0, done.stderr.decode()
    return done


def url(dovecot, folder, scheme="imap"):
    port = dovecot.imaps_port if scheme == "imaps" else dovecot.imap_port
    return f"{scheme}://{USER}@127.0.0.1:{port}/{folder}"


def maildir(dovecot, folder):
    return dovecot.home / "Maildir" / f".{folder}"


def flags(dovecot, folder):
    """{UID: flags} of a folder's messages (the test's own session: EXAMINE, FETCH FLAGS)."""
    client = dovecot.imap()
    assert client.select(folder, readonly=True)[0] == "OK"
    _, data = client.uid("FETCH", "1:*", "(FLAGS)")
    client.logout()
    found = {}
    for line in data:
        if line:
            found[int(re.search(rb"UID (\d+)", line)[1])] = set(re.search(rb"FLAGS \(([^)]*)\)", line)[1].split())
    return found


def stored(dovecot, folder):
    """The bytes of a folder's messages as Dovecot stores them, sorted."""
    client = dovecot.imap()
    assert client.select(folder, readonly=True)[0] == "OK"
    _, data = client.uid("FETCH", "1:*", "(BODY.PEEK[])")
    client.logout()
    return sorted(item[1] for item in data if isinstance(item, tuple))


def folded(path):
    """The bytes of the model at `path` with its pending records folded in, as a learner does."""
    nbtext.load(str(path), fold=True).save(str(path) + ".folded")
    return Path(str(path) + ".folded").read_bytes()


def test_training_from_imap_folders_is_training_from_their_maildirs(dovecot, spamassassin, tmp_path):
    """train, train --update and forget of imap:// folders write, byte for byte, the model the
    same command writes from the same messages in the folders' Maildirs (an update's and a
    forget's once their pending records are folded in); the label of an
    imap:// CLASS_DIR is the folder's last name."""
    dovecot.start()
    dovecot.append("Spam", messages(spamassassin, "train", "spam", EACH))
    dovecot.append("Ham", messages(spamassassin, "train", "ham", EACH))
    dovecot.append("More/spam", messages(spamassassin, "test", "spam", 5))
    over_imap, from_maildir = tmp_path / "imap.model", tmp_path / "maildir.model"
    # (the general defaults: every message learned, as the counts below say)
    run("train", *GENERAL, "-o", over_imap, f"spam={url(dovecot, 'Spam')}", f"ham={url(dovecot, 'Ham')}")
    run("train", *GENERAL, "-o", from_maildir, f"spam={maildir(dovecot, 'Spam')}", f"ham={maildir(dovecot, 'Ham')}")
    assert over_imap.read_bytes() == from_maildir.read_bytes()
    scores = [
        run("eval", "-m", over_imap, f"spam={spam}", f"ham={ham}").stdout
        for spam, ham in [
            (url(dovecot, "Spam"), url(dovecot, "Ham")),
            (maildir(dovecot, "Spam"), maildir(dovecot, "Ham")),
        ]
    ]
    assert scores[0] == scores[1] and f"documents\t{2 * EACH}\n".encode() in scores[0]

    # (an update's pending records are in the order read: UIDs, or a Maildir's sorted file names)
    run("train", "--update", "-m", over_imap, url(dovecot, "More/spam"))  # labelled `spam`, its last name
    run("train", "--update", "-m", from_maildir, f"spam={maildir(dovecot, 'More.spam')}")
    assert folded(over_imap) == folded(from_maildir)
    run("forget", "-m", over_imap, url(dovecot, "Spam"))
    run("forget", "-m", from_maildir, maildir(dovecot, "Spam"))
    assert folded(over_imap) == folded(from_maildir)
    dovecot.append("Empty", [])
    nothing = run("predict", "-m", over_imap, url(dovecot, "Empty"))
    assert nothing.stdout == b"" and b"no documents" in nothing.stderr
    info = run("info", "-m", over_imap).stdout.decode()
    assert re.search(r"spam\D+5\b", info) and re.search(rf"ham\D+{EACH}\b", info), info


def test_predict_over_imap_names_each_message_and_sets_no_flag(dovecot, spamassassin, mail_model):
    """predict of an imap:// folder (imaps:// with the server's certificate) names each message
    by its UID, calls it what predict of its stored bytes calls it, and leaves every flag as it
    was: no \\Seen."""
    dovecot.start(tls=True)
    batch = messages(spamassassin, "test", "spam", 4) + messages(spamassassin, "test", "ham", 4)
    uids = dovecot.append("Inbox2", batch)
    before = flags(dovecot, "Inbox2")
    assert all(not (f & {b"\\Seen"}) for f in before.values())
    for scheme in ("imap", "imaps"):
        lines = run(
            "predict", "--ca-file", dovecot.certificate, "-m", mail_model, url(dovecot, "Inbox2", scheme)
        ).stdout.decode()
        rows = [line.split("\t") for line in lines.splitlines()]
        assert [row[0] for row in rows] == [f"{url(dovecot, 'Inbox2', scheme)}/;UID={uid}" for uid in uids]
        for row, message in zip(rows, batch):
            one = subprocess.run(
                [NBTEXT, "predict", "-m", mail_model], input=message, capture_output=True, check=True
            ).stdout
            assert row[1] == one.decode().strip()
    assert flags(dovecot, "Inbox2") == before


# A server without MOVE (the capabilities it says after login, without it): COPY, \\Deleted, UID EXPUNGE
WITHOUT_MOVE = "imap_capability = IMAP4rev1 LITERAL+ SASL-IR ID ENABLE IDLE NAMESPACE UIDPLUS SPECIAL-USE"


@pytest.mark.parametrize("server", ["MOVE", "COPY"])
def test_imap_scan_moves_spam_remembers_and_rescans_a_new_uidvalidity(
    dovecot, spamassassin, mail_model, tmp_path, server
):
    """The scan moves what it calls spam to Junk (with MOVE, or where the server has none with
    COPY, \\Deleted and UID EXPUNGE), every message kept once, no \\Seen set, none left
    \\Deleted; a second run reads nothing old; new messages alone are read next; --dry-run
    moves and remembers nothing; a folder recreated (a new UIDVALIDITY) is scanned from its start."""
    dovecot.start(extra=WITHOUT_MOVE if server == "COPY" else "")
    arrived = messages(spamassassin, "test", "spam", 10) + messages(spamassassin, "test", "ham", 10)
    dovecot.append("Scan", arrived)
    state = tmp_path / "scan.state"
    scan = ["imap-scan", "-m", mail_model, "--move-to", "Junk", "--state", state, url(dovecot, "Scan")]

    dry = run(*scan[:-1], "--dry-run", scan[-1])
    assert len(dry.stdout.splitlines()) == 20 and not state.exists()
    assert len(stored(dovecot, "Scan")) == 20 and stored(dovecot, "Junk") == []

    first = run(*scan).stdout.decode().splitlines()
    assert len(first) == 20
    called_spam = [line for line in first if line.split("\t")[1] == "spam"]
    assert all(line.endswith("\tmoved to Junk") for line in called_spam)
    assert 8 <= len(called_spam) <= 12, first
    over_imap = [m.replace(b"\n", b"\r\n") for m in arrived]
    got = sorted(stored(dovecot, "Scan") + stored(dovecot, "Junk"))
    assert got == sorted(over_imap)  # each kept, once
    assert len(stored(dovecot, "Junk")) == len(called_spam)
    left = [f for folder in ("Scan", "Junk") for f in flags(dovecot, folder).values()]
    assert len(left) == 20 and not any(f & {b"\\Seen", b"\\Deleted"} for f in left)
    assert dry.stdout.decode().replace("would be moved", "moved").splitlines() == first

    assert run(*scan).stdout == b""  # nothing new: nothing read
    wrong_model = run(*[a if a != mail_model else tmp_path / "missing.model" for a in scan], check=False)
    assert wrong_model.returncode == 1 and b"does not exist" in wrong_model.stderr  # said with no new mail too
    dovecot.append("Scan", messages(spamassassin, "test", "spam", 2, skip=10))
    again = run(*scan).stdout.decode().splitlines()
    assert len(again) == 2

    client = dovecot.imap()  # the folder recreated: its UIDs start again, under a new UIDVALIDITY
    assert client.delete("Scan")[0] == "OK"
    client.logout()
    dovecot.append("Scan", messages(spamassassin, "test", "ham", 3, skip=10))
    assert len(run(*scan).stdout.splitlines()) == 3


def test_a_urls_uidvalidity_is_the_folders_or_nothing_is_read_or_moved(dovecot, spamassassin, mail_model, tmp_path):
    """RFC 5092's `FOLDER;UIDVALIDITY=N` against Dovecot: the folder of that UIDVALIDITY is read
    and scanned; recreated (a new UIDVALIDITY), the same URL is refused in one line by predict
    and imap-scan, nothing moved and the scan's state as it was (the URL was read as the folder
    whatever its UIDVALIDITY)."""
    dovecot.start()
    dovecot.append("Scan", messages(spamassassin, "test", "spam", 3))
    client = dovecot.imap()
    client.select("Scan", readonly=True)
    validity = int(client.response("UIDVALIDITY")[1][-1])
    client.logout()
    pinned = f"{url(dovecot, 'Scan')};UIDVALIDITY={validity}"
    state = tmp_path / "state"
    scan = ["imap-scan", "-m", mail_model, "--move-to", "Junk", "--state", state, pinned]
    assert len(run("predict", "-m", mail_model, pinned).stdout.splitlines()) == 3
    assert len(run(*scan[:-1], "--dry-run", pinned).stdout.splitlines()) == 3

    client = dovecot.imap()  # the folder recreated: a new UIDVALIDITY
    assert client.delete("Scan")[0] == "OK"
    client.logout()
    dovecot.append("Scan", messages(spamassassin, "test", "spam", 2, skip=3))
    for args in (["predict", "-m", mail_model, pinned], scan):
        refused = run(*args, check=False)
        said = refused.stderr.decode()
        assert refused.returncode == 1 and said.count("\n") == 1 and f"not the URL's {validity}" in said, said
        assert refused.stdout == b""
    assert not state.exists() and len(stored(dovecot, "Scan")) == 2 and stored(dovecot, "Junk") == []


def test_imap_scan_decides_by_the_models_own_unsure_below(dovecot, spamassassin, mail_model, tmp_path):
    """A model trained with --unsure-below P: imap-scan leaves unsure what the same model given
    --unsure-below P leaves unsure, and its own --unsure-below overrides the model's."""
    dovecot.start()
    dovecot.append("Scan", messages(spamassassin, "test", "spam", 10) + messages(spamassassin, "test", "ham", 10))
    own = tmp_path / "own.model"
    header, payload = parts(mail_model.read_bytes())
    own.write_bytes(assemble(with_key(header, "settings.unsure_below", 0.999999), payload))

    def scanned(model, *options):
        scan = ["imap-scan", "-m", model, "--dry-run", "--move-to", "Junk", *options, url(dovecot, "Scan")]
        return run(*scan[:-1], "--state", tmp_path / "state", scan[-1]).stdout

    assert scanned(own) == scanned(mail_model, "--unsure-below", "0.999999")
    assert b"\tunsure\t" in scanned(own)
    assert scanned(own, "--unsure-below", "0.6") == scanned(mail_model, "--unsure-below", "0.6") != scanned(own)


def test_imap_scan_flags_with_a_keyword_and_without_move(dovecot, spamassassin, mail_model, tmp_path):
    """--keyword alone: spam stays, with the keyword; ham gets none; no \\Seen."""
    dovecot.start()
    dovecot.append("Scan", messages(spamassassin, "test", "spam", 5) + messages(spamassassin, "test", "ham", 5))
    lines = run(
        "imap-scan", "-m", mail_model, "--keyword", "$Junk", "--state", tmp_path / "s", url(dovecot, "Scan")
    ).stdout.decode()
    spam_uids = {int(line.split(";UID=")[1].split("\t")[0]) for line in lines.splitlines() if "\tspam\t" in line}
    found = flags(dovecot, "Scan")
    assert len(found) == 10 and spam_uids
    assert {uid for uid, f in found.items() if b"$Junk" in f} == spam_uids
    assert not any(b"\\Seen" in f for f in found.values())


def test_failures_are_one_line_that_never_holds_the_password(dovecot, spamassassin, mail_model, tmp_path):
    """A wrong password, a missing folder, a certificate not trusted, a port nobody listens on,
    a password in the URL, no password at all: each one line on stderr, exit status 1, never a
    traceback, and never the password given. The password comes from --password-command (its
    first line) or ~/.netrc as well as from $NBTEXT_IMAP_PASSWORD."""
    dovecot.start(tls=True)
    dovecot.append("Spam", messages(spamassassin, "test", "spam", 2))
    trusted = {"NBTEXT_IMAP_CA_FILE": str(dovecot.certificate)}  # (imap:// uses STARTTLS, verified as imaps://)
    wrong, inline = "wrong-PASSWORD-4417", f"{PASSWORD}-inline"

    def fails(path, *secrets, password=PASSWORD, env=trusted, options=()):
        done = run("predict", *options, "-m", mail_model, path, check=False, password=password, env=env)
        err = done.stderr.decode()
        assert done.returncode == 1 and len(err.splitlines()) == 1 and err.startswith("Error: "), err
        for secret in secrets:
            assert secret not in err and secret.encode() not in done.stdout
        return err

    assert "login failed" in fails(url(dovecot, "Spam"), wrong, password=wrong)
    assert "login failed" in fails(url(dovecot, "Spam", "imaps"), wrong, password=wrong)
    assert "no such folder" in fails(url(dovecot, "Nope"))
    assert "not trusted" in fails(url(dovecot, "Spam", "imaps"), env={})
    assert "not trusted" in fails(url(dovecot, "Spam"), env={})  # STARTTLS
    assert "cannot connect" in fails(url(dovecot, "Spam").replace(str(dovecot.imap_port), str(free_port())))
    assert "password in the URL" in fails(url(dovecot, "Spam").replace(f"{USER}@", f"{USER}:{inline}@"), inline)
    nobody = {**trusted, "HOME": str(tmp_path)}
    assert "no password" in fails(url(dovecot, "Spam"), password=None, env=nobody)
    command = ["--password-command", f"echo {wrong}; echo {PASSWORD}"]  # its first line is the password
    assert "login failed" in fails(url(dovecot, "Spam"), wrong, PASSWORD, password=None, options=command)
    assert "failed" in fails(url(dovecot, "Spam"), password=None, options=["--password-command", "exit 3"])

    good = run(
        "predict",
        "--password-command",
        f"echo {PASSWORD}",
        "-m",
        mail_model,
        url(dovecot, "Spam"),
        password=None,
        env=trusted,
    )
    assert len(good.stdout.splitlines()) == 2
    (tmp_path / ".netrc").write_text(f"machine 127.0.0.1 login {USER} password {PASSWORD}\n")
    netrc = run("predict", "-m", mail_model, url(dovecot, "Spam"), password=None, env=nobody)
    assert len(netrc.stdout.splitlines()) == 2
    scan = ["imap-scan", "-m", mail_model, "--move-to", "Nowhere", "--state", tmp_path / "state", url(dovecot, "Spam")]
    scan = run(*scan, check=False, env=trusted)
    assert scan.returncode == 1 and "no folder 'Nowhere'" in scan.stderr.decode()


class FakeSession:
    """A Session whose server sends the messages of `held` ({UID: bytes}) and no others, and
    refuses a FETCH of several UIDs when one of them is missing (as a server may), and one of
    a UID of `refused` ({UID: what it says}) alone."""

    def __init__(self, held, refused=None):
        from nbtext.reading.imap import parse

        self.held, self.refused, self.folder = held, refused or {}, parse("imap://alice@example.org/INBOX")

    def command(self, what, uid_set, items, **expected):
        from nbtext.reading.imap import Refused

        uids = [int(u) for u in uid_set.split(",")]
        if any(u not in self.held for u in uids) and len(uids) > 1:
            raise Refused("the server refused UID FETCH", "some messages could not be read")
        if uids[0] in self.refused:
            raise Refused("the server refused UID FETCH", self.refused[uids[0]])
        return [
            (f"{n} (UID {u} BODY[]<0> {{{len(self.held[u])}}}".encode(), self.held[u])
            for n, u in enumerate(uids)
            if u in self.held
        ] + [b")"]


def test_a_message_the_server_does_not_send_is_skipped_by_name_and_the_batch_goes_on():
    """One it refuses to send is a document that cannot be read, named; one the folder no longer
    holds (the answer has none for its UID, or NO [EXPUNGEISSUED]) is left out, said in one
    warning line for the batch: deleted meanwhile, it is no error of the user's."""
    from nbtext.reading.documents import new_run
    from nbtext.reading.imap import fetched

    new_run()  # (the cut is said once a run)
    held = {1: b"Subject: one\r\n\r\nfirst", 3: b"Subject: three\r\n\r\n" + b"x" * 100}
    refused = {4: "over quota", 5: "[EXPUNGEISSUED] Some of the requested messages no longer exist"}
    with pytest.warns(UserWarning) as said:
        documents = list(fetched(FakeSession(held, refused), [1, 2, 3, 4, 5], max_bytes=40))
    assert [str(w.message) for w in said] == [
        "documents over 40 bytes are cut: only the first 40 bytes of each are read (--max-bytes)",  # as for a file
        "imap://alice@example.org/INBOX: 2 messages deleted from the folder since it was listed, not read "
        "(UID 2 and 1 more)",
    ]
    assert [d.name for d in documents] == [f"imap://alice@example.org/INBOX/;UID={u}" for u in (1, 3, 4)]
    assert documents[0].data == held[1] and documents[1].data == held[3][:40]  # (--max-bytes: the first 40)
    assert documents[2].data is None and documents[2].error == "the server refused to send it (over quota)"


class DroppingSession(FakeSession):
    """A FakeSession whose server closes the connection when asked for a UID of `drops`
    ({UID: how many times}), or for several UIDs holding one of them."""

    def __init__(self, held, drops):
        super().__init__(held)
        self.drops, self.reconnected = dict(drops), 0

    def command(self, what, uid_set, items, **expected):
        from nbtext.reading.imap import Lost

        uids = [int(u) for u in uid_set.split(",")]
        dropping = [u for u in uids if self.drops.get(u, 0) > 0]
        if dropping:
            if len(uids) == 1:
                self.drops[uids[0]] -= 1
            raise Lost("the connection failed (socket error: EOF)")
        return super().command(what, uid_set, items)

    def reconnect(self):
        self.reconnected += 1


def test_a_connection_lost_on_a_message_is_tried_again_once_then_that_message_alone_is_skipped():
    """The batch is fetched again one message at a time on a new connection; a message whose
    fetch loses it once (the network, not the message) is read on the second try; one that
    loses it twice is skipped by name, and the others are read."""
    from nbtext.reading.documents import new_run
    from nbtext.reading.imap import fetched

    new_run()
    held = {u: f"Subject: {u}\r\n\r\nbody".encode() for u in range(1, 6)}
    session = DroppingSession(held, {2: 1, 4: 5})
    documents = list(fetched(session, [1, 2, 3, 4, 5]))
    assert [(d.name.rsplit("=", 1)[1], d.data is not None) for d in documents] == [
        ("1", True),
        ("2", True),
        ("3", True),
        ("4", False),
        ("5", True),
    ]
    assert documents[3].error == "the server closed the connection when asked for it"
    assert session.reconnected == 4  # the batch's, UID 2's once, UID 4's twice


@pytest.mark.filterwarnings("default::UserWarning")  # the command line says it as one line
@pytest.mark.parametrize("command", ["imap-scan", "imap-scan -q", "predict"])
def test_messages_deleted_by_another_client_while_a_folder_is_read_are_one_line_not_an_error(
    dovecot, tmp_path, monkeypatch, command
):
    """Issue 35's leftover: two messages expunged between the listing and the fetch were each a
    "skipped" line, then "10 documents done, 2 skipped" and exit status 1 (a cron mail for mail
    the user deleted). Now: one warning line, the others read and acted on, exit status 0, and
    the scan remembers the folder up to its last UID."""
    from click.testing import CliRunner

    from nbtext.cli.commands import cli
    from nbtext.jobs import imapscan
    from nbtext.reading import imap

    dovecot.start()
    dovecot.append(
        "Scan",
        [f"From: a@b.c\nSubject: m{i}\n\n{'cash prize' if i % 2 else 'lunch'} {i}\n".encode() for i in range(10)],
    )
    model = tmp_path / "m.model"
    nbtext.train(
        ["cheap pills now", "win cash prize", "lunch at noon", "meeting notes"],
        ["spam", "spam", "ham", "ham"],
        min_count=1,
    ).save(str(model))
    listed = imapscan.flags_of if command.startswith("imap-scan") else imap.listing

    def listed_then_deleted(session, after=0, *keywords):  # (flags_of's keywords: act's own look)
        uids = listed(session, after, *keywords)
        client = dovecot.imap()
        client.select("Scan")
        client.uid("STORE", "3,4", "+FLAGS.SILENT", "(\\Deleted)")
        client.expunge()
        client.logout()
        return uids

    # (the scan's last look before it reads the messages is at their flags)
    scanning = command.startswith("imap-scan")
    monkeypatch.setattr(*(imapscan, "flags_of") if scanning else (imap, "listing"), listed_then_deleted)
    state = tmp_path / "state"
    args = [*command.split(), "-m", model, url(dovecot, "Scan")]
    if command.startswith("imap-scan"):
        args[-1:-1] = ["--move-to", "Junk", "--state", state]
    result = CliRunner().invoke(cli, [str(a) for a in args], env={"NBTEXT_IMAP_PASSWORD": PASSWORD})
    said = result.stderr.splitlines()
    assert result.exit_code == 0, result.stderr
    assert said[0] == (
        f"nbtext: warning: {url(dovecot, 'Scan')}: 2 messages deleted from the folder since it was listed, "
        "not read (UID 3 and 1 more)"
    )
    assert len(said) == (2 if command == "imap-scan" else 1), said  # (imap-scan's summary: 8 new messages)
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert names == (
        [] if command == "imap-scan -q" else [f"{url(dovecot, 'Scan')}/;UID={u}" for u in (1, 2, 5, 6, 7, 8, 9, 10)]
    )
    if command.startswith("imap-scan"):
        assert list(imapscan.read_state(str(state)).values())[0]["last_uid"] == 10
        assert len(stored(dovecot, "Scan")) + len(stored(dovecot, "Junk")) == 8


@pytest.mark.parametrize("move_to", [[], ["--move-to", "Junk"]], ids=["keyword alone", "keyword and move"])
def test_a_spam_deleted_between_the_scan_and_its_keyword_is_not_said_flagged(dovecot, tmp_path, monkeypatch, move_to):
    """Another client expunges a spam after the scan judged it and before its UID STORE, which
    Dovecot answers OK: imap-scan --keyword said "flagged" of it and counted it. Now it says
    what it says of a move, the spam it flagged or moved are the others."""
    from click.testing import CliRunner

    from nbtext.cli.commands import cli
    from nbtext.jobs import imapscan

    dovecot.start()
    dovecot.append(
        "Scan", [f"From: a@b.c\nSubject: m{i}\n\n{'cash prize' if i % 2 else 'lunch'} {i}\n".encode() for i in range(6)]
    )
    model = tmp_path / "m.model"
    nbtext.train(["win cash prize", "lunch at noon"], ["spam", "ham"], min_count=1, preset="general").save(str(model))
    act = imapscan.act

    def deleted_then_acted(session, uids, *arguments, **options):
        client = dovecot.imap()
        client.select("Scan")
        client.uid("STORE", str(uids[0]), "+FLAGS.SILENT", "(\\Deleted)")
        client.expunge()
        client.logout()
        return act(session, uids, *arguments, **options)

    monkeypatch.setattr(imapscan, "act", deleted_then_acted)
    args = [
        "imap-scan",
        "-m",
        model,
        "--keyword",
        "$Junk",
        *move_to,
        "--state",
        tmp_path / "state",
        url(dovecot, "Scan"),
    ]
    result = CliRunner().invoke(cli, [str(a) for a in args], env={"NBTEXT_IMAP_PASSWORD": PASSWORD})
    assert result.exit_code == 0, result.stderr
    actions = {int(line.split(";UID=")[1].split("\t")[0]): line.split("\t")[3] for line in result.stdout.splitlines()}
    done = "flagged $Junk and moved to Junk" if move_to else "flagged $Junk"
    gone = "gone before the move" if move_to else "gone before it was flagged"
    assert actions == {1: "kept", 2: gone, 3: "kept", 4: done, 5: "kept", 6: done}, actions
    found = flags(dovecot, "Scan")
    assert 2 not in found and {uid for uid, f in found.items() if b"$Junk" in f} == (set() if move_to else {4, 6})


@pytest.mark.parametrize("command", ["predict", "imap-scan"])
def test_a_message_the_server_drops_the_connection_on_is_skipped_by_name_and_the_rest_read(dovecot, tmp_path, command):
    """A stored message Dovecot cannot read (a Maildir file shorter than its S= size says) makes
    it close the connection in the middle of the batch's FETCH. That was the whole run's error,
    on every run after it too, so a scan never got past it: now the reader connects again and
    fetches the batch one by one, and that message alone is skipped by name (exit status 1).
    The scan tries it again on its next runs (it remembered the folder past it: a message
    refused once was never scanned), and the third run that cannot read it gives it up in a
    warning line, so the run after is quiet."""
    dovecot.start()
    dovecot.append("Scan", [f"From: a@b.c\nSubject: m{i}\n\n{i} ".encode() + b"word " * 200 + b"\n" for i in range(6)])
    # UID 3, the third appended (found by its subject: Maildir names do not sort as they were made)
    (third,) = [p for p in maildir(dovecot, "Scan").glob("*/*") if b"Subject: m2\n" in p.read_bytes()]
    data = third.read_bytes()
    third.write_bytes(data[: len(data) // 2])
    model = tmp_path / "m.model"
    nbtext.train(["cheap pills", "lunch at noon"], ["spam", "ham"], min_count=1).save(str(model))
    state = tmp_path / "state"
    args = [*command.split(), "-m", model, url(dovecot, "Scan")]
    if command == "imap-scan":
        args[-1:-1] = ["--move-to", "Junk", "--state", state]
    done = run(*args, check=False)
    said = done.stderr.decode().splitlines()
    assert done.returncode == 1, said
    assert said[0] == (
        f"nbtext: skipped {url(dovecot, 'Scan')}/;UID=3: cannot read it "
        "(the server closed the connection when asked for it)"
    )
    names = [line.split("\t")[0] for line in done.stdout.decode().splitlines()]
    assert names == [f"{url(dovecot, 'Scan')}/;UID={u}" for u in (1, 2, 4, 5, 6)]
    if command == "imap-scan":
        for _ in range(2):  # runs 2 and 3: UID 3 alone asked for, and skipped again
            again = run(*args, check=False)
            assert again.returncode == 1 and again.stdout == b"", again.stderr
            assert f"{url(dovecot, 'Scan')}/;UID=3: cannot read it" in again.stderr.decode()
        assert "no longer tried, left in the folder unscanned (UID 3)" in again.stderr.decode()
        quiet = run(*args)
        assert quiet.stdout == b"" and "UID" not in quiet.stderr.decode()


def test_the_docs_imap_commands_run_against_a_server(dovecot, spamassassin, tmp_path):
    """docs/mail.md's IMAP commands (and the cron line's), with its example server
    `me@mail.example.org` replaced by the tests' Dovecot and its certificate trusted, run as written."""
    from test_docs import IMAP, NOT_RUN, ROOT, fenced_blocks, page_commands

    dovecot.start(tls=True)
    for folder, label in [("Junk", "spam"), ("Archive", "ham"), ("learn-spam", "spam"), ("INBOX", "ham")]:
        dovecot.append(folder, messages(spamassassin, "test", label, 5))
    page = ROOT / "docs" / "mail.md"
    shown = [c for c in page_commands(page) if NOT_RUN.get(c) == IMAP]
    cron = [line for lang, lines in fenced_blocks(page.read_text()) for line in lines if "imap-scan -q" in line]
    assert len(shown) == 4 and len(cron) == 1
    commands = shown + [cron[0].split(None, 5)[5].replace("/home/me/.nbtext/", "")]
    env = {"NBTEXT_IMAP_CA_FILE": str(dovecot.certificate), "HOME": str(tmp_path)}
    env["PATH"] = f"{NBTEXT.parent}{os.pathsep}{os.environ['PATH']}"
    for command in commands:
        here = command.replace("me@mail.example.org", f"{USER}@localhost:{dovecot.imaps_port}")
        done = subprocess.run(
            here,
            shell=True,
            cwd=tmp_path,
            capture_output=True,
            env=os.environ | env | {"NBTEXT_IMAP_PASSWORD": PASSWORD},
        )
        assert done.returncode == 0, (command, done.stderr.decode())
    assert len(stored(dovecot, "INBOX")) + len(stored(dovecot, "Junk")) == 10  # the cron line's scan moved, kept all


def test_reading_files_imports_no_imap_client(tmp_path):
    """imaplib, ssl and netrc are imported only when an IMAP folder is read: not by the
    readers of files and folders (tests/test_structure.py checks the one-message path)."""
    (tmp_path / "a").write_text("Subject: hi\n\nhello\n")
    code = (
        "import sys; from nbtext.reading.sources import path_documents, labelled_documents; "
        f"list(path_documents([{str(tmp_path)!r}])); list(labelled_documents([{str(tmp_path)!r}])); "
        "print(sorted(m for m in ('imaplib', 'ssl', 'netrc') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_a_cluster_never_reads_an_imap_folder():
    """--scheduler's workers read files and fsspec URLs: an IMAP folder (read with the user's
    password) is refused in one line before any worker is given it."""
    from nbtext.errors import NbtextError
    from nbtext.jobs.cluster import path_entries, source_entries

    with pytest.raises(NbtextError, match="drop --scheduler"):
        source_entries("spam", "imaps://alice@example.org/Junk")
    with pytest.raises(NbtextError, match="drop --scheduler"):
        path_entries(["imap://alice@example.org/INBOX"])


def test_a_password_or_user_name_beyond_ascii_logs_in(dovecot, spamassassin, mail_model):
    """IMAP's LOGIN takes ASCII strings only (imaplib refuses others with an exception): a
    password or user of other characters logs in with AUTHENTICATE PLAIN (UTF-8, RFC 4616); a
    wrong one, or a user the server refuses (Dovecot's user names are ASCII), is the one line
    of a failed login, without the password."""
    secret = 'pässwörd "q\\ %{}$x'
    dovecot.start(users=[("zoe", secret)])
    for user, password, answer in [("zoe", secret, 0), ("zoe", "wröng-PASSWORD", 1), ("zo%C3%AB", secret, 1)]:
        done = run(
            "predict",
            "-m",
            mail_model,
            f"imap://{user}@127.0.0.1:{dovecot.imap_port}/INBOX",
            check=False,
            password=password,
        )
        err = done.stderr.decode()
        assert done.returncode == answer, err
        assert password not in err and "Traceback" not in err
        if answer:
            assert err.startswith("Error: ") and len(err.splitlines()) == 1 and "login failed" in err, err


@pytest.mark.parametrize("folder, move_to", [("INBOX", "INBOX"), ("INBOX", "inbox"), ("Scan", "Scan"), ("a/b", "a/b/")])
def test_imap_scan_refuses_to_move_spam_into_the_folder_it_scans(folder, move_to, mail_model, tmp_path):
    """Spam moved into the folder scanned gets new UIDs there, above the state's: every run
    would scan and move it again. Refused in one line before any connection (no server here)."""
    state = tmp_path / "state"
    done = run(
        "imap-scan",
        "-m",
        mail_model,
        "--move-to",
        move_to,
        "--state",
        state,
        f"imap://alice@127.0.0.1:{free_port()}/{folder}",
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 1 and err.startswith("Error: --move-to") and len(err.splitlines()) == 1, err
    assert not state.exists()


@pytest.mark.parametrize("command", ["predict", "forget", "train --update"])
@pytest.mark.parametrize("tail", ["/;UID=3", "/;uid=3", ";UIDVALIDITY=7/;UID=3", "/;UID=3/;SECTION=1"])
def test_a_url_of_one_message_is_refused_not_read_as_its_whole_folder(command, tail, mail_model, tmp_path):
    """predict names each message by its URL (FOLDER/;UID=N, RFC 5092); given back to forget or
    train --update, such a URL read as its folder would unlearn or learn the whole folder.
    Refused in one line, before any connection (no server here), the model untouched."""
    model = tmp_path / "mail.model"
    shutil.copy(mail_model, model)
    where = f"imap://alice@127.0.0.1:{free_port()}/INBOX{tail}"
    done = run(*command.split(), "-m", model, f"spam={where}" if "train" in command else where, check=False)
    err = done.stderr.decode()
    assert done.returncode != 0 and "names one message" in err and len(err.splitlines()) == 1, err
    assert model.read_bytes() == mail_model.read_bytes()


def test_a_netrc_not_of_the_locale_encoding_is_one_line(dovecot, mail_model, tmp_path):
    """A ~/.netrc holding bytes that are not UTF-8: one line, no traceback, no password."""
    dovecot.start()
    (tmp_path / ".netrc").write_bytes(f"machine 127.0.0.1 login {USER} password p\xffw\n".encode("latin-1"))
    done = run(
        "predict", "-m", mail_model, url(dovecot, "INBOX"), check=False, password=None, env={"HOME": str(tmp_path)}
    )
    err = done.stderr.decode()
    assert done.returncode == 1 and err.startswith("Error: ") and len(err.splitlines()) == 1, err
    assert ".netrc" in err


@pytest.mark.parametrize(
    "remembered",
    [
        {"last_uid": -5},
        {"last_uid": True},
        {"last_uid": 1 << 32},
        {"last_uid": "7"},
        {"uid_validity": -1},
        {"uid_validity": "x"},
    ],
)
def test_a_state_file_whose_uids_cannot_be_uids_is_refused_in_one_line(tmp_path, remembered):
    """A hand-edited state with a negative last UID was taken, and the server's BAD to the
    FETCH it made came back as Python's [b'...'] form; it is refused when read, as a state file
    that is not one. (No server needed.)"""
    import json

    from nbtext.errors import NbtextError
    from nbtext.jobs.imapscan import STATE_VERSION, read_state

    state = tmp_path / "state"
    folder = {"uid_validity": 1700000000, "last_uid": 12} | remembered
    state.write_text(json.dumps({"version": STATE_VERSION, "folders": {"imap://a@h/INBOX": folder}}))
    with pytest.raises(NbtextError, match="is not a state file of nbtext imap-scan"):
        read_state(state)
    kept = {
        "imap://a@h/INBOX": {"uid_validity": 1, "last_uid": 0},
        "imap://a@h/Junk": {"uid_validity": None, "last_uid": 3},
    }
    state.write_text(json.dumps({"version": STATE_VERSION, "folders": kept}))
    assert read_state(state) == kept  # (a UIDVALIDITY the server did not send is remembered as None)


def test_each_command_reaches_the_server_with_its_own_password_command_and_ca_file(
    dovecot, spamassassin, mail_model, tmp_path
):
    """--password-command and --ca-file are one command's, handed down with its paths: every
    command that takes them reaches the server with them (a certificate trusted, then the
    password it printed refused), and a later command in the same process (a caller of the
    command line's functions, a test runner) that gives neither trusts the system's
    certificates and finds no password, as a process of its own does: nothing is kept."""
    from click.testing import CliRunner

    from nbtext.cli.commands import cli

    from conftest import one_line_error

    dovecot.start(tls=True)
    dovecot.append("Spam", messages(spamassassin, "test", "spam", 2))
    folder = url(dovecot, "Spam", "imaps")
    copy = tmp_path / "copy.model"
    shutil.copy(mail_model, copy)
    arguments = {
        "train": ["-q", "-o", tmp_path / "new.model", f"spam={folder}", f"ham={url(dovecot, 'Ham', 'imaps')}"],
        "predict": ["-m", mail_model, folder],
        "eval": ["-m", mail_model, f"spam={folder}"],
        "forget": ["-m", copy, folder],
        "imap-scan": ["-m", mail_model, "--move-to", "Junk", "--state", tmp_path / "state", folder],
    }
    taking = {name for name, command in cli.commands.items() if any(p.name == "ca_file" for p in command.params)}
    assert taking == set(arguments)
    arguments["train --update"] = ["--update", "-m", copy, f"spam={folder}"]
    nobody = {"HOME": str(tmp_path), "NETRC": None} | {v: None for v in os.environ if v.startswith("NBTEXT_IMAP")}
    given = ["--password-command", "echo wrong-PASSWORD-4417", "--ca-file", dovecot.certificate]
    runner = CliRunner()

    def run_in_process(command, *options, env=nobody):
        name, *first = command.split()
        return runner.invoke(cli, [name, *first, *map(str, options), *map(str, arguments[command])], env=env)

    for command in arguments:
        one_line_error(run_in_process(command, *given), "login failed")
        one_line_error(run_in_process(command), "not trusted")
        one_line_error(
            run_in_process(command, env=nobody | {"NBTEXT_IMAP_CA_FILE": str(dovecot.certificate)}), "no password"
        )


def test_a_password_command_printing_bytes_not_utf8_logs_in_with_those_bytes():
    """A --password-command's first line goes to the server as the bytes it printed, UTF-8 or
    not (AUTHENTICATE PLAIN): it was a UnicodeEncodeError inside imaplib, said as a failed login."""
    from nbtext.reading.imap import _password_of_command, log_in

    class Client:
        def authenticate(self, mechanism, answer):
            self.sent = (mechanism, answer(b""))

    secret = _password_of_command("printf 'p\\377w\\n'")
    client = Client()
    log_in(client, USER, secret)
    assert client.sent == ("PLAIN", b"\0" + USER.encode() + b"\0p\xffw")


class Trickling(LoopbackProxy):
    """A proxy in front of the server's `port` whose answers, on each connection, pass `first`
    bytes as they come, then `count` bytes one at a time 0.1 s apart, then the rest: a server
    that stalls anywhere in its stream, TLS's handshake and records too."""

    def __init__(self, port, first, count=30):
        self.first, self.count = first, count
        super().__init__(port)

    def join(self, near, far):
        import threading

        threading.Thread(target=self.pump, args=(near, far, False), daemon=True).start()
        threading.Thread(target=self.pump, args=(far, near, True), daemon=True).start()

    def pump(self, source, sink, slow):
        import time

        sent = 0
        try:
            while data := source.recv(65536):
                while data:
                    if slow and self.first <= sent < self.first + self.count:
                        time.sleep(0.1)
                        piece = data[:1]
                    else:
                        piece = data[: max(self.first - sent, 0) or len(data)] if slow and sent < self.first else data
                    sink.sendall(piece)
                    sent, data = sent + len(piece), data[len(piece) :]
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.close()
            except OSError:
                pass


@pytest.mark.parametrize("scheme", ["imaps", "imap"])  # (imap://: STARTTLS, where Dovecot offers it)
@pytest.mark.parametrize("first", [0, 100, 2000, 6000])
def test_a_tls_stream_that_stalls_anywhere_is_the_runs_error(dovecot, tmp_path, monkeypatch, scheme, first):
    """Dovecot over TLS (imaps://, and imap:// with STARTTLS) behind a proxy that trickles its
    stream from byte `first` on (in the handshake, or in an answer's TLS records): each answer
    of 0.5 s here (and the handshake: the socket's timeout, at most the greeting's deadline)
    ends the run in one line, where the run waited for every byte (3 s, and went on)."""
    from click.testing import CliRunner

    from nbtext.cli.commands import cli
    from nbtext.reading import imapclient

    monkeypatch.setattr(imapclient, "ANSWER_SECONDS", 0.5)
    monkeypatch.setattr(imapclient, "SLOWEST", 1 << 40)
    dovecot.start(tls=True)
    dovecot.append("Slow", [f"From: a@b.c\nSubject: m{i}\n\nlunch {i} ".encode() + b"word " * 300 for i in range(4)])
    model = tmp_path / "m.model"
    nbtext.train(["cheap pills", "lunch at noon"], ["spam", "ham"], min_count=1).save(str(model))
    proxy = Trickling(dovecot.imaps_port if scheme == "imaps" else dovecot.imap_port, first)
    try:
        result = CliRunner().invoke(
            cli,
            ["predict", "-m", str(model), f"{scheme}://{USER}@localhost:{proxy.port}/Slow"],
            env={"NBTEXT_IMAP_PASSWORD": PASSWORD, "NBTEXT_IMAP_CA_FILE": str(dovecot.certificate)},
        )
    finally:
        proxy.close()
    assert result.exit_code == 1 and result.stderr.startswith("Error: "), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert re.search(r"handshake was not made in time|its answer to", result.stderr), result.stderr
