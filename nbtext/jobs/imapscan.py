"""`nbtext imap-scan`: isbg's job for a mailbox on a server where no filter runs at delivery.
The messages of an IMAP folder that arrived since the last scan are classified, and those
called spam moved to a folder or given a keyword. What was scanned is remembered in a state
file (the folder's UIDVALIDITY and highest UID scanned), written whole by rename after each
batch, so a cron line costs only the new messages; a folder whose UIDVALIDITY changed
(recreated, or its UIDs renumbered), or whose UIDNEXT is not above the last UID scanned
(renumbered without saying so), is scanned again from its start.

A move is recorded twice, so that a retry never copies a message twice whatever was lost (a
command's answer, the connection, the state file, the process between two commands). First
in the state file: the UIDs whose move a batch begins ("moving", the write-ahead record),
written whole before anything is done to them; then on the server: each message to move is
given nbtext's keyword MARK, which COPY and MOVE carry to the copy; then MOVE where the server
offers it, else UID COPY, UID STORE \\Deleted and (with UIDPLUS) UID EXPUNGE of those alone.
A scan skips the messages marked \\Deleted (nbtext marks one only once its copy is known to be
in the target folder: named by COPY's COPYUID, or, where that does not name it, found there);
one that carries MARK, is still in the folder and is named by the record is a move begun: it
is looked for in the target folder (a message there with MARK, the same INTERNALDATE,
RFC822.SIZE and Message-ID, all of which a copy keeps) and, found, only deleted from the
folder, its bytes never asked for (it is not judged: a server that stalls on them or will not
send them cannot leave it in both folders); not found, the model decides again: spam is
moved, anything else kept and MARK taken from it (a message the user moved back out of the
target folder carries MARK too: it is not moved again). One that carries MARK and no record
names (a user's copy of a message moved, kept in the target too; or a move begun whose record
was lost with the state file, a new UIDVALIDITY or an older nbtext's state) is judged as any
message, and a spam among them has its copy looked for before it is moved: found, it is only
deleted from the folder, so no copy is made twice. MARK also tells the learn-on-move Sieve
scripts (contrib/dovecot) a move of nbtext's from a user's: the model does not learn its own
verdicts.

What a message's line and the summary say was done is what the folder shows after the
commands, never a server's OK alone: flagged if the message carries the keyword after its
STORE (a server that keeps no such keyword answers OK too), moved if a MOVE left it no longer
in the folder (and, where a COPYUID was said, named there or its copy found in the target) or
its copy is known to be in the target. Without MOVE, a target folder that keeps no keyword
(its PERMANENTFLAGS) is refused before anything is marked: a copy there would never be found,
and each run would copy the message again. One the server said it moved and did not is tried again by the next runs (as a
message it would not send), and the state's key of a folder is one spelling of its URL
(state_key), however the command line spelled it.

No message is lost: a move the server refuses leaves the messages where they were, and the
state stays before them (the next run tries again); so does a server past a deadline of its
answers (nbtext.reading.imapclient) or the run's `time_limit`, which every answer read in the
run ends by: the run's error, the state keeping the batches done. A message the server would
not send is skipped, and kept in the state to be tried again by the next runs (after their new
mail): up to
TRIES runs, SKIPPED_KEPT messages a folder (those past either given up, said in a warning
line: one unreadable message never holds the folder back). After a stall in a batch of
messages (its FETCH, its flags, its move; or the run's time limit reached in it), or a command
of it the server refused (a NO: Dovecot's [SERVERBUG] of a damaged mail file), the next run
asks for them one at a time (the state keeps that batch's last UID), and one stalled on or
refused alone is skipped so (refused, by name, the run going on: the connection is whole). No message is marked \\Seen: messages
are fetched with BODY.PEEK[] (nbtext.reading.imap) and moved or flagged with their flags.
With `dry_run` the folder is opened read-only (EXAMINE) and nothing is moved, flagged or
remembered."""

import json
import os
from collections import namedtuple
from contextlib import contextmanager
from itertools import chain

from nbtext.choices import DEFAULT_MAX_BYTES
from nbtext.errors import NbtextError
from nbtext.labels import spam_class
from nbtext.modelfile.container import lock_path, write_atomically
from nbtext.reading.documents import Document, in_batches
from nbtext.reading.imap import (
    BATCH,
    Lost,
    Refused,
    Session,
    TooSlow,
    answered_uid,
    fetch_batches,
    fetched,
    listing,
    mailbox_argument,
    searched,
    uid_set,
    warn_of_messages,
)
from nbtext.reading.imapclient import run_time_left, time_limit
from nbtext.reading.imapurl import DEFAULT_ACCESS, PORTS, carried, parse

