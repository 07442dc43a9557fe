"""A change is a record: a document leaves the class it was learned under and joins another.

Every change of the documents a trained model holds is one Change: `train --update` (a
document joins its class, or moves there from the class it was learned under), `forget`
(it leaves its class and joins none), and the records of a model file's pending section
(nbtext.modelfile.pending), counted into the model loaded whole (nbtext.classifier.counted)
and followed token by token on the one-message path (nbtext.classifier.purescore). What a
change does is written here once, without numpy (the one-message path never imports it):

    key        the document's journal key (nbtext.reading.documents.journal_key)
    before     the class it was learned under, or None: it was not learned
    after      the class it is learned under now, or None: it is forgotten
    tokens     its tokens, as the model tokenizes it
    mail       whether it was read as e-mail

    the class counts     before −1, after +1 (`steps`), and each of its tokens' counts
                         −n and +n likewise (`moves`: a count table's side, CountTable.apply;
                         HeldCounts.add: the Ledger's and the online learner's, counts in
                         lists), n its occurrences, or 1 in a model of presence (`document_counts`)
    the one-document     d, UNK_k and T_k after the counts move (`record_moved`: the rule, written
    record               once at the end of this module; every learner follows it)
    the journal          key -> after, the last change of a key winning (forgotten: left
                         out; Ledger)
    mail documents       +1 for a document not learned before, −1 for one forgotten
                         (`mail_moved`)

A document's change is made only when it changes something (`outcome`): learning one
already learned under its label, or forgetting one never learned, is no change. Every learner
of given documents (`train --update` and `forget`, the one-message learner) goes through one
loop, `Ledger.changes_of`: each document read, its journal key found, its outcome asked at one
door (`Ledger.change`), its tokens made only when it changes something; the learner hands the
Changes on (a count table's, a pending section's records). The online learner's documents each
join their class (a Change from none).

A training from scratch is a change of its own kind (`LearnedBatch`): each document it is given
is a change from no class to its label, made for every copy, since a training counts each
file it is given (docs/performance.md, "Copies of one message"), so nothing is looked up
and no outcome asked. Its class and token counts each take the step `LEARNED_STEP`
(counted a batch at a time, as sparse products), its journal and mail documents the
Ledger's (`Ledger.learn`): the same rules, copies counted. A merge of models is a training whose
batches are the models (nbtext.jobs.merging).
"""

from __future__ import annotations

from collections import Counter

TYPE_CHECKING = False  # (typing is not imported on the one-message path; the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from typing import Any

    from nbtext.reading.documents import Document

    Step = tuple[str, int]  # (a class, −1 for the one a document leaves, +1 for the one it joins)


class Change:
    """One change: its document's journal `key`, the class `before` and `after` it (None:
    none), its `tokens` and whether it was read as e-mail (`mail`). (A plain class: a
    namedtuple's definition would cost the one-message learner's start-up more.)"""

    __slots__ = ("key", "before", "after", "tokens", "mail")
    key: bytes
    before: str | None
    after: str | None
    tokens: Sequence[str]
    mail: bool

    def __init__(self, key: bytes, before: str | None, after: str | None, tokens: Sequence[str], mail: bool):
        self.key, self.before, self.after, self.tokens, self.mail = key, before, after, tokens, mail


# What a document given to `train --update` or `forget` came to (summaries count them by
# these names): only the first three change the model.
OUTCOMES = ("added", "moved", "duplicates", "forgotten", "unknown")
CHANGING = ("added", "moved", "forgotten")


def outcome_counts(forget: bool) -> dict[str, int]:
    """{outcome: 0} of what the documents given to `train --update` (with `forget`: to
    `forget`) can come to, the counts their summary says."""
    return dict.fromkeys(OUTCOMES[3:] if forget else OUTCOMES[:3], 0)


def changes_anything(stats: Mapping[str, int]) -> bool:
    """Whether the documents of `stats` ({outcome: number}) changed the model: one added,
    moved or forgotten (known and unknown ones change nothing)."""
    return any(stats.get(name) for name in CHANGING)


