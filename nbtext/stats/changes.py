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
                         −n and +n likewise (`moves`: a count table's side, CountTable.apply),
                         n its occurrences, or 1 in a model of presence (`document_counts`)
    the journal          key -> after, the last change of a key winning (forgotten: left
                         out; Ledger)
    mail documents       +1 for a document not learned before, −1 for one forgotten
                         (`mail_moved`)

A document's change is made only when it changes something (`outcome`): learning one
already learned under its label, or forgetting one never learned, is no change.

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
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

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
        self.row = None if classes is None else {label: k for k, label in enumerate(classes)}
        self.class_count = None if classes is None else [0] * len(classes)
        # with classes: {token: what the changes add to its count in each class}, of every
        # token a change counted (kept as they are added: one pass over each document)
        self.deltas: dict[str, list[int]] = {}

    def learned_as(self, key: bytes) -> str | None:
        """The class the document of journal key `key` is learned under after the changes."""
        if key in self.journal:
            return self.journal[key]
        return None if self._learned_before is None else self._learned_before(key)

    def add(self, change: Change) -> None:
        self._entered(((change.key, change.after),), mail_step(change))
        if self.row is not None and self.class_count is not None:  # (both, or neither: with classes)
            moved = [(self.row[label], sign) for label, sign in steps(change)]
            for k, sign in moved:
                self.class_count[k] += sign
            zeros = [0] * len(self.class_count)
            for token, n in document_counts(change.tokens, self.presence).items():
                delta = self.deltas.get(token)
                if delta is None:
                    delta = self.deltas[token] = zeros.copy()
                for k, sign in moved:
                    delta[k] += sign * n

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


def counts_after(counts: Iterable[float], n: int, change: Change, row: Mapping[str, int]) -> list[float]:
    """A token's counts per class (a list) after `change` moves `n` of it (its count in the
    document) between the classes of rows `row` (class -> row)."""
    counts = list(counts)
    for label, sign in steps(change):
        counts[row[label]] += sign * n
    return counts