STATE_VERSION = 1
TRIES = 3  # runs that try a message the server would not send (skipped) before it is given up
SKIPPED_KEPT = 200  # skipped messages a folder's state keeps to try again; the lowest UIDs past it are given up
# UIDs whose move a run began that a folder's state keeps (a batch's, and those an earlier run's record
# names that this run has not reached yet); past it the lowest of the latter are forgotten, each then a
# message carrying MARK that no record names (judged again, its copy looked for before it is moved: see scan)
MOVING_KEPT = 2 * BATCH
IDENTITIES_ASKED = 100  # messages whose identities (a Message-ID line each: up to a header's 100 KB) one FETCH asks


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
    time_limit=None,
):
    """Scan the folder `url` names (see the module docstring) with the model of `classes` that
    `load_model()` gives, loaded only when there are new messages (a cron line's common run
    has none, and pays nothing for the model); `on_message(name,
    label, probability, action)` for each message classified, and for each move begun that is
    finished without its bytes read (label and probability None: not judged this run);
    `on_error(document, message)` for each that cannot be read (else a warning); the server is reached with `imap_access` (the command's
    nbtext.reading.imapurl.ImapAccess). `time_limit`: the seconds the run may take once it
    holds the state's lock (None: no limit but each answer's own deadline), past which it
    stops, in one line, with the state saved of the batches done (nbtext.reading.imapclient
    bounds every answer by that end). {"scanned", "spam", "acted", "finished", "moved",
    "flagged"}: the counts ("acted": messages with all asked done, as the folder shows it;
    "finished": moves begun finished unjudged, counted in "acted" too, not in "scanned";
    "moved", "flagged": of the messages judged, those the folder shows moved, or flagged)."""
    if move_to is None and keyword is None:
        raise NbtextError("say what to do with spam: --move-to FOLDER, --keyword WORD, or both")
    on_error = on_error or _warned  # (skipped whatever the caller: the Python API's too)
    if keyword is not None and not _is_keyword(keyword):
        raise NbtextError(f"--keyword {keyword!r} is not an IMAP keyword (a word such as $Junk or Junk, no spaces)")
    if move_to is not None and not carried(move_to):  # (as the URL's own folder name: parse)
        raise NbtextError(
            f"--move-to {move_to!r} holds a control character (or bytes not UTF-8), which IMAP cannot carry: "
            "give the folder's name as the server knows it"
        )
    spam = spam_class(classes)
    if spam is None:
        raise NbtextError(f"the model has no class spam (its classes: {', '.join(classes)}): nothing to move")
    folder = parse(url)
    if move_to is not None and _same_folder(move_to, folder.name):
        raise NbtextError(
            f"--move-to {move_to} is the folder scanned: its spam would come back as new messages, moved again each run"
        )
    state_path = state_path or default_state_path()
    _state_path_checked(state_path)  # (before a lock is made beside it)
    counts = {"scanned": 0, "spam": 0, "acted": 0, "finished": 0, "moved": 0, "flagged": 0}
    with _StateLock(state_path, dry_run), _limited(time_limit, folder, counts):
        state = read_state(state_path)
        key = state_key(folder)
        with Session(folder, readonly=dry_run, access=imap_access) as session:
            if move_to is not None:
                _check_folder(session, move_to)
            remembered = _remembered(state, key, session.uid_validity)  # (every spelling of the folder's)
            # the folder scanned before: the same UIDVALIDITY, and a UIDNEXT above the last UID scanned
            # (one at or below it: renumbered without a new UIDVALIDITY, which RFC 3501 2.3.1.1 forbids)
            same = remembered.get("uid_validity") == session.uid_validity and (
                session.uid_next is None or session.uid_next > remembered.get("last_uid", 0)
            )
            start = remembered.get("last_uid", 0) if same else 0
            skipped = dict(remembered.get("skipped", [])) if same else {}  # {UID: runs that skipped it}
            _bounded(skipped, session.folder, remembered.get("moving", ()), move_to)  # (spellings merged: more)
            # the last UID of a batch whose FETCH the server stalled on: up to it, a message at a time
            # (none at or above the folder's UIDNEXT: a UID a server once lied about outlives no lie)
            stalled = remembered.get("stalled", 0) if same else 0
            stalled = stalled if session.uid_next is None or stalled < session.uid_next else 0
            # the UIDs whose move a run began (recorded before their STORE of MARK, as the write-ahead of it)
            recorded = set(remembered.get("moving", [])) if same else set()
            listed = listing(session, after=start)
            model = load_model() if listed or skipped else None
            if listed or skipped:
                from nbtext.exactmath import exp  # (numpy: only when there is mail to classify)
            target = _Target(folder.other(move_to), imap_access) if move_to is not None else None
            last = start

            def remembered_now(begun_now=()):
                """The folder's state as it stands (the record of moves kept as _record says)."""
                nonlocal recorded
                recorded = _record(recorded, last, skipped, begun_now)
                return _folder_state(session.uid_validity, last, skipped, stalled, recorded)

            # the new ones, then those skipped by earlier runs (below `start`, their sizes not listed): one
            # the server stalls on again ends the run after the new mail, not before it
            again = [(uid, None) for uid in sorted(skipped)]
            batches = fetch_batches(chain(listed, again), max_bytes)  # (a FETCH's bytes bounded as every batch's)
            tried_before, stalled_to = set(skipped), stalled
            for batch in _alone_where(batches, lambda uid: uid in tried_before or uid <= stalled_to):
                if time_limit is not None and run_time_left() <= 0:
                    raise NbtextError("the time limit was reached")  # (said by _limited)
                begun, acted = [], set()  # (until the batch's flags are read; until it is judged)
                try:
                    # \\Deleted: not scanned (nbtext's own, once copied, are expunged where they were left);
                    # MARK, not \\Deleted, and named by the record: a move begun (see the module docstring)
                    flags = flags_of(session, batch)  # (without those deleted meanwhile)
                    marked = {uid for uid in flags if target and flags[uid] & {MARKED, DELETED} == {MARKED}}
                    begun = sorted(marked & recorded)
                    if target and not dry_run:
                        _expunge(session, [uid for uid in flags if flags[uid] >= {MARKED, DELETED}])
                    # A move begun whose copy is in the target is finished, whatever the model says now; one
                    # whose copy is not there is the model's to decide again: a message the user moved back
                    # out of the target keeps MARK, and must not be moved again against the model's verdict.
                    # Decided before any bytes are asked for: those finished need none (a server that stalls
                    # on them, or would not send them, must not leave them in both folders for good)
                    copied = target.copies_of(session, begun) if begun else set()
                    # what the model judges: all but \\Deleted and moves finished (those gone: fetched says so)
                    live = [uid for uid in batch if DELETED not in flags.get(uid, ()) and uid not in copied]
                    uid_of = {session.folder.message_name(uid): uid for uid in live}
                    calls, scanned, unsent = [], 0, set()
                    for documents in in_batches(fetched(session, live, None, max_bytes) if live else ()):
                        unsent.update(uid_of[doc.name] for doc in documents if doc.error is not None)
                        kept, log_proba, _ = model.score(documents, on_error)  # (a batch of the bound at a time)
                        for doc, probabilities in zip(kept, exp(log_proba)):
                            label, probability = model.decide(probabilities, unsure_below)
                            calls.append((doc.name, label, probability))
                        scanned += len(documents)
                    spam_uids = {uid_of[name] for name, label, _ in calls if label == spam}
                    # A spam carrying MARK that no record names: a user's copy of a message moved (kept in
                    # the target too), or a move begun whose record was lost (the state file lost, the
                    # UIDVALIDITY changed, an older nbtext's): its copy is looked for before it is moved
                    # again, so that none is made twice; found, the message is only deleted from the folder
                    unrecorded = sorted(spam_uids & (marked - recorded))
                    copied |= target.copies_of(session, unrecorded) if unrecorded else set()
                    acted = spam_uids | copied  # (refused: an error, the state left before them)
                    done = Done(set(), set(), set())
                    if acted and not dry_run:
                        if target:  # the write-ahead: recorded before any of them is given MARK
                            state[key] = remembered_now(acted)
                            write_state(state_path, state)
                        done = act(session, sorted(acted), move_to, keyword, sorted(marked & acted), copied, target)
                    # moved is what the folder shows: one the server said it moved and did not is tried again
                    unmoved = acted - done.gone - done.moved if target and not dry_run else set()
                    if keyword is not None and not dry_run and (unflagged := sorted(acted - done.gone - done.flagged)):
                        warn_of_messages(  # (said even with -q: a server that keeps no keyword never will)
                            session.folder.url,
                            unflagged,
                            f"not flagged {keyword}: the server answered its STORE OK and did not keep the keyword",
                        )
                    kept = [uid_of[name] for name, label, _ in calls if uid_of[name] in marked - acted]
                    if kept and not dry_run:  # (kept: no longer a move begun, nor one of nbtext's for the recipe)
                        session.command("STORE", uid_set(kept), "-FLAGS.SILENT", f"({MARK})")
                    # a line a message, in UID order: those judged, and the moves finished unjudged (no
                    # label, no probability: their bytes were not read)
                    judged = set(uid_of.values())
                    lines = [(uid_of[name], name, label, probability) for name, label, probability in calls]
                    lines += [(uid, session.folder.message_name(uid), None, None) for uid in copied - judged]
                    for uid, name, label, probability in sorted(lines, key=lambda line: line[0]):
                        if uid not in acted:
                            action = "kept"
                        elif dry_run:
                            action = _action(move_to, keyword, dry_run)
                        else:
                            action = _said(uid, done, move_to, keyword)
                        if label is None and (dry_run or uid in done.moved):
                            action += f" (a move an earlier run began, its copy in {move_to} already: not judged)"
                        if on_message is not None:
                            on_message(name, label, probability, action)
                    counts["scanned"] += scanned
                    counts["spam"] += sum(label == spam for _, label, _ in calls)
                    unjudged = copied - judged
                    counts["finished"] += len(unjudged if dry_run else unjudged & done.moved)
                    if not dry_run:
                        counts["acted"] += sum(_all_done(uid, done, move_to, keyword) for uid in acted)
                        counts["moved"] += len(done.moved & judged)
                        counts["flagged"] += len(done.flagged & judged)
                except (TooSlow, Refused, Lost) as failure:  # the run's error (its time limit's too); what next runs do
                    # (Refused: a NO to a command of the batch, as to one of a damaged mail file, Dovecot's [SERVERBUG];
                    # Lost: the connection closed at it, as a server's process that dies on a damaged file closes it)
                    if not dry_run:
                        full = False  # (the state keeps no more messages to try again: the run ends here)
                        if len(batch) > 1:  # which message held it is not known: the next run asks one at a time
                            stalled = max(stalled, batch[-1])
                        elif isinstance(failure, Refused) and not _its_message(failure, session):
                            # a refusal the server gives every message alike (a target over its quota, its index
                            # broken for a while): not the message's, not counted; where the state keeps no more
                            # messages to try again (SKIPPED_KEPT), the run ends at it, left to the next runs
                            full = batch[0] not in skipped and len(skipped) >= SKIPPED_KEPT
                            if not full:
                                skipped[batch[0]] = max(skipped.get(batch[0], 0), 1)  # (tried again, as one skipped)
                                last = max(last, batch[-1])
                        else:  # that one: skipped, as one the server would not send (or, judged, would not move)
                            _tried(skipped, batch, set(batch) - acted, session.folder, begun, move_to, acted)
                            last = max(last, batch[-1])
                        state[key] = remembered_now()
                        write_state(state_path, state)
                        if isinstance(failure, Refused) and len(batch) == 1 and not full:
                            # one message refused (a NO: the connection goes on): skipped by name, the run goes on
                            said = (
                                f"the server refused a command on it ({failure.reason}): tried again by the next runs"
                            )
                            on_error(Document(session.folder.message_name(batch[0]), None, None, error=said), said)
                            continue
                    raise
                last = max(last, batch[-1])
                if not dry_run:
                    _tried(skipped, batch, unsent, session.folder, begun, move_to, unmoved)
                    state[key] = remembered_now()
                    write_state(state_path, state)
    return counts