def outcome(before: str | None, after: str | None) -> str:
    """What learning a document under `after` (None: forgetting it) is, when the model holds
    it under `before` (None: not at all): "added", "moved", "forgotten", or no change,
    "duplicates" (learned under that label already) or "unknown" (forgetting one never
    learned). A Change is made exactly when before != after."""
    if after is None:
        return "forgotten" if before is not None else "unknown"
    if before == after:
        return "duplicates"
    return "moved" if before is not None else "added"


def steps(change: Change) -> list[Step]:
    """[(class, −1 or +1)]: the class its document leaves and the one it joins, either none."""
    return [(label, sign) for label, sign in ((change.before, -1), (change.after, 1)) if label is not None]


def mail_step(change: Change) -> int:
    """The change of the number of documents read as mail: +1 for a mail document not
    learned before, −1 for one forgotten, 0 for one moved or not mail."""
    return mail_moved(int(change.mail), change.before is not None, change.after is not None)


def mail_moved(n: int, left: bool, joined: bool) -> int:
    """The change of the number of documents read as mail when `n` of them leave a class
    (`left`), join one (`joined`), or both (moved: no change)."""
    return n * (joined - left)


def moves(changes: Iterable[Change]) -> list[tuple[int, list[Sequence[str]], list[str]]]:
    """The counts `changes` move, as a count table adds them (nbtext.stats.counting.CountTable):
    [(sign, token lists, labels)], the documents that leave a class (sign −1) first, then
    those that join one (+1), each by its `steps`."""
    grouped = []
    for sign in (-1, 1):
        moved = [(change.tokens, label) for change in changes for label, step in steps(change) if step == sign]
        if moved:
            token_lists, labels = zip(*moved)
            grouped.append((sign, list(token_lists), list(labels)))
    return grouped


class LearnedBatch:
    """A batch of documents a training learns from scratch: a change of its own kind, each
    document a change from no class to its label, every copy one (see the module's text).
    Held by columns, not as Changes: a training counts a batch at once.

        entries   [(journal key, label)] of its documents, in the order they were read
        mail      how many of them were read as e-mail"""

    __slots__ = ("entries", "mail")
    entries: list[tuple[bytes, str]]
    mail: int

    def __init__(self, entries: list[tuple[bytes, str]], mail: int):
        self.entries, self.mail = entries, mail


# The step a training's documents take, as `moves` gives changes' signs: each one, every copy,
# joins the class of its label (+1), and none leaves one.
LEARNED_STEP = 1


def of_record(record: Mapping[str, Any]) -> Change:
    """The Change a pending record (nbtext.modelfile.pending) writes down."""
    return Change(bytes.fromhex(record["hash"]), record["from"], record["label"], record["tokens"], record["mail"])


def document_counts(tokens: Iterable[str], presence: bool) -> dict[str, int]:
    """{token: what a document adds to its count in its class}: its occurrences, or 1 for
    each distinct token when the model counts presence (the documents holding a token), as
    a count table counts a batch (nbtext.stats.counting.cell_counts) and an online run
    (nbtext.jobs.online) learns a message."""
    counted = Counter(tokens)
    return dict.fromkeys(counted, 1) if presence else counted


