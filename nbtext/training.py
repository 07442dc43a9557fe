"""Training: a labelled corpus, read in batches, becomes a NaiveBayes model.

`train()` takes lists of documents and labels; `train_corpus()` streams batches of
Documents (so memory is O(classes × vocabulary) plus one batch); `update()` adds
documents to a trained model; `fit_tokens()` fits already-tokenized documents
(cross-validation folds).
"""

import numpy as np

from nbtext.counting import CountTable
from nbtext.errors import NbtextError
from nbtext.features import ids_and_indptr, one_hot
from nbtext.model import NaiveBayes, tokenized
from nbtext.settings import make_settings, make_tokenizer, presence_table, resolve_alpha
from nbtext.sources import Document, in_batches

DEFAULT_BATCH = 1000


def train(documents, labels, **options):
    """Train from parallel sequences of documents (str or bytes) and labels.

    Options (all optional) are those of `nbtext train`: model, alpha, prior, min_count,
    max_features, ngrams, unknown, input, headers, features, tf, idf, length_norm,
    weight_norm (and columns, for categorical rows); see nbtext.settings.TRAIN_DEFAULTS.

    >>> clf = train(["cheap pills now", "lunch at noon"], ["spam", "ham"], min_count=1)
    >>> clf.predict(["cheap lunch pills"])
    ['spam']
    """
    documents = list(documents)
    labels = list(labels)
    if len(documents) != len(labels):
        raise NbtextError(f"{len(documents)} documents but {len(labels)} labels")
    corpus = [Document(str(i), doc, label) for i, (doc, label) in enumerate(zip(documents, labels))]
    return train_corpus(lambda: in_batches(corpus, DEFAULT_BATCH), **options)


def train_corpus(batches, on_error=None, jobs=1, **options):
    """Train from `batches()`, a callable returning an iterator of lists of labelled Documents.

    The corpus is read once (by `jobs` worker processes when jobs > 1, each counting whole
    batches). It is read a second time for presence features with an UNK feature (which
    documents hold a pruned token is known only after counting) and for tf-idf features
    (the idf is known only after counting).
    """
    settings = make_settings(**options)
    table = CountTable(binary=presence_table(settings))
    journal = {}
    if jobs > 1:
        from nbtext.parallel import count_in_workers

        mail_documents = 0
        for exported, hashes, errors, mail_count in count_in_workers(settings, batches(), jobs):
            for name, message in errors:
                if on_error is None:
                    raise NbtextError(f"{name}: {message}")
                on_error(Document(name, None), message)
            table.merge(exported)
            journal.update(hashes)
            mail_documents += mail_count
    else:
        tokenizer = make_tokenizer(settings["tokenizer"])
        for batch in batches():
            kept, token_lists = tokenized(tokenizer, batch, on_error)
            table.add(token_lists, [doc.label for doc in kept])
            journal.update((content_hash(doc.data), doc.label) for doc in kept)
        mail_documents = tokenizer.mail_documents
    resolve_alpha(settings, mail_documents, table.class_count.sum())
    return _finish(settings, table, journal, lambda: _token_batches(settings, batches()))


def _token_batches(settings, batches):
    """(token lists, labels) per batch of Documents; unreadable ones were reported already."""
    tokenize = make_tokenizer(settings["tokenizer"])
    for batch in batches:
        kept, token_lists = tokenized(tokenize, batch, lambda doc, message: None)
        yield token_lists, [doc.label for doc in kept]


def fit_tokens(settings, token_lists, labels):
    """A model from documents already tokenized with `settings` (cross-validation folds)."""
    table = CountTable(binary=presence_table(settings))
    table.add(token_lists, labels)
    return _finish(settings, table, {}, lambda: [(token_lists, labels)])


def _finish(settings, table, journal, token_batches):
    """The model of a finished count table (pruning checked, Bernoulli UNK counted from
    `token_batches()`, the corpus again as (token lists, labels) per batch)."""
    classes, tokens, class_count, feature_count = table.sorted_view()
    if len(classes) < (1 if settings["event_model"] == "categorical" else 2):
        raise NbtextError(
            f"need at least two classes to train, got {len(classes)}"
            + (f" ({classes[0]!r})" if classes else "")
        )
    nb = NaiveBayes(settings, classes, tokens, class_count, feature_count, journal=journal)
    if not len(nb.kept_columns) and not nb.has_unk:
        raise NbtextError(
            f"after pruning, no tokens remain (try a lower --min-count than {settings['min_count']})"
        )
    if nb.binary and nb.has_unk and len(nb.kept_columns) < len(tokens):
        unk_doc_count = _documents_with_unk(nb, token_batches())
        nb = NaiveBayes(settings, classes, tokens, class_count, feature_count, unk_doc_count, journal)
    if nb.features == "tfidf":
        weighted = _weighted_sums(nb, token_batches())
        nb = NaiveBayes(settings, classes, tokens, class_count, feature_count, None, journal, weighted)
    return nb