# RFC 5530's response codes that say the state of a folder or of the server, not of a message
STATE_CODES = ("OVERQUOTA", "LIMIT", "INUSE", "UNAVAILABLE", "NOPERM", "CONTACTADMIN", "EXPIRED", "PRIVACYREQUIRED")


def _its_message(refusal, session):
    """Whether a refusal of one message alone counts against it (a damaged mail file: skipped,
    given up after TRIES runs): asked of the folder scanned (the target's refusals are the
    target's), with no code of a folder's state (STATE_CODES: a quota refuses by size), of a
    kind of command (imap.command_kind) the server has answered OK in this run for another
    message. Else the server refuses every message alike, for now: tried again, not counted."""
    if refusal.folder is not None and refusal.folder != session.folder.url:
        return False
    if any(f"[{code}" in str(refusal.reason).upper() for code in STATE_CODES):
        return False
    return refusal.kind in session.kinds_done


def _warned(document, message):
    """scan's `on_error` where its caller gives none: the message skipped, said in a warning."""
    import warnings

    warnings.warn(f"skipped {document.name}: {message}", stacklevel=2)


def _alone_where(batches, alone):
    """The `batches` of UIDs, each that holds a UID for which `alone` is true cut into batches
    of one (in the same order): a message skipped before, or one of a batch the server stalled on."""
    for batch in batches:
        if any(alone(uid) for uid in batch):
            yield from ([uid] for uid in batch)
        else:
            yield batch