class Ledger:
    """Changes applied in order (`add`; a training's batches: `learn`) over a model that holds
    documents as `learned_before(key)` says (the class of journal key `key`, or None; a
    training's: none): the journal's changes (`journal`: key -> class now, None for
    forgotten), the change of the documents read as mail, and, given the
    model's `classes` (and whether it counts `presence`), per class the change of its
    documents (`class_count`) and of each token's counts (`delta`): what the one-message
    path, which has no count table, needs."""

    def __init__(
        self,
        learned_before: Callable[[bytes], str | None] | None = None,
        classes: Sequence[str] | None = None,
        presence: bool = False,
    ):
        self._learned_before = learned_before
        self.presence = presence
        self.journal: dict[bytes, str | None] = {}
        self.mail_documents = 0
        # with classes: what the changes add to each class's documents and (`deltas`) to each
        # token's counts per class, of every token a change counted (HeldCounts, from none)
        self.moved = None if classes is None else HeldCounts(classes, presence, 0)
        self.row = None if self.moved is None else self.moved.row
        self.class_count = None if self.moved is None else self.moved.class_count
        self.deltas: dict[str, list[int]] = {} if self.moved is None else self.moved.counts

    def learned_as(self, key: bytes) -> str | None:
        """The class the document of journal key `key` is learned under after the changes."""
        if key in self.journal:
            return self.journal[key]
        return None if self._learned_before is None else self._learned_before(key)

    def changes_of(
        self,
        documents: Iterable[Document],
        tokenize: Any,
        forget: bool,
        stats: dict[str, int],
        on_error: Callable[[Document, str], None] | None = None,
        on_unknown: Callable[[Document], None] | None = None,
    ) -> Iterator[Change]:
        """The Changes `documents` make, in order: the loop of every learner of given documents
        (`train --update` and `forget`, nbtext.jobs.training; the one-message learner,
        nbtext.jobs.learnone). Each document is read (reading.documents.each_loaded), its data
        made once (read_once), its journal key found (journal_key: of that data, or as a model
        of older builds holds it) and its change asked at the door (`change`: to its label, or
        with `forget` to none), its tokens (`tokenize`, a model's tokenizer) made only when it
        changes something. The caller hands each Change on (a count table's changes, a pending
        record) and adds it (`add`) before the next is asked: a later copy of a document is
        known by it. One that cannot be read goes to `on_error(document, message)` (without
        it: NbtextError naming it), one forgotten that was never learned to `on_unknown(document)`."""
        from nbtext.errors import NbtextError
        from nbtext.reading.documents import document_key, each_loaded, journal_key, read_once

        def learned(key: bytes) -> bool:
            return self.learned_as(key) is not None

        def tokenized(data: Any) -> Callable[[], tuple[Sequence[str], bool]]:
            return lambda: (tokenize(data), tokenize.reads_as_mail(data))

        for doc in each_loaded(documents):
            try:
                if doc.error is not None:
                    raise NbtextError(f"cannot read it ({doc.error})")
                data = read_once(doc.data)  # (what its key, its tokens and whether it reads as mail are of)
                key = journal_key(doc.data, learned, document_key(data), tokenize)
                change = self.change(key, None if forget else doc.label, stats, tokenized(data))
            except NbtextError as e:
                if on_error is None:
                    raise NbtextError(f"{doc.name}: {e}") from None
                on_error(doc, str(e))
                continue
            if change is not None:
                yield change
            elif forget and on_unknown is not None:
                on_unknown(doc)

    def change(
        self,
        key: bytes,
        after: str | None,
        stats: dict[str, int],
        document: Callable[[], tuple[Sequence[str], bool]],
    ) -> Change | None:
        """What the document of journal key `key` learned under `after` (None: forgotten)
        comes to over the changes so far: its outcome, counted in `stats` ({outcome: n}), and
        the Change it makes, or None when it makes none (`outcome`). `document()`: the Change's
        tokens and whether it reads as mail, asked only then (no document that changes nothing
        is tokenized). The door `changes_of` asks; the Change is the caller's to add."""
        before = self.learned_as(key)
        happened = outcome(before, after)
        if before == after:
            stats[happened] += 1
            return None
        tokens, mail = document()  # (before it is counted: a document that cannot be read is not)
        stats[happened] += 1
        return Change(key, before, after, tokens, mail)

    def add(self, change: Change) -> None:
        self._entered(((change.key, change.after),), mail_step(change))
        if self.moved is not None:
            self.moved.add(change)

    def learn(self, learned: LearnedBatch) -> None:
        """A training's batch (LearnedBatch): each document a change from no class to its label,
        so none is looked up, and every copy counts among the documents read as mail."""
        self._entered(learned.entries, mail_moved(learned.mail, False, True))

    def _entered(self, entries: Iterable[tuple[bytes, str | None]], mail_step: int) -> None:
        # the journal's rule: a key is held under the class its last change leaves it in
        self.journal.update(entries)
        self.mail_documents += mail_step

    def delta(self, token: str) -> list[int] | None:
        """What the changes add to `token`'s count in each class (with `classes`), or None if
        no change counted it."""
        return self.deltas.get(token)

    def journal_over(self, journal: Mapping[bytes, str]) -> dict[bytes, str]:
        """The journal {key: class} of a model that held `journal`, after the changes."""
        journal = dict(journal)
        for key, label in self.journal.items():
            if label is None:
                journal.pop(key, None)
            else:
                journal[key] = label
        return journal


