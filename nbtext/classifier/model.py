"""The Naive Bayes model: counts in, predictions out.

`NaiveBayes` keeps the counts of training (the sufficient statistics) and derives the rest
when first needed: the smoothed log-probabilities, the prior, the idf. Its parts:

    vocabulary      nbtext.features.vocabulary.Vocabulary: every token seen, the features kept, UNK
    token_counts    nbtext.stats.token_counts.ClassCounts, (n_classes, n_tokens), dense or CSR rows
    event           the event model (nbtext.stats.event_models): how counts become jll
"""

from __future__ import annotations

from functools import cached_property
from itertools import chain
from typing import NamedTuple

import numpy as np

from nbtext.classifier.purescore import decide, unsure_threshold
from nbtext.classifier.options_read import unused_options
from nbtext.classifier.settings import check_alpha, make_tokenizer, model_settings
from nbtext.errors import NbtextError
from nbtext.exactmath import exp
from nbtext.features.vocabulary import TokenRows, Vocabulary, kept_tokens
from nbtext.features.weighting import feature_matrix, idf_weights, is_binary, is_tfidf
from nbtext.journal import decode as decode_journal, encode as encode_journal
from nbtext.modelfile.format import ModelState, save as save_state
from nbtext.modelfile.schema import same_record
from nbtext.reading.documents import tokenized
from nbtext.stats.event_models import EVENT_MODELS
from nbtext.stats.formulas import tempered_log_posterior, temperatures
from nbtext.stats.prior import class_log_prior
from nbtext.stats.sufficient import Statistics
from nbtext.stats.token_counts import ClassCounts

TYPE_CHECKING = False  # (the type checker reads the block)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    from numpy.typing import NDArray

    from nbtext.modelfile.container import PathLike
    from nbtext.modelfile.format import Record
    from nbtext.reading.documents import Document

    Text = str | bytes  # a document as the API takes it: text, or the bytes of a file or message
    # the model's calibration sample: (token lists, labels, hashes); its file holds it as arrays
    # (the file's CalibrationSample, of the same name: _encoded_sample, _decoded_sample)
    DocumentSample = tuple[Sequence[Sequence[str]], Sequence[str], Any]
    Lengths = NDArray[Any] | Sequence[int]


def vocabulary_of(settings, tokens, token_counts):
    """The Vocabulary of `tokens` pruned by the settings' --min-count and --max-features."""
    kept = kept_tokens(token_counts.token_totals, settings["min_count"], settings["max_features"])
    return Vocabulary(tokens, kept, settings["unknown"] == "unk")


class Calibrated(NamedTuple):
    """What calibrating gives a model (nbtext.jobs.calibration.calibrate), the four of them
    together (NaiveBayes.take_calibration): the fit (`calibration`, or None), the
    `calibration_sample` kept, the `sample_bound` it was cut at and the --calibration
    `sample_mode` it was fitted as."""

    calibration: Record | None
    calibration_sample: DocumentSample | None
    sample_bound: float | None
    sample_mode: str | None


UNCALIBRATED = Calibrated(None, None, None, None)  # a model not (yet) calibrated