def _folder_state(uid_validity, last, skipped, stalled, recorded=()):
    """What the state file keeps of a folder: its UIDVALIDITY, the last UID scanned, the UIDs
    skipped with the runs that skipped each, the last UID of a batch stalled on past `last`, and
    the record of moves begun ("moving": UIDs, each past `last` or skipped: see _record)."""
    kept = {"uid_validity": uid_validity, "last_uid": last}
    if skipped:
        kept["skipped"] = sorted([uid, runs] for uid, runs in skipped.items())
    if stalled > last:
        kept["stalled"] = stalled
    if recorded:
        kept["moving"] = sorted(recorded)
    return kept


def _record(recorded, last, skipped, begun_now=()):
    """The record of moves begun as the state keeps it: of the UIDs `recorded`, those a later
    batch will read again (past `last`, or skipped to be tried again); the rest were read, their
    moves finished or judged again. At most MOVING_KEPT: those of `begun_now` (a batch's, at
    most BATCH) first, then the highest (one forgotten is a message carrying MARK no record
    names: judged again, its copy looked for before a move)."""
    kept = sorted(uid for uid in recorded if (uid > last or uid in skipped) and uid not in begun_now)
    return set(begun_now) | set(kept[len(kept) - max(MOVING_KEPT - len(begun_now), 0) :])


def _tried(skipped, batch, unsent, folder, begun=(), move_to=None, unmoved=()):
    """`skipped` ({UID: runs that skipped it}) after the scan of `batch`, whose messages
    `unsent` the server would not send and `unmoved` it said it moved and did not: those are
    tried again by later runs, up to TRIES runs and SKIPPED_KEPT messages (those past either
    given up, said in one warning line; a move begun, of `begun` or `unmoved`, in a line of its
    own: its copy may be in `move_to` too); the rest of the batch (read, or gone from the
    folder) are no longer skipped."""
    for uid in batch:
        runs = skipped.pop(uid, 0) + 1
        if uid in unsent or uid in unmoved:
            skipped[uid] = runs
    _bounded(skipped, folder, begun, move_to, unmoved)


def _bounded(skipped, folder, begun=(), move_to=None, unmoved=()):
    """`skipped` ({UID: runs that skipped it}) within its bounds: those skipped by TRIES runs,
    and the oldest past SKIPPED_KEPT, given up, said in one warning line (a move begun, of
    `begun` or `unmoved`, in a line of its own: its copy may be in `move_to` too). The one rule
    of giving up, after a batch (_tried) as after the merge of a folder's spellings (scan)."""
    given_up = [uid for uid in sorted(skipped) if skipped[uid] >= TRIES]
    for uid in given_up:
        del skipped[uid]
    past = sorted(skipped)[: max(len(skipped) - SKIPPED_KEPT, 0)]  # (the oldest, past the bound)
    for uid in past:
        del skipped[uid]
    given_up = sorted(given_up + past)
    unmoved = [uid for uid in given_up if uid in set(unmoved)]
    moves = [uid for uid in given_up if uid in set(begun) and uid not in set(unmoved)]
    if others := [uid for uid in given_up if uid not in set(moves) | set(unmoved)]:
        warn_of_messages(folder.url, others, "the server would not send, no longer tried, left in the folder unscanned")
    if moves:  # (its copy cannot be told from another message without what the server would not send)
        warn_of_messages(
            folder.url,
            moves,
            f"the server would not send, no longer tried: a move an earlier run began, left in the folder, "
            f"its copy perhaps in {move_to} too",
        )
    if unmoved:
        warn_of_messages(
            folder.url,
            unmoved,
            f"the server refused to move to {move_to}, or said it moved and did not, no longer tried: left in the folder, "
            f"its copy perhaps in {move_to} too",
        )


@contextmanager
def _limited(seconds, folder, counts):
    """The scan within `seconds` (None: no limit): every answer of the server read inside ends
    by then (nbtext.reading.imapclient.time_limit), and an error once it has passed is said as
    the limit reached, the batches scanned kept in the state."""
    with time_limit(seconds):
        try:
            yield
        except NbtextError:
            if seconds is None or run_time_left() > 0:
                raise
            raise NbtextError(
                f"{folder.url}: the scan reached its --time-limit of {seconds:g} s after {counts['scanned']:,} new "
                "messages: the rest is scanned next run"
            ) from None


