"""`nbtext imap-scan`: isbg's job for a mailbox on a server where no filter runs at delivery.
The messages of an IMAP folder that arrived since the last scan are classified, and those
called spam moved to a folder (MOVE where the server offers it, else UID COPY, then UID STORE
\\Deleted and UID EXPUNGE of those alone) or given a keyword. What was scanned is remembered
in a state file (the folder's UIDVALIDITY and highest UID scanned), written whole by rename
after each batch, so a cron line costs only the new messages; a folder whose UIDVALIDITY
changed (recreated, or its UIDs renumbered) is scanned again from its start.

No message is lost: a move the server refuses leaves the messages where they were, and the
state stays before them (the next run tries again). No message is marked \\Seen: messages
are fetched with BODY.PEEK[] (nbtext.reading.imap) and moved or flagged with their flags.
With `dry_run` the folder is opened read-only (EXAMINE) and nothing is moved, flagged or
remembered."""

import json
import os

from nbtext.choices import DEFAULT_MAX_BYTES
from nbtext.errors import NbtextError
from nbtext.labels import spam_class
from nbtext.modelfile.container import write_atomically
from nbtext.reading.imap import BATCH, Session, all_uids, fetched, mailbox_argument
from nbtext.reading.imapurl import DEFAULT_ACCESS, parse

STATE_VERSION = 1


def default_state_path():
    return os.path.join(os.path.expanduser("~"), ".nbtext", "imap-scan.state")


def scan(
    url,
    classes,
    load_model,
    move_to=None,
    keyword=None,
    state_path=None,
    unsure_below=None,
    dry_run=False,
    max_bytes=DEFAULT_MAX_BYTES,
    on_error=None,
    on_message=None,
    imap_access=DEFAULT_ACCESS,
):
    """Scan the folder `url` names (see the module docstring) with the model of `classes` that
    `load_model()` gives, loaded only when there are new messages (a cron line's common run
    has none, and pays nothing for the model); `on_message(name,
    label, probability, action)` for each message classified, `on_error(document, message)`
    for each that cannot be read; the server is reached with `imap_access` (the command's
    nbtext.reading.imapurl.ImapAccess). {"scanned", "spam", "acted"}: the counts."""
    if move_to is None and keyword is None:
        raise NbtextError("say what to do with spam: --move-to FOLDER, --keyword WORD, or both")
    if keyword is not None and not _is_keyword(keyword):
        raise NbtextError(f"--keyword {keyword!r} is not an IMAP keyword (a word such as $Junk or Junk, no spaces)")
    spam = spam_class(classes)
    if spam is None:
        raise NbtextError(f"the model has no class spam (its classes: {', '.join(classes)}): nothing to move")
    folder = parse(url)
    if move_to is not None and _same_folder(move_to, folder.name):
        raise NbtextError(
            f"--move-to {move_to} is the folder scanned: its spam would come back as new messages, moved again each run"
        )
    state_path = state_path or default_state_path()
    counts = {"scanned": 0, "spam": 0, "acted": 0}
    with _StateLock(state_path, dry_run):
        state = read_state(state_path)
        with Session(folder, readonly=dry_run, access=imap_access) as session:
            if move_to is not None:
                _check_folder(session, move_to)
            remembered = state.get(folder.url, {})
            start = remembered.get("last_uid", 0) if remembered.get("uid_validity") == session.uid_validity else 0
            uids = all_uids(session, after=start)
            model = load_model() if uids else None
            if uids:
                from nbtext.exactmath import exp  # (numpy: only when there is mail to classify)
            for first in range(0, len(uids), BATCH):
                batch = uids[first : first + BATCH]
                documents = list(fetched(session, batch, None, max_bytes))  # (without those deleted meanwhile)
                uid_of = {session.folder.message_name(uid): uid for uid in batch}
                kept, log_proba, _ = model.score(documents, on_error)
                calls = []
                for doc, probabilities in zip(kept, exp(log_proba)):
                    label, probability = model.decide(probabilities, unsure_below)
                    calls.append((doc.name, label, probability))
                spam_uids = [uid_of[name] for name, label, _ in calls if label == spam]
                if spam_uids and not dry_run:
                    act(session, spam_uids, move_to, keyword)  # (refused: an error, the state left before them)
                for name, label, probability in calls:
                    action = _action(move_to, keyword, dry_run) if label == spam else "kept"
                    if on_message is not None:
                        on_message(name, label, probability, action)
                counts["scanned"] += len(documents)
                counts["spam"] += len(spam_uids)
                counts["acted"] += 0 if dry_run else len(spam_uids)
                if not dry_run:
                    state[folder.url] = {"uid_validity": session.uid_validity, "last_uid": batch[-1]}
                    write_state(state_path, state)
    return counts