# --- the counts a change moves, and the one-document record after them --------------------------
# A model's one-document record (nbtext.classifier.model.one_document_record; a pending record's
# `derived`) holds what scoring one document needs besides its own tokens' counts: d, the number
# of features (the tokens kept by --min-count: a total count of at least min_count; and UNK),
# UNK_k, the other tokens' counts (None: no UNK), and T_k = Σ_j B_kj over the features, UNK's
# included. When tokens' counts move from B_kj to B'_kj (whole numbers: every sum exact in any
# order, as the model's own):
#
#     kept_j   = (Σ_k B_kj >= min_count)          before and after (a token never counted: not kept)
#     d'       = d + Σ_j (kept'_j − kept_j)
#     UNK'_k   = UNK_k + Σ_j ([not kept'_j] B'_kj − [not kept_j] B_kj)
#     T'_k     = T_k + Σ_j ([kept'_j] B'_kj − [kept_j] B_kj) + (UNK'_k − UNK_k)
#
# written once (`record_moved`), from what the tokens add up to: those kept (or pruned) before
# and after add their change alone; those whose kept_j turns, their counts before and after.
# Every learner follows it: the one-message learner and reader (`record_after`, of the tokens'
# counts in the file: nbtext.classifier.purescore), the online learner and the TONE pass (a
# HeldCounts following its record: nbtext.jobs.online).

if TYPE_CHECKING:
    Record = dict[str, Any]  # {"features": d, "unk": UNK_k or None, "totals": T_k}
    Turned = tuple[int, Sequence[float], Sequence[float]]  # (how many, Σ_j B_kj, Σ_j B'_kj) per class


class CountBelowZero(ValueError):
    """A change takes a token's count below 0: forgotten where it was never counted."""


def empty_record(n_classes: int, unk: bool) -> Record:
    """The one-document record of no counts (UNK a feature when `unk`)."""
    return {"features": int(unk), "unk": [0.0] * n_classes if unk else None, "totals": [0.0] * n_classes}


def record_moved(
    record: Record,
    kept: Sequence[float] | None,
    pruned: Sequence[float] | None,
    became: Turned | None = None,
    ceased: Turned | None = None,
) -> Record:
    """The one-document record after tokens' counts move (see above), from `record`: per class
    what moves in the counts of the tokens `kept` both before and after, and of those `pruned`
    both times (None: none), and of the tokens that `became` features and those that `ceased`
    to be ones, (how many, their counts before, their counts after) summed per class."""
    features, unk, totals = record["features"], record["unk"], list(record["totals"])
    unk = None if unk is None else list(unk)
    unk_before = None if unk is None else unk.copy()
    if kept is not None:
        totals = [t + moved for t, moved in zip(totals, kept)]
    if unk is not None and pruned is not None:
        unk = [u + moved for u, moved in zip(unk, pruned)]
    if became is not None:  # [kept'] B' in T, [not kept] B out of UNK
        n, before, after = became
        features += n
        totals = [t + b for t, b in zip(totals, after)]
        if unk is not None:
            unk = [u - b for u, b in zip(unk, before)]
    if ceased is not None:  # [kept] B out of T, [not kept'] B' into UNK
        n, before, after = ceased
        features -= n
        totals = [t - b for t, b in zip(totals, before)]
        if unk is not None:
            unk = [u + b for u, b in zip(unk, after)]
    if unk is not None and unk_before is not None:  # T_k holds UNK's counts: + (UNK'_k − UNK_k)
        totals = [t + (u - was) for t, u, was in zip(totals, unk, unk_before)]
    return {"features": features, "unk": unk, "totals": totals}