def _is_keyword(word):
    """An IMAP keyword: RFC 3501's atom (ASCII, no space, control or atom-special character),
    not a system flag such as \\Seen."""
    import re

    return re.fullmatch(r"[\x21-\x7e]+", word) is not None and not re.search(r"[(){%*\"\\\]]", word)


def _same_folder(name, other):
    """Whether two folder names name one folder: INBOX's name is case-insensitive (RFC 3501)."""
    name, other = name.strip("/"), other.strip("/")
    return name == other or name.upper() == other.upper() == "INBOX"


def _gone(move_to):
    """What a scan's line says of a message deleted between its scan and act's STORE."""
    return "gone before the move" if move_to else "gone before it was flagged"


def _action(move_to, keyword, dry_run):
    done = [f"flagged {keyword}"] if keyword else []
    done += [f"moved to {move_to}"] if move_to else []
    return ("would be " if dry_run else "") + " and ".join(done)


def _said(uid, done, move_to, keyword):
    """What a scan's line says was done to the message `uid` that act was given: what the
    folder shows (`done`, act's), each part asked for and not done said so."""
    if uid in done.gone:
        return _gone(move_to)
    parts, not_done = [], []
    if keyword is not None:
        if uid in done.flagged:
            parts.append(f"flagged {keyword}")
        else:
            not_done.append(f"not flagged: the server did not keep the keyword {keyword}")
    if move_to is not None:
        if uid in done.moved:
            parts.append(f"moved to {move_to}")
        else:
            not_done.append(f"not moved: the server said it moved it to {move_to} and did not (tried again next run)")
    return "; ".join([" and ".join(parts)] * bool(parts) + not_done)


def _all_done(uid, done, move_to, keyword):
    """Whether all that was asked for the message `uid` is done, as the folder shows it."""
    return uid not in done.gone and (keyword is None or uid in done.flagged) and (move_to is None or uid in done.moved)


MARK = "$NbtextMoved"  # the keyword of a message nbtext moves, given before the move (see the module docstring)
# (flags as flags_of gives them: upper case, as IMAP's flags are case-insensitive)
MARKED, DELETED = MARK.upper(), "\\DELETED"


class Done(namedtuple("Done", "gone flagged moved")):
    """What act did, as the folder shows it after its commands (never by a server's OK alone):
    the UIDs `gone` (deleted by another client before their STORE: nothing done), those
    `flagged` (carrying the keyword after it), those `moved` (no longer in the folder after
    MOVE, or copied: each named by the COPYUID said, or else found in the target)."""


def act(session, uids, move_to=None, keyword=None, marked=(), copied=frozenset(), target=None):
    """Give the messages `uids` the keyword, then move them to `move_to` (see the module
    docstring): those not yet marked are given MARK in the same STORE; those of `marked` carry
    it already (a move an earlier run began, or a message moved once), and `copied`
    (_Target.copies_of) are those of them whose copy is in the folder `move_to` already: those
    are only deleted here. Without UIDPLUS the messages copied are left marked \\Deleted (a
    plain EXPUNGE would remove other messages marked so). A refusal is an NbtextError: the
    messages are then where they were, or, a COPY done, marked \\Deleted only once it is.
    Returns what was done (Done), as the folder shows it: a server's OK is taken for nothing.
    A message is marked \\Deleted only once its copy is known to be in `move_to` (`target`,
    the _Target of that folder, reached as the scan reaches the folder scanned: it looks where
    a COPYUID does not name a message, and answers, without MOVE, whether the folder keeps
    MARK: one that does not is refused before anything is marked)."""
    to_copy = move_to is not None and "MOVE" not in session.capabilities and set(uids) - set(copied)
    if to_copy and not target.keeps_mark():
        raise NbtextError(
            f"{target.folder.url}: the folder keeps no keyword (its PERMANENTFLAGS have neither \\* nor {MARK}): "
            "imap-scan could not tell its copy of a message from none, and a retry would copy it twice, on a server "
            "without MOVE: nothing moved (give --move-to a folder that keeps keywords, or --keyword instead)"
        )
    fresh = [uid for uid in uids if uid not in set(marked)]
    marked = [uid for uid in uids if uid in set(marked)]
    added = ([keyword] if keyword is not None else []) + ([MARK] if move_to is not None else [])
    if added and fresh:
        session.command("STORE", uid_set(fresh), "+FLAGS.SILENT", f"({' '.join(added)})")
    if keyword is not None and marked:
        session.command("STORE", uid_set(marked), "+FLAGS.SILENT", f"({keyword})")
    # What was done, for a keyword as for a move: asked of the folder after the STORE. A UID STORE of a
    # message deleted since the scan is answered OK and changes nothing (RFC 9051: no FETCH answers it,
    # .SILENT asks for none, and not every server answers one); one of a keyword the server does not
    # keep (PERMANENTFLAGS without \*) is answered OK too.
    flags = flags_of(session, uids, [keyword] if keyword is not None else [])
    gone = {uid for uid in uids if uid not in flags}
    flagged = {uid for uid in flags if keyword is not None and keyword.upper() in flags[uid]}
    if move_to is None:
        return Done(gone, flagged, set())
    fresh = [uid for uid in fresh if uid in flags]  # (those deleted meanwhile: nothing flagged or moved)
    if fresh and "MOVE" not in session.capabilities and any(MARKED not in flags[uid] for uid in fresh):
        raise NbtextError(
            f"{session.folder.url}: the server did not keep the keyword {MARK} that imap-scan gives each "
            "message it moves (a retry would copy it twice): nothing moved"
        )
    copied = set(copied) & set(flags)
    moving = [uid for uid in uids if uid in flags and uid not in copied]
    moved = set()
    if moving and "MOVE" in session.capabilities:
        # (read before MOVE takes them away: a copy of one COPYUID does not name is looked for by them)
        identities = _identities(session, moving)
        _copyuid_sources(session, moving)  # (one said to an earlier command: not this one's)
        session.command("MOVE", uid_set(moving), mailbox_argument(move_to))
        named = _copyuid_sources(session, moving)
        left = {uid for uid in moving if uid not in flags_of(session, moving)}  # (no longer in the folder)
        # moved: gone from the folder, and, where a COPYUID was said, named there or its copy found in the target
        # (a COPYUID naming other UIDs, or some of them: the server's word against the folder's); the rest were
        # gone before the MOVE (another client's expunge)
        unnamed = left - (left if named is None else named)
        moved = left - unnamed | target.copies_among({uid: identities[uid] for uid in unnamed if uid in identities})
        gone |= left - moved
    elif moving:
        _copyuid_sources(session, moving)
        session.command("COPY", uid_set(moving), mailbox_argument(move_to))
        named = _copyuid_sources(session, moving) or set()
        # those COPYUID does not name (it said none: no UIDPLUS; or other UIDs, or some) are looked for in the target
        if unnamed := [uid for uid in moving if uid not in named]:
            named |= target.copies_of(session, unnamed)
        copied |= named
    if copied:
        session.command("STORE", uid_set(sorted(copied)), "+FLAGS.SILENT", "(\\Deleted)")
        _expunge(session, sorted(copied))
    return Done(gone, flagged, moved | copied)


