"""How the temperature is fitted, judged on training data only, as the project's accuracy
choices are: the Brier score (nbtext.stats.fitting's) or the log-loss as objective, and one
temperature for all documents or one growing with their length, T·n^γ (nbtext's).

    .venv/bin/python bench/calibration.py          # after `make corpora`

For each corpus: a model of its training split, the out-of-fold joint log-likelihoods of
its calibration sample (as `train --calibration temperature` computes them), then five
times: T fitted on 4/5 of the sample by each objective, the expected calibration error and
log-loss measured on the other 1/5. Prints the means. ("in BETA_RANGE": T·n^γ searched in
that range only, as before the search looked past its soft end; the Gaussian model's
scores need far softer. "log-loss, one T" is searched in the range only.)
"""

import sys
from functools import partial
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbtext.stats.fitting as fitting
from nbtext.classifier.settings import make_settings
from nbtext.jobs.calibration import SAMPLE
from nbtext.stats.fitting import BETA_RANGE, fit_inverse_temperature, fit_temperature
from nbtext.stats.out_of_fold import FOLDS, out_of_fold_jll
from nbtext.jobs.training import over_batches, train_corpus
from nbtext.reading.documents import in_batches
from nbtext.reading.sources import labelled_input
from nbtext.stats.counting import sample_of_batch
from nbtext.stats.formulas import log_normalize
from nbtext.stats.metrics import expected_calibration_error

CASES = [
    ("spamassassin", "multinomial"),
    ("20news", "multinomial"),
    ("20news", "complement"),
    ("sms", "multinomial"),
    ("spamassassin", "gaussian"),
    ("20news", "gaussian"),
    ("sms", "gaussian"),
]


def log_loss_beta(jll, rows):
    """β = 1/T minimizing the log-loss of softmax(β · jll) (the objective not chosen)."""
    picked = np.arange(len(rows))
    loss = lambda b: -log_normalize(np.exp(b) * jll)[picked, rows].mean()  # noqa: E731
    return float(np.exp(minimize_scalar(loss, bounds=np.log(BETA_RANGE), method="bounded").x))


def main():
    for corpus, event_model in CASES:
        train = ROOT / "data" / corpus / "train"
        if not train.is_dir():
            sys.exit(f"bench: data/{corpus} is missing; run 'make corpora' first")
        docs = labelled_input([str(p) for p in sorted(train.iterdir()) if p.is_dir()])
        batches = lambda: in_batches(docs(), 1000)  # noqa: E731
        model = train_corpus(batches, make_settings(model=event_model), jobs=2)
        rate = min(1.0, SAMPLE / model.class_count.sum())
        tokens, labels, hashes = [], [], []
        for t, l, h in over_batches(model.settings, batches)(partial(sample_of_batch, rate)):
            tokens, labels, hashes = tokens + t, labels + l, hashes + h
        jll, lengths = out_of_fold_jll(model, tokens, labels, [h % FOLDS for h in hashes])
        rows = np.array([model.classes.index(label) for label in labels])
        part = np.array(hashes) // FOLDS % 5
        n = np.maximum(lengths, 1).astype(float)

        def by_length(fitted, held):
            T, exponent = fit_temperature(jll[fitted], rows[fitted], lengths[fitted])
            return 1.0 / (T * n[held, None] ** exponent)

        def within_range(fitted, held):
            """by_length with the search kept to BETA_RANGE (before it looked past the soft end)."""
            softening = fitting.minimize_softening
            fitting.minimize_softening = lambda loss, tol: fitting.minimize_bounded(loss, *np.log(BETA_RANGE), tol)
            try:
                return by_length(fitted, held)
            finally:
                fitting.minimize_softening = softening

        fits = {
            "Brier, one T": lambda fitted, held: fit_inverse_temperature(jll[fitted], rows[fitted]),
            "log-loss, one T": lambda fitted, held: log_loss_beta(jll[fitted], rows[fitted]),
            "Brier, T·n^γ": by_length,
            "  in BETA_RANGE": within_range,
        }
        for name, fit in fits.items():
            eces, losses = [], []
            for f in range(5):
                fitted, held = np.flatnonzero(part != f), np.flatnonzero(part == f)
                log_p = log_normalize(fit(fitted, held) * jll[held])
                p = np.exp(log_p)
                eces.append(expected_calibration_error(p.max(1).tolist(), (p.argmax(1) == rows[held]).tolist()))
                losses.append(-log_p[np.arange(len(held)), rows[held]].mean())
            print(f"{corpus:13s} {event_model:12s} {name:15s} ECE {np.mean(eces):.4f}  log-loss {np.mean(losses):.4f}")


if __name__ == "__main__":
    main()