def _is_keyword(word):
    """An IMAP keyword: RFC 3501's atom (ASCII, no space, control or atom-special character),
    not a system flag such as \\Seen."""
    import re

    return re.fullmatch(r"[\x21-\x7e]+", word) is not None and not re.search(r"[(){%*\"\\\]]", word)


def _same_folder(name, other):
    """Whether two folder names name one folder: INBOX's name is case-insensitive (RFC 3501)."""
    name, other = name.strip("/"), other.strip("/")
    return name == other or name.upper() == other.upper() == "INBOX"


def _action(move_to, keyword, dry_run):
    done = [f"flagged {keyword}"] if keyword else []
    done += [f"moved to {move_to}"] if move_to else []
    return ("would be " if dry_run else "") + " and ".join(done)


def act(session, uids, move_to=None, keyword=None):
    """Give the messages `uids` the keyword, then move them to `move_to`: MOVE where the server
    offers it, else COPY, then STORE \\Deleted and (with UIDPLUS) UID EXPUNGE of these alone;
    without UIDPLUS they are left marked \\Deleted (a plain EXPUNGE would remove other
    messages marked so). A refusal is an NbtextError: the messages are then where they were
    (or, a COPY done, in both folders)."""
    uid_set = ",".join(map(str, uids))
    if keyword is not None:
        session.command("STORE", uid_set, "+FLAGS.SILENT", f"({keyword})")
    if move_to is None:
        return
    target = mailbox_argument(move_to)
    if "MOVE" in session.capabilities:
        session.command("MOVE", uid_set, target)
        return
    session.command("COPY", uid_set, target)
    session.command("STORE", uid_set, "+FLAGS.SILENT", "(\\Deleted)")
    if "UIDPLUS" in session.capabilities:
        session.command("EXPUNGE", uid_set)


def _check_folder(session, name):
    """The folder spam is moved to exists: said before anything is scanned."""
    answer, data = session.call(session.client.list, '""', mailbox_argument(name))
    if answer != "OK" or not [line for line in data if line]:
        raise NbtextError(
            f"there is no folder {name!r} on {session.folder.server} to move spam to (create it in your mail program)"
        )


# --- the state file ---------------------------------------------------------------------------
def read_state(path):
    """{folder URL: {"uid_validity", "last_uid"}} of the state file, {} when there is none."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise NbtextError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError:
        data = None
    folders = data.get("folders") if isinstance(data, dict) and data.get("version") == STATE_VERSION else None
    if not isinstance(folders, dict) or not all(
        isinstance(v, dict)
        and _a_uid(v.get("last_uid"))
        and (v.get("uid_validity") is None or _a_uid(v["uid_validity"]))
        for v in folders.values()
    ):
        raise NbtextError(
            f"{path} is not a state file of nbtext imap-scan (remove it to scan its folders again from their start)"
        )
    return folders


def _a_uid(value):
    """Whether `value` can be a UID or a UIDVALIDITY as the state remembers it: a 32-bit
    number (RFC 9051's nz-number; 0 for a folder scanned before any message arrived; a
    UIDVALIDITY the server did not send is None)."""
    return type(value) is int and 0 <= value < 1 << 32


def write_state(path, folders):
    """The state file, written whole by rename (never half a file)."""
    data = json.dumps({"version": STATE_VERSION, "folders": folders}, indent=1, sort_keys=True) + "\n"
    write_atomically(path, [data.encode()])


class _StateLock:
    """One scan at a time per state file (a cron line that overlaps the last one waits for it):
    flock on STATE.lock, whose folder is made if missing. A dry run takes none."""

    def __init__(self, path, dry_run):
        self.path, self.fd = path + ".lock", None
        self.dry_run = dry_run

    def __enter__(self):
        if self.dry_run:
            return self
        import fcntl

        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise NbtextError(f"cannot lock the scan's state ({self.path}: {e.strerror or e})") from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exception):
        if self.fd is not None:
            os.close(self.fd)