def _copyuid_sources(session, uids):
    """Those of `uids` the COPYUID (RFC 4315) the server said last names as copied (their copies'
    UIDs in the target), None where it said none since this was last asked (then forgotten), or
    none that reads as one (then the copies are looked for, as without UIDPLUS)."""
    import re
    from bisect import bisect_right

    _, said = session.client.response("COPYUID")
    said = [line for line in said if isinstance(line, bytes)]
    if not said:
        return None
    found = re.match(rb"\s*\d{1,10} ([\d:,]{1,1000000}) [\d:,]", said[-1])
    if found is None:
        return None
    spans = []  # (first, last) of the source set's ranges, merged: each UID looked up in log time
    for part in found[1].split(b","):
        ends = [int(end) for end in part.split(b":") if end.isdigit() and len(end) <= 10]
        if len(ends) in (1, 2) and len(ends) == len(part.split(b":")):
            spans.append((min(ends), max(ends)))
    spans.sort()
    merged = []
    for first, end in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([first, end])
    firsts = [first for first, _ in merged]
    named = set()
    for uid in uids:
        at = bisect_right(firsts, uid) - 1
        if at >= 0 and merged[at][0] <= uid <= merged[at][1]:
            named.add(uid)
    return named


def _expunge(session, uids):
    """UID EXPUNGE of the messages `uids` (marked \\Deleted, their copies in the target
    folder) where the server has UIDPLUS; elsewhere they are left marked."""
    if uids and "UIDPLUS" in session.capabilities:
        session.command("EXPUNGE", uid_set(uids))


def flags_of(session, uids, keywords=()):
    """{UID: those of its flags a scan reads (MARKED, DELETED, and the `keywords`), upper case}
    of those of `uids` the open folder holds. Only those are made into objects: the answer (up
    to the client's bound on answers) may name other UIDs and hold any number of other flags."""
    import re

    read = (MARKED, DELETED, *(word.upper() for word in keywords))
    asked, found = set(uids), {}
    for line in session.command("FETCH", uid_set(uids), "(UID FLAGS)"):
        line = (line[0] if isinstance(line, tuple) else line) or b""
        # (no flag holds a parenthesis: a FLAGS list read up to the next one, in linear time)
        uid, flags = answered_uid(line), re.search(rb"\bFLAGS \(([^()]*)\)", line)
        if uid in asked and flags:
            said = b" " + flags[1].upper() + b" "
            found[uid] = {flag for flag in read if re.search(rb"\s" + re.escape(flag.encode()) + rb"\s", said)}
    return {uid: found[uid] for uid in uids if uid in found}