def _weighted_sums(nb, token_batches):
    """(Yᵀ X, Yᵀ (X∘X) for gaussian, else None) of the tf-idf feature values X: a second
    pass, since the idf and the vocabulary are known only after counting."""
    row = {label: k for k, label in enumerate(nb.classes)}
    sums = np.zeros((len(nb.classes), nb.n_features))
    squares = np.zeros_like(sums) if nb.event_model == "gaussian" else None
    for token_lists, labels in token_batches:
        X = nb.feature_values(*ids_and_indptr(token_lists, nb.lookup.__getitem__))
        Y = one_hot(np.array([row[label] for label in labels], dtype=np.intp), len(nb.classes))
        sums += np.asarray((Y.T @ X).todense())
        if squares is not None:
            squares += np.asarray((Y.T @ X.multiply(X)).todense())
    return sums, squares


def content_hash(data):
    """The journal's key for a document: 16 bytes of BLAKE2b of its bytes, without an mbox
    envelope line and trailing line ends, so a message read from a folder, a Maildir or
    an mbox file is the same message."""
    from hashlib import blake2b  # loading OpenSSL costs a pipeline's start-up 3 ms: only when training

    from nbtext.mail import strip_envelope

    if isinstance(data, tuple):  # a table row
        data = "\x1f".join(data)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return blake2b(strip_envelope(data).rstrip(b"\r\n"), digest_size=16).digest()


def update(model, batches, on_error=None):
    """`model` plus the documents of `batches()`: equal to training on all of them at once.

    New tokens get new columns and new classes new rows. A document already learned under
    the same label (same content hash) is not counted again; one learned under another
    label is moved: its counts leave the old class and join the new one.
    Returns (new model, {"added": n, "moved": n, "duplicates": n}).
    """
    if model.features == "tfidf":
        raise NbtextError("cannot --update a model of tf-idf features (every idf changes); retrain it")
    if model.binary and model.has_unk:
        raise NbtextError(
            "cannot --update a Bernoulli or binary-feature model with an UNK feature (which past "
            "documents held a pruned token is not stored); retrain, or train it with --unknown ignore"
        )
    table = CountTable.from_counts(
        presence_table(model.settings), model.classes, model.tokens, model.class_count, model.feature_count
    )
    journal = dict(model.journal)
    stats = {"added": 0, "moved": 0, "duplicates": 0}
    for batch in batches():
        kept, token_lists = tokenized(model.tokenize, batch, on_error)
        add_tokens, add_labels, remove_tokens, remove_labels = [], [], [], []
        for doc, tokens in zip(kept, token_lists):
            key = content_hash(doc.data)
            previous = journal.get(key)
            if previous == doc.label:
                stats["duplicates"] += 1
                continue
            if previous is not None:
                remove_tokens.append(tokens)
                remove_labels.append(previous)
                stats["moved"] += 1
            else:
                stats["added"] += 1
            add_tokens.append(tokens)
            add_labels.append(doc.label)
            journal[key] = doc.label
        if remove_tokens:
            table.add(remove_tokens, remove_labels, weight=-1.0)
        table.add(add_tokens, add_labels)
    return _finish(model.settings, table, journal, lambda: _token_batches(model.settings, batches())), stats


def _documents_with_unk(nb, token_batches):
    """Per class, how many documents contain at least one token outside the vocabulary."""
    unk_column = len(nb.kept_columns)
    row = {label: k for k, label in enumerate(nb.classes)}
    unk_doc_count = np.zeros(len(nb.classes))
    for token_lists, labels in token_batches:
        ids, indptr = ids_and_indptr(token_lists, nb.lookup.__getitem__)
        doc_of_id = np.repeat(np.arange(len(labels)), np.diff(indptr))
        has_unk = np.zeros(len(labels), dtype=bool)
        has_unk[doc_of_id[ids == unk_column]] = True
        rows = np.array([row[label] for label in labels], dtype=np.intp)
        unk_doc_count += np.bincount(rows[has_unk], minlength=len(nb.classes))
    return unk_doc_count