def _summed(rows: Sequence[Sequence[float]]) -> list[float] | None:
    """Per class the sum of `rows` (each a count per class), or None for no rows."""
    return [sum(column) for column in zip(*rows)] if rows else None


def record_after(
    record: Record,
    deltas: Mapping[str, Sequence[float]],
    counts_before: Callable[[str], Sequence[float] | None],
    min_count: int,
) -> Record:
    """The one-document record after `deltas` ({token: what is added to its count in each
    class}) from `record`, the record before them, `counts_before(token)` giving a token's
    counts per class before them (None: never counted): record_moved of what they add up to.
    CountBelowZero: a count taken below 0."""
    kept: list[Sequence[float]] = []
    pruned: list[Sequence[float]] = []
    became: list[tuple[Sequence[float], list[float]]] = []
    ceased: list[tuple[Sequence[float], list[float]]] = []
    zeros = [0.0] * len(record["totals"])
    for token, delta in deltas.items():
        before = counts_before(token) or zeros
        if min(delta) < 0 and min(map(sum, zip(before, delta))) < 0:
            raise CountBelowZero("forgotten where it was never counted")
        total = sum(before)
        kept_before, kept_after = total >= min_count, total + sum(delta) >= min_count
        if kept_before == kept_after:  # B'_kj − B_kj, into T_k or UNK_k: summed a class at a time
            (kept if kept_after else pruned).append(delta)
        else:
            (became if kept_after else ceased).append((before, [b + d for b, d in zip(before, delta)]))
    return record_moved(record, _summed(kept), _summed(pruned), _turned(became), _turned(ceased))


def _turned(tokens: list[tuple[Sequence[float], list[float]]]) -> Turned | None:
    """(how many, Σ B, Σ B') per class of tokens [(B, B')] whose kept_j turns, or None for none."""
    if not tokens:
        return None
    before, after = zip(*tokens)
    return len(tokens), _summed(list(before)) or [], _summed(list(after)) or []


def _turned_by(n: int, before: list[list[Any]], moved: int, unit: list[Any]) -> Turned | None:
    """(how many, Σ B, Σ B') per class of `n` tokens whose kept_j turns as one change moves
    `moved` occurrences of them (`unit` in each class: its steps), `before` the counts of those
    held before (the others' are 0), or None for none."""
    if not n:
        return None
    counts_before = _summed(before) or [0.0] * len(unit)
    return n, counts_before, [b + moved * u for b, u in zip(counts_before, unit)]