class NaiveBayes:
    """A trained Naive Bayes text classifier.

    Stored state (the sufficient statistics, never anything derived):
      settings       the train settings (nbtext.classifier.settings), tokenizer included
      classes        list of labels, sorted
      class_count    (n_classes,) documents per class, N_k
      token_counts   (n_classes, n_tokens) occurrences of every token seen, pruned ones
                     included, or (presence features) documents containing it
      unk_doc_count  (n_classes,) documents with at least one pruned token (presence
                     features with UNK only: it cannot be derived from per-token counts)
      tfidf_sums     (n_classes, n_features) class sums of the tf-idf values Yᵀ X (tf-idf
                     features; token_counts then holds document frequencies), and
      tfidf_squares  their squares Yᵀ (X∘X) (gaussian)
      journal        {content hash: label} of the documents learned (nbtext.journal)
      corpus         {"mail_documents": n, "default_alpha": bool}: what λ left to the corpus
                     is chosen by (settings.corpus_alpha) when the counts change, as one
                     training would (None in files of older builds)
      calibration    {"method": "temperature", "temperature": T, "length_exponent": γ,
                     "length_floor": m (when above 1), "documents": n} or None: posteriors are
                     softmax(jll / (T · max(n, m)^γ)), n the document's length
                     (nbtext.jobs.calibration; files of older builds have no γ: 0, nor m: 1)
      calibration_sample  the calibration sample (token lists, labels, hashes): every
                     document whose hash is under `sample_bound` (nbtext.jobs.calibration), from
                     which update, forget and merge fit T and γ again as one training
                     would; None without calibration (or when loaded without it)
      sample_bound   the rate the sample was cut at: every document of the model whose
                     hash is under it is in the sample (None without a sample)
      sample_mode    --calibration as trained: "auto" or "temperature" (None without a sample)
    """

    # (its parameters are ModelState's, less what the model derives (n_tokens, one_document), its
    # calibration's four as one value)
    def __init__(
        self,
        settings: Mapping[str, Any],
        classes: Iterable[str],
        class_count: Any,  # (n_classes,) array-like
        token_counts: ClassCounts | NDArray[Any],
        vocabulary: Vocabulary,
        unk_doc_count: Any = None,
        tfidf_sums: NDArray[Any] | None = None,
        tfidf_squares: NDArray[Any] | None = None,
        journal: dict[bytes, str] | tuple[NDArray[Any], NDArray[Any]] | None = None,
        file_info: Record | None = None,
        corpus: Record | None = None,
        calibrated: Calibrated | None = None,
    ):
        self.settings = model_settings(settings)  # (its own: train settings are a value, TrainSettings)
        self.event = EVENT_MODELS[self.settings["event_model"]]
        self.classes = list(classes)
        self.class_count = np.asarray(class_count, dtype=np.float64)
        self.token_counts = token_counts if isinstance(token_counts, ClassCounts) else ClassCounts(token_counts)
        self.vocabulary = vocabulary
        self.unk_doc_count = None if unk_doc_count is None else np.asarray(unk_doc_count, dtype=np.float64)
        self.tfidf_sums = tfidf_sums
        self.tfidf_squares = tfidf_squares
        self._journal = journal if journal is not None else {}  # a dict, or the file's (hashes, labels)
        self.file_info = file_info or {}  # what loading learned: format_version, nbtext_version, bytes
        self.pass_read: int | None = (
            None  # trained by a TONE pass: the documents it read (it learned class_count's); not saved
        )
        self.corpus = corpus
        # its calibration, its sample, the bound the sample was cut at and the --calibration it
        # was trained with ("auto" or "temperature"): none until it is calibrated
        self.calibration, self.calibration_sample, self.sample_bound, self.sample_mode = calibrated or UNCALIBRATED
        self.tokenize = make_tokenizer(self.settings["tokenizer"])

    # --- the model file -----------------------------------------------------------------
    @classmethod
    def from_state(cls, state: ModelState) -> NaiveBayes:
        """The model of a file's state record (nbtext.modelfile.format.ModelState)."""
        token_counts = ClassCounts.from_csr(*state.token_counts, state.n_tokens)
        model = cls(
            state.settings,
            state.classes,
            state.class_count,
            token_counts,
            vocabulary_of(state.settings, state.tokens, token_counts),
            state.unk_doc_count,
            state.tfidf_sums,
            state.tfidf_squares,
            state.journal,
            state.file_info,
            state.corpus,
            Calibrated(
                state.calibration,
                _decoded_sample(state.calibration_sample, state.tokens, state.classes),
                state.sample_bound,
                state.sample_mode,
            ),
        )
        if state.tfidf_sums is not None and state.tfidf_sums.shape[1] != model.n_features:
            raise ValueError("weighted arrays do not match the vocabulary")
        if state.one_document is not None and not same_record(state.one_document, model.one_document_record()):
            # what nbtext.classifier.purescore trusts (files of older builds hold none)
            raise ValueError("its one_document record does not agree with its counts")
        return model

    @property
    def sample_unread(self) -> bool:
        """Whether the file has a calibration sample this model was loaded without."""
        return self.sample_bound is not None and self.calibration_sample is None

    def to_state(self) -> ModelState:
        """The record the model file stores."""
        if self.sample_unread:
            raise NbtextError(
                "this model is the one its file scores with, its pending changes counted but not "
                "folded in (or its calibration sample unread): load it with nbtext.load(path, "
                "fold=True) to change and save it"
            )
        journal = self._journal
        if isinstance(journal, dict) or "journal" in self.__dict__:
            blob, labels = encode_journal(self.journal, self.classes)
            journal = (np.frombuffer(blob, dtype="|u1").reshape(-1, 16), np.array(labels, dtype="<i4"))
        return ModelState(
            self.settings,
            self.classes,
            self.vocabulary.tokens,
            self.vocabulary.n_tokens,
            self.class_count,
            self.token_counts.csr(),
            self.unk_doc_count,
            self.tfidf_sums,
            self.tfidf_squares,
            journal if len(journal[0]) else None,
            corpus=self.corpus,
            calibration=self.calibration,
            one_document=self.one_document_record(),
            calibration_sample=self._encoded_sample(),
            sample_bound=self.sample_bound,
            sample_mode=self.sample_mode,
        )

    def _encoded_sample(self):
        """The calibration sample as the file's arrays: each document's tokens as CSR rows of
        (token index, count) over every token seen, indices ascending, label indices, hashes."""
        if self.calibration_sample is None:
            return None
        token_lists, labels, hashes = self.calibration_sample
        tokens = self.vocabulary.tokens
        rows = token_lists.over(tokens) if isinstance(token_lists, TokenRows) else None
        if rows is not None:  # already token indices
            flat = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
            lengths = [len(row) for row in rows]
        else:
            index = dict(zip(tokens, range(len(tokens))))
            flat = np.fromiter(map(index.__getitem__, chain.from_iterable(token_lists)), dtype=np.int64)
            lengths = [len(doc) for doc in token_lists]
        # each document's distinct (document, token index) cells in order, with their counts
        document = np.repeat(np.arange(len(token_lists), dtype=np.int64), lengths)
        cells, counts = np.unique(document * max(len(tokens), 1) + flat, return_counts=True)
        cell_document, indices = np.divmod(cells, max(len(tokens), 1))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(cell_document, minlength=len(token_lists)))])
        return (
            indices.tolist(),
            counts.tolist(),
            indptr.tolist(),
            [self.classes.index(label) for label in labels],
            hashes,
        )

    def one_document_record(self):
        """What scoring one document without numpy needs besides the counts of its own tokens
        (nbtext.classifier.purescore), or None where that path does not serve: the number of features d,
        each class's UNK count, what the event model's one-document form reads (its record_of:
        the multinomial's totals T_k, Bernoulli's Σ_j log(1 − θ_kj)), and with --max-features
        the kept tokens' rule: a token is kept if its total count is above `kept`[0], or equal to it and its index at most
        `kept`[1] (ties keep the earlier token)."""
        form = self.event.one_document
        if form is None or is_tfidf(self.settings):
            return None
        unk = self.unk_count.tolist() if self.has_unk else None
        record = {"features": self.n_features, "unk": unk, **form.record_of(self)}
        record["kept"] = None
        if self.settings["max_features"] is not None and self.vocabulary.n_kept:
            kept = self.vocabulary.kept
            kept_totals = self.token_counts.token_totals[kept]
            least = kept_totals.min()
            record["kept"] = [float(least), int(kept[kept_totals == least].max())]
        return record

    def save(self, path: PathLike) -> None:
        """Write the model atomically to `path` (see nbtext.modelfile.format for the format)."""
        save_state(self.to_state(), path)

    # --- settings -----------------------------------------------------------------------
    @property
    def event_model(self) -> str:
        return self.event.name

    @property
    def alpha(self) -> float:
        return self.settings["alpha"]

    @property
    def has_unk(self) -> bool:
        return self.vocabulary.has_unk

    @property
    def binary(self) -> bool:
        """Whether a document's features are token presence (0/1) rather than counts."""
        return is_binary(self.settings)

    @property
    def calibrated(self) -> Calibrated:
        """Its calibration, its sample, their bound and mode, as one value (a Calibrated)."""
        return Calibrated(self.calibration, self.calibration_sample, self.sample_bound, self.sample_mode)

    def take_calibration(self, calibrated: Calibrated) -> NaiveBayes:
        """Calibrated as `calibrated` (a Calibrated) says: its fit, its sample, its bound and its mode."""
        self.calibration, self.calibration_sample, self.sample_bound, self.sample_mode = calibrated
        return self

    def with_alpha(self, alpha: float) -> NaiveBayes:
        """The same counts smoothed with another λ (no retraining); refused where λ enters
        nothing (a gaussian model without a smoothed prior), as train refuses it."""
        check_alpha(alpha, zero_allowed=self.event.flags.zero_alpha)
        unused = unused_options({"model": self.event_model, "prior": self.settings["prior"], "alpha": alpha}, {"alpha"})
        if unused:
            raise NbtextError(f"--alpha does nothing for this model: {unused[0][1]}")
        return NaiveBayes(
            {**self.settings, "alpha": float(alpha)},
            self.classes,
            self.class_count,
            self.token_counts,
            self.vocabulary,
            self.unk_doc_count,
            self.tfidf_sums,
            self.tfidf_squares,
            self._journal,
            self.file_info,
            # (λ given now: kept when its counts change, as --alpha's, not chosen again by settings.corpus_alpha)
            None if self.corpus is None else {**self.corpus, "default_alpha": False},
            self.calibrated,
        )

    # --- derived once, on first use -------------------------------------------------------
    @cached_property
    def journal(self):
        """{content hash: label}; decoded from the file's arrays only when asked for."""
        if isinstance(self._journal, dict):
            return self._journal
        hashes, labels = self._journal
        return decode_journal(hashes.tobytes(), labels.tolist(), self.classes)

    @property
    def feature_names(self):
        """The features in column order: the kept tokens, then UNK if present."""
        return self.vocabulary.feature_names

    @property
    def n_features(self):
        return self.vocabulary.n_features

    @cached_property
    def _kept_totals(self):
        """Σ over the kept tokens of each class's counts, shape (n_classes,)."""
        chosen = np.zeros(self.vocabulary.n_tokens)
        chosen[self.vocabulary.kept] = 1.0
        return self.token_counts.class_totals_over(chosen)

    @cached_property
    def feature_totals(self):
        """T_k = Σ_j B_kj over every feature (UNK's included), shape (n_classes,)."""
        return self._kept_totals + (self.unk_count if self.has_unk else 0.0)

    @cached_property
    def unk_count(self):
        """The UNK feature's count per class: the pruned tokens' counts added up, or
        (bernoulli) the documents holding a pruned token."""
        if self.event.flags.unk_from_documents:
            return self.unk_doc_count if self.unk_doc_count is not None else np.zeros(len(self.classes))
        return self.token_counts.class_totals - self._kept_totals

    def feature_count_columns(self, columns):
        """Counts of the given feature columns (UNK's included), shape (n_classes, len(columns))."""
        columns = np.asarray(columns)
        out = np.empty((len(self.classes), len(columns)))
        is_unk = columns == self.vocabulary.unk_column
        out[:, ~is_unk] = self.token_counts.columns(self.vocabulary.kept[columns[~is_unk]])
        out[:, is_unk] = self.unk_count[:, None]
        return out

    @cached_property
    def feature_counts(self):
        """The counts of every feature, (n_classes, n_features), UNK's column included."""
        column_of_token = np.full(self.vocabulary.n_tokens, -1, dtype=np.intp)
        column_of_token[self.vocabulary.kept] = np.arange(self.vocabulary.n_kept)  # feature j is kept[j]
        counts = self.token_counts.placed(column_of_token, self.n_features)
        if self.has_unk:
            counts[:, self.vocabulary.unk_column] = self.unk_count
        return counts

    @property
    def feature_sums(self):
        """Per class, the sum of its documents' feature values, (n_classes, n_features): the
        feature counts, or with tf-idf features the tf-idf sums."""
        return self.tfidf_sums if self.tfidf_sums is not None else self.feature_counts

    @cached_property
    def idf(self):
        """idf_j of the kept tokens, from their document frequencies (tf-idf features)."""
        return idf_weights(self.token_counts.token_totals[self.vocabulary.kept], self.class_count.sum())

    def feature_values(self, ids, indptr):
        """The documents' feature values (counts, presence or tf-idf) as a CSR matrix."""
        idf = self.idf if is_tfidf(self.settings) else None
        return feature_matrix(ids, indptr, self.n_features, self.settings, idf)

    @cached_property
    def statistics(self):
        """The sufficient statistics its event model reads (nbtext.stats.sufficient)."""
        return Statistics(
            self.class_count, self.feature_sums, self.tfidf_squares, self.alpha, self.settings, self.vocabulary
        )

    @cached_property
    def linear_form(self):
        """(W, b, W2): jll = X Wᵀ − ½ (X∘X) W2ᵀ + b (+ log prior); W2 is None but for gaussian."""
        return self.event.linear_form(self.statistics)  # type: ignore[union-attr]  # (asked of linear models)

    @cached_property
    def class_log_prior(self):
        """log P(k), shape (n_classes,)."""
        return np.array(class_log_prior(self.class_count.tolist(), self.alpha, self.settings["prior"]))

    @cached_property
    def prior_term(self):
        """log P(k) in the joint log-likelihood (complement NB, as Rennie et al., has none)."""
        return self.event.prior_term(self.statistics)

    @cached_property
    def feature_log_prob(self):
        """log θ_kj, shape (n_classes, n_features)."""
        return self.event.log_theta(self.statistics)

    # --- prediction -------------------------------------------------------------------------
    def joint_log_likelihood(self, documents: Iterable[Text]) -> NDArray[np.float64]:
        """log P(k) + log P(x | k) for each document, shape (n_documents, n_classes)."""
        return self.joint_log_likelihood_of_tokens(map(self.tokenize, documents))

    def joint_log_likelihood_of_tokens(self, token_lists: Iterable[Sequence[str]]) -> NDArray[np.float64]:
        """As joint_log_likelihood, for documents already tokenized by `self.tokenize`."""
        return self.jll_and_lengths(token_lists)[0]

    def jll_and_lengths(
        self, token_lists: Iterable[Sequence[str]]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        """(joint log-likelihoods, lengths) of tokenized documents: a document's length n is
        the number of its tokens that enter its likelihood (all of them with an UNK feature,
        only the vocabulary's with `--unknown ignore`), what a calibrated temperature grows
        with. (Models of table rows give None: they are never calibrated.)"""
        return self.event.jll_and_lengths(self, list(token_lists))

    def score(
        self, documents: Iterable[Document], on_error: Callable[..., Any] | None = None, explain: int = 0
    ) -> tuple[list[Document], NDArray[np.float64], list[list[tuple[str, float]]] | None]:
        """(documents kept, log P(k | document) of each, explanations or None) for a batch
        of Documents; those that cannot be read or parsed go to `on_error` (see tokenized)."""
        kept, token_lists = tokenized(self.tokenize, documents, on_error)
        if not kept:
            return kept, np.zeros((0, len(self.classes))), None
        log_proba = self.posterior(*self.jll_and_lengths(token_lists))
        explanations = None
        if explain:
            explanations = [self.explain(t, row, explain) for t, row in zip(token_lists, log_proba)]
        return kept, log_proba, explanations

    def decide(self, probabilities: Sequence[float], unsure_below: float | None = None) -> tuple[str, float]:
        """(label, its probability): the most probable class, or 'unsure' below the threshold
        (the command's, else the model's own: unsure_threshold) or the model's spam cut-off
        (nbtext.classifier.purescore.decide)."""
        return decide(self.classes, probabilities, self.unsure_threshold(unsure_below), self.calibration)

    def unsure_threshold(self, unsure_below: float | None = None) -> float | None:
        """The --unsure-below its labels are decided by: `unsure_below`, else its own (train
        --unsure-below), else None (nbtext.classifier.purescore.unsure_threshold)."""
        return unsure_threshold(unsure_below, self.settings)

    def posterior(self, jll: NDArray[np.float64], lengths: Lengths | None = None) -> NDArray[np.float64]:
        """log P(k | document) of joint log-likelihoods: log_softmax(jll), or calibrated,
        log_softmax(jll / T(x)) with T(x) = T · max(n, m)^γ, n the document's length (the same
        argmax). A document of length 0 has no evidence to temper: it keeps its raw
        posterior (the prior, for the multinomial), where T(1) would make the prior sure.
        `lengths` (as jll_and_lengths gives them) are needed when γ is not 0."""
        return tempered_log_posterior(jll, self.calibration, lengths)

    def temperatures(self, n_documents: int, lengths: Lengths | None = None) -> NDArray[np.float64]:
        """T(x) = T · max(n, m)^γ of each document (formulas.temperatures)."""
        return temperatures(self.calibration, n_documents, lengths)

    def predict_log_proba(self, documents: Iterable[Text]) -> NDArray[np.float64]:
        """log P(k | document), shape (n_documents, n_classes)."""
        return self.posterior(*self.jll_and_lengths(map(self.tokenize, documents)))

    def predict_proba(self, documents: Iterable[Text]) -> NDArray[np.float64]:
        """P(k | document), shape (n_documents, n_classes); rows sum to 1."""
        return exp(self.predict_log_proba(documents))

    def predict(self, documents: Iterable[Text]) -> list[str]:
        """The most probable label of each document."""
        jll = self.joint_log_likelihood(documents)
        return [self.classes[k] for k in jll.argmax(axis=1).tolist()]

    # --- insight ------------------------------------------------------------------------------
    def summary(self, top=0):
        """What `nbtext info` shows: settings, classes with their counts, vocabulary, and
        with `top`, the tokens that most indicate each class."""
        totals = self.token_counts.class_totals
        info: dict[str, Any] = {
            "event_model": self.event_model,
            "settings": self.settings,
            "classes": {
                label: {"documents": int(n), "count": float(t)}
                for label, n, t in zip(self.classes, self.class_count, totals)
            },
            "documents": int(self.class_count.sum()),
            "tokens_seen": self.vocabulary.n_tokens,
            "vocabulary": self.vocabulary.n_kept,
            "unk": self.has_unk,
            **{
                key: self.file_info[key]
                for key in ("format_version", "nbtext_version", "pending", "pending_fold")
                if key in self.file_info
            },
        }
        # readers use the file's temperature until a pending section is folded in
        pending = bool(self.file_info.get("pending"))
        shown = self.file_info.get("written_calibration") if pending else self.calibration
        if shown is not None:
            info["calibration"] = shown
        if pending and self.calibration is not None:
            info["calibration_after_fold"] = self.calibration
        if self.calibration_sample is not None:
            info["calibration_sample"] = len(self.calibration_sample[1])
        if self.has_unk and self.event.flags.reports_unk_share and totals.sum():
            info["unk_share"] = float(self.unk_count.sum() / totals.sum())
        if top:
            info["top"] = self.indicative(top)
        return info

    def indicative(self, n):
        """{class: [(token, score)]}: the n tokens with the largest log θ_jk − log θ_j,¬k,
        θ_j,¬k being the token's probability in all the other classes pooled."""
        n_kept = self.vocabulary.n_kept  # UNK is no token: left out
        sums = self.feature_sums
        own = self.feature_log_prob[:, :n_kept]
        result = {}
        for k, label in enumerate(self.classes):
            others = self.event.log_theta(self.statistics.others_than(k))[0]
            with np.errstate(invalid="ignore"):  # λ = 0: −inf − −inf
                score = own[k] - others[:n_kept]
            score = np.where(np.isnan(score), -np.inf, score)
            best = np.argsort(-score, kind="stable")[:n]
            result[label] = [(self.feature_names[j], float(score[j])) for j in best if sums[k, j] > 0]
        return result

    def explain(self, tokens, log_proba, n):
        """The n tokens of a document that pushed the winning class over the runner-up most,
        in the units of the probabilities printed beside them: [(token, x_j · (W_winner,j −
        W_runner-up,j) / T(x))], largest first, each token's share of log(P(winner | x) /
        P(runner-up | x)) (for the multinomial model W = log θ: count × the log-odds the
        token adds, tempered as the probability is). UNK, the tokens the model does not
        know, is no reason to list: it is left out."""
        if len(self.classes) < 2:
            return []
        runner_up, winner = np.argsort(log_proba, kind="stable")[-2:]
        ids, indptr = self.vocabulary.ids([tokens])
        columns, contribution = self.event.explanation_terms(self, ids, indptr, winner, runner_up)
        contribution = contribution / float(self.temperatures(1, [len(ids)])[0])
        unk = self.vocabulary.unk_column
        top = [i for i in np.argsort(-contribution, kind="stable") if columns[i] != unk][:n]
        return [(self.feature_names[columns[i]], float(contribution[i])) for i in top]


def _decoded_sample(arrays, tokens, classes):
    """(token lists, labels, hashes) of a file's calibration sample arrays, or None."""
    if arrays is None:
        return None
    indices, counts, indptr, labels, hashes = (a.tolist() for a in arrays)
    names = tokens.tokens() if hasattr(tokens, "tokens") else tokens
    token_lists = [
        [names[j] for j, n in zip(indices[a:b], counts[a:b]) for _ in range(n)] for a, b in zip(indptr, indptr[1:])
    ]
    return token_lists, [classes[k] for k in labels], hashes


def from_bytes(data: bytes, path: PathLike) -> NaiveBayes:
    """The model of a model file's bytes (`path` names it in errors)."""
    from nbtext.modelfile.format import parse_state

    state = parse_state(data, path)
    try:
        return NaiveBayes.from_state(state)
    except (NbtextError, ValueError) as e:  # what the checks say, in their words (as parse_state)
        raise NbtextError(f"{path} is corrupt: {e}") from None
    except (KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError) as e:
        raise NbtextError(f"{path} is corrupt ({e.__class__.__name__}: {e})") from None