class _Target:
    """The folder spam is moved to, looked into (read-only, a connection of its own, opened
    only when needed) for the copies of moves begun, and of moves whose COPYUID does not name
    them (or which say none)."""

    def __init__(self, folder, access):
        self.folder, self.access = folder, access
        self.kept = None  # whether it keeps MARK (keeps_mark), asked once a run

    def keeps_mark(self):
        """Whether the folder keeps the keyword MARK, as the PERMANENTFLAGS of its SELECT say (an
        EXAMINE's say it keeps none; none said: it keeps them all, RFC 3501 7.1): a copy there without
        it is none that copies_of can find. Asked of the server once a run."""
        if self.kept is None:
            with self.opened(readonly=False) as there:
                kept = there.permanent_flags
            self.kept = kept is None or bool({"\\*", MARKED} & kept)
        return self.kept

    @contextmanager
    def opened(self, readonly):
        """A Session of the folder, open; where the server will not open it (a NO to its
        EXAMINE or SELECT: an insert-only Junk, RFC 4314's `li`) or its connection is lost or
        stalls, a Refused of the target's: the message it was opened for kept to try again,
        counted against none (_its_message)."""
        try:
            with Session(self.folder, readonly=readonly, access=self.access) as there:
                yield there
        except Refused:
            raise
        except NbtextError as e:  # (its connection lost or stalled too: the target's, as its refusals)
            raise Refused(str(e), str(e), command="SELECT", folder=self.folder.url) from None

    def copies_of(self, session, uids):
        """Those of `uids` (messages of `session`'s folder carrying MARK) that have a copy in
        the target folder: a message there carrying MARK with the same INTERNALDATE,
        RFC822.SIZE and Message-ID lines (COPY keeps them all); each copy answers for one."""
        return self.copies_among(_identities(session, uids))

    def copies_among(self, wanted):
        """Those UIDs of `wanted` ({UID: its identity, as _identities gives it}) that have a copy
        in the target folder (as copies_of): a message moved away is looked for by the identity
        read before it went."""
        if not wanted:
            return set()
        found, waiting = set(), {}  # (the messages wanted not yet found, by their identity)
        for uid, identity in sorted(wanted.items(), reverse=True):
            waiting.setdefault(identity, []).append(uid)
        with self.opened(readonly=True) as there:
            for size in sorted({identity[1] for identity in wanted.values()}):
                larger = ["LARGER", str(size - 1)] if size > 0 else []
                # (UNDELETED: nbtext's copies never carry \Deleted; one that does is the user's, about
                # to go, as a client that copies and marks leaves it: no copy of a move begun)
                candidates = searched(there, "KEYWORD", MARK, "UNDELETED", *larger, "SMALLER", str(size + 1))
                # each copy found answers for one message wanted; an answer of IDENTITIES_ASKED compared and let go
                # (a campaign's copies of one size, each with a long Message-ID line, are not held all at once)
                # (newest first: a copy looked for is most often the last made; none read once all are found)
                candidates = candidates[::-1]
                for at in range(0, len(candidates), IDENTITIES_ASKED):
                    if len(found) == len(wanted):
                        break
                    for copy in _identities_of(there, candidates[at : at + IDENTITIES_ASKED]).values():
                        if waiting.get(copy):
                            found.add(waiting[copy].pop())
        return found


def _identities(session, uids):
    """{UID: (INTERNALDATE, RFC822.SIZE, its Message-ID lines)} of those of `uids` the open
    folder holds, asked for IDENTITIES_ASKED at a time: each answer holds a Message-ID line of
    up to a header's size (a campaign's copies of one size in the target are many, and a batch
    is BATCH messages: one answer of all of them passed the client's bound on an answer)."""
    uids = list(uids)
    found = {}
    for at in range(0, len(uids), IDENTITIES_ASKED):
        found.update(_identities_of(session, uids[at : at + IDENTITIES_ASKED]))
    return found


def _identities_of(session, uids):
    """_identities of at most IDENTITIES_ASKED `uids`, in one FETCH."""
    import re

    items = "(UID INTERNALDATE RFC822.SIZE BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])"
    # a message's answer: [its line up to a literal, the literal or None, the rest's pieces] (joined
    # once: each piece added to the bytes before it copied them all again, quadratic in the answer)
    asked, records = set(uids), []
    for item in session.command("FETCH", uid_set(uids), items):
        if isinstance(item, tuple):
            records.append([item[0], item[1], []])
        elif isinstance(item, bytes) and (not records or re.match(rb"\d+ \(", item)):
            records.append([item, None, []])
        elif isinstance(item, bytes):
            records[-1][2].append(item)
    found = {}
    for head, literal, rest in records:
        said = head + b" " + b"".join(rest)
        uid, size = answered_uid(said), re.search(rb"\bRFC822\.SIZE (\d{1,20})\b", said)
        date = re.search(rb'\bINTERNALDATE "([^"]*)"', said)
        if uid in asked and size and date:
            found[uid] = (date[1], int(size[1]), b" ".join((literal or b"").split()))
    return {uid: found[uid] for uid in uids if uid in found}


def _check_folder(session, name):
    """The folder spam is moved to exists: said before anything is scanned. LIST reads % and *
    in a name as wildcards, so a folder it lists is taken only under the very name asked for
    (INBOX in any case), and one it says cannot be selected (\\Noselect, \\NonExistent) is none."""
    answer, data = session.call(session.client.list, '""', mailbox_argument(name))
    asked = _listed_name(mailbox_argument(name).encode())
    listed = [_list_entry(item) for item in data if item] if answer == "OK" else []
    if not [
        flags
        for flags, said in listed
        if (said == asked or said.upper() == asked.upper() == b"INBOX")
        and not {b"\\NOSELECT", b"\\NONEXISTENT"} & set(flags.upper().split())
    ]:
        raise NbtextError(
            f"there is no folder {name!r} on {session.folder.server} to move spam to (create it in your mail program)"
        )


def _list_entry(item):
    """(flags, name) of one line of a LIST answer as imaplib gives it: `(FLAGS) "DELIMITER" NAME`,
    the name an atom, a quoted string or a literal (a tuple); (b"", b"") for a line not so."""
    import re

    line, literal = (item[0], item[1]) if isinstance(item, tuple) else (item, None)
    said = re.match(rb'\(([^()]*)\) (?:"(?:[^"\\]|\\.)*"|NIL) ', line or b"")
    if said is None:
        return b"", b""
    return said[1], literal if literal is not None else _listed_name(line[said.end() :])


def _listed_name(said):
    """A mailbox name as a LIST line or a command says it: an atom, or a quoted string unquoted."""
    import re

    if said.startswith(b'"') and said.endswith(b'"') and len(said) > 1:
        return re.sub(rb"\\(.)", rb"\1", said[1:-1])
    return said