class HeldCounts:
    """Counts per class that changes move one document at a time (`add`): each class's documents
    (`class_count`) and each token's counts (`counts`: {token: per class}, of every token a
    change counted), from none or from `start` (a model's: {token: counts}, and its classes'
    documents), and, given `min_count`, the one-document record of them after each change
    (`record`, as record_moved says; with `unk`, UNK a feature). A Ledger's (what a pending
    section's changes add, from none: `zero` 0) and the online learner's (the documents learned
    so far: nbtext.jobs.online, `zero` 0.0)."""

    def __init__(
        self,
        classes: Sequence[str],
        presence: bool,
        zero: float,
        min_count: int | None = None,
        unk: bool = False,
        start: Mapping[str, Sequence[float]] | None = None,
        start_documents: Sequence[float] | None = None,
    ):
        self.row = {label: k for k, label in enumerate(classes)}
        self.presence = presence
        self.min_count = min_count
        self.zeros = [zero] * len(classes)
        self.class_count: list[Any] = self.zeros.copy() if start_documents is None else list(start_documents)
        self.counts: dict[str, list[Any]] = {}
        self.record = None if min_count is None else empty_record(len(classes), unk)
        if start:
            self.counts = {token: list(counts) for token, counts in start.items()}
            if self.record is not None and min_count is not None:
                self.record = record_after(self.record, self.counts, lambda token: None, min_count)

    def n_kept(self) -> int:
        """The tokens held that are features (the record's d, UNK's left out)."""
        assert self.record is not None
        return self.record["features"] - (self.record["unk"] is not None)

    def add(self, change: Change) -> None:
        """The counts after `change` (its `steps`: −1 in the class it leaves, +1 in the one it
        joins, each token's n by document_counts), and the record after them, if followed."""
        moved = [(self.row[label], sign) for label, sign in steps(change)]
        for k, sign in moved:
            self.class_count[k] += sign
        token_counts = document_counts(change.tokens, self.presence)
        if self.record is not None:
            self._followed(token_counts, moved)
            return
        counts_of, zeros = self.counts, self.zeros
        for token, n in token_counts.items():
            counts = counts_of.get(token)
            if counts is None:
                counts = counts_of[token] = zeros.copy()
            for k, sign in moved:
                counts[k] += sign * n

    def _followed(self, token_counts: Mapping[str, int], moved: list[tuple[int, int]]) -> None:
        """`add`'s counts moved and the record after them: each token's n summed by whether it is
        kept (or pruned) before and after, or becomes a feature, or ceases to be one (those held
        before: their counts before, summed)."""
        assert self.record is not None and self.min_count is not None
        counts_of, zeros, min_count = self.counts, self.zeros, self.min_count
        joins = sum(sign for _, sign in moved)  # a token's total changes by n times this
        kept_n = pruned_n = became_n = ceased_n = became = ceased = 0
        became_before: list[list[Any]] = []  # the counts before of the tokens held that turn
        ceased_before: list[list[Any]] = []
        # every token held kept, and a document that only joins a class: a held token stays kept
        # (its total only grows), so its total is not summed
        stays_kept = len(moved) == 1 and moved[0][1] == 1 and self.n_kept() == len(counts_of)
        joined = moved[0][0]  # (the class joined, when that is all the change does)
        for token, n in token_counts.items():
            counts = counts_of.get(token)
            if counts is None:
                counts = counts_of[token] = zeros.copy()
                total = 0
            elif stays_kept:
                counts[joined] += n
                kept_n += n
                continue
            else:
                total = sum(counts)
            kept_before, kept_after = total >= min_count, total + joins * n >= min_count
            if kept_before != kept_after and total:
                (became_before if kept_after else ceased_before).append(counts.copy())
            for k, sign in moved:
                counts[k] += sign * n
            if kept_before == kept_after:
                if kept_after:
                    kept_n += n
                else:
                    pruned_n += n
            elif kept_after:
                became, became_n = became + 1, became_n + n
            else:
                ceased, ceased_n = ceased + 1, ceased_n + n
        unit = self.zeros.copy()  # what one occurrence moves in each class
        for k, sign in moved:
            unit[k] += sign
        self.record = record_moved(
            self.record,
            [kept_n * u for u in unit] if kept_n else None,
            [pruned_n * u for u in unit] if pruned_n else None,
            _turned_by(became, became_before, became_n, unit),
            _turned_by(ceased, ceased_before, ceased_n, unit),
        )

    def add_counted_elsewhere(self, change: Change, kept_n: float, new_tokens: int, new_n: float) -> None:
        """`change` (a document that joins a class) whose tokens' counts are held elsewhere (the
        TONE pass's array: nbtext.jobs.online.held_steps, --min-count 1): the class's documents,
        and the record after its tokens held before (their n summed: `kept_n`) and its
        `new_tokens` counted for the first time (their n: `new_n`), each a feature from now on."""
        assert self.min_count == 1 and self.record is not None
        ((k, sign),) = [(self.row[label], sign) for label, sign in steps(change)]
        self.class_count[k] += sign
        unit = self.zeros.copy()
        unit[k] = 1
        self.record = record_moved(
            self.record,
            [kept_n * u for u in unit],
            None,
            (new_tokens, self.zeros, [new_n * u for u in unit]) if new_tokens else None,
        )