# --- the state file ---------------------------------------------------------------------------
def state_key(folder):
    """The name the state file gives the Folder `folder`: its URL in one spelling, whatever the
    command line's (the scheme's own port left out, INBOX in any case INBOX, as RFC 3501 has it,
    an IP address in its shortest form, a host's final dot dropped), so one folder is one entry.
    The one place it is made (a state an older nbtext wrote under a URL as spelled: _remembered)."""
    import ipaddress

    host, zone = folder.host.rstrip("."), ""
    try:
        address, _, zone = host.partition("%")
        host = ipaddress.ip_address(address).compressed
    except ValueError:  # (a name: as the resolver asks for it, its IDNA form, whatever the spelling's case)
        zone = ""
        try:
            host = host.encode("idna").decode("ascii").lower().rstrip(".")
        except UnicodeError:
            host = host.lower()
    return folder._replace(
        host=host + (f"%{zone}" if zone else ""),
        port=None if folder.port == PORTS[folder.scheme] else folder.port,
        name="INBOX" if folder.name.upper() == "INBOX" else folder.name,
        uid_validity=None,
    ).url


def _remembered(state, key, uid_validity):
    """What `state` remembers of the folder `key` (state_key), taken out of it: the entries of
    every spelling of its URL (an older nbtext keyed them as the command line spelled them)
    under the folder's UIDVALIDITY now merged (each was scanned that far: the last UID the
    furthest; the messages to try again, the moves begun and a stalled batch of each kept, those
    a merged entry still reads again); none under it, the entry of the key as it is (a folder
    replaced: scanned again from its start)."""
    spellings = {name: state.pop(name) for name in list(state) if _key_of(name) == key}
    same = [kept for kept in spellings.values() if kept.get("uid_validity") == uid_validity]
    if not same:
        return spellings.get(key, {})
    last = max(kept["last_uid"] for kept in same)
    skipped = {}
    for kept in same:
        for uid, runs in kept.get("skipped", []):
            skipped[uid] = max(runs, skipped.get(uid, 0))
    merged = _folder_state(
        uid_validity,
        last,
        skipped,  # (past SKIPPED_KEPT when the spellings' together are: scan gives the oldest up, _bounded)
        max(kept.get("stalled", 0) for kept in same),
        _record({uid for kept in same for uid in kept.get("moving", [])}, last, skipped),
    )
    state[key] = merged
    return merged


def _key_of(name):
    """The state_key of a state file's entry `name` (a URL; one no URL reads is its own)."""
    try:
        return state_key(parse(name))
    except NbtextError:
        return name


def read_state(path):
    """{folder (state_key's; an older nbtext's as spelled): {"uid_validity", "last_uid", and "skipped" where messages are to be
    tried again: [[UID, runs that skipped it], ...], "stalled", "moving" where a move was begun:
    [UID, ...]}} of the state file, {} when there is none. The one reader, and the one check of
    what it holds."""
    _state_path_checked(path)
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise NbtextError(f"cannot read {path}: {e.strerror or e}") from None
    except (ValueError, RecursionError):  # (JSON nested deeper than Python recurses: no state file either)
        data = None
    folders = data.get("folders") if isinstance(data, dict) and data.get("version") == STATE_VERSION else None
    if not isinstance(data, dict) or not {"version", "folders"} <= data.keys():  # (one imap-scan did not write)
        raise NbtextError(
            f"{path} is not a state file of nbtext imap-scan: give --state a path of its own (imap-scan writes "
            "its state there)"
        )
    if not isinstance(folders, dict) or not all(
        isinstance(v, dict)
        and _a_uid(v.get("last_uid"))
        and (v.get("uid_validity") is None or _a_uid(v["uid_validity"]))
        and _skipped_list(v.get("skipped", []), v["last_uid"])
        and ("stalled" not in v or _a_uid(v["stalled"]) and v["stalled"] > v["last_uid"])
        and _moving_list(v.get("moving", []), v["last_uid"], v.get("skipped", []))
        for v in folders.values()
    ):
        raise NbtextError(
            f"{path} is not a state file of nbtext imap-scan as this one writes them, or a damaged one (remove it to "
            "scan its folders again from their start)"
        )
    return folders


def _moving_list(value, last_uid, skipped):
    """Whether `value` can be a folder's record of moves begun ("moving") as the state keeps it
    (_record): at most MOVING_KEPT distinct UIDs, each past `last_uid` or one of `skipped` (a
    state file an older build wrote has none)."""
    return (
        isinstance(value, list)
        and len(value) <= MOVING_KEPT
        and all(_a_uid(uid) and uid > 0 and (uid > last_uid or uid in {pair[0] for pair in skipped}) for uid in value)
        and len(set(value)) == len(value)
    )


def _state_path_checked(path):
    """Refuse a state path that is not a regular file (a FIFO would wait for ever, /dev/zero
    never ends: read whole, it took all memory), as every model file's reader does; one that
    does not exist is a first run's."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise NbtextError(f"cannot read {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
        raise NbtextError(f"--state {path} is {kind}; give a file's path (imap-scan writes its state there)")


def _skipped_list(value, last_uid):
    """Whether `value` can be a folder's "skipped" as the state remembers it: at most
    SKIPPED_KEPT [UID, runs] pairs of distinct UIDs 1..last_uid, each skipped by 1 to TRIES - 1
    runs (a state file an older build wrote has none)."""
    return (
        isinstance(value, list)
        and len(value) <= SKIPPED_KEPT
        and all(
            isinstance(pair, list)
            and len(pair) == 2
            and _a_uid(pair[0])
            and 1 <= pair[0] <= last_uid
            and type(pair[1]) is int
            and 1 <= pair[1] < TRIES
            for pair in value
        )
        and len({pair[0] for pair in value}) == len(value)
    )


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
        self.path, self.fd = lock_path(path), None
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
