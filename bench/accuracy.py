"""Accuracy of nbtext on the real corpora, train split -> test split, for a few settings.

    make accuracy        # or: .venv/bin/python bench/accuracy.py
    .venv/bin/python bench/accuracy.py --budgets     # the ham-flagged budget rows alone
    .venv/bin/python bench/accuracy.py --online      # the online rows alone (eval --online, 1-ROCA)

Every figure the README quotes about accuracy is printed here, and, for the three spam
corpora, what `train --max-ham-flagged B` gives on the test split: a message left unsure is
delivered to the inbox, so it counts as spam missed; and the online protocol's figures
(`eval --online`, 1-ROCA) for the learning settings kept.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from nbtext.choices import SPAM_PRESET

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
NBTEXT = str(Path(sys.executable).parent / "nbtext")

# the general defaults of a multinomial model of classes spam and ham (whose own defaults are the spam preset's)
GENERAL = ["--preset", "general"]
SETTINGS = {
    "spamassassin": [
        [],
        GENERAL,
        [*GENERAL, "--alpha", "1"],
        [*GENERAL, "--input", "text"],
        [*GENERAL, "--features", "binary"],
        ["--model", "bernoulli"],
        ["--model", "complement"],
        [*GENERAL, "--lexer", "mail"],
        [*GENERAL, "--lexer", "mail", "--features", "binary", "--alpha", "0.01", "--min-count", "1"],
    ],
    "sms": [
        [],
        GENERAL,
        [*GENERAL, "--alpha", "0.1"],
        ["--model", "bernoulli"],
        ["--model", "complement"],
        [*GENERAL, "--lexer", "mail"],
    ],
    "20news": [
        [],
        ["--alpha", "1"],
        ["--input", "text"],
        ["--input", "text", "--alpha", "0.1"],
        ["--features", "binary"],
        ["--features", "tfidf"],
        ["--model", "bernoulli"],
        ["--model", "complement"],
        ["--model", "complement", "--weight-norm"],
        ["--model", "complement", "--no-length-norm"],
        ["--model", "complement", "--tf", "raw"],
        ["--model", "complement", "--no-idf"],
        ["--model", "complement", "--features", "counts"],
        ["--model", "complement", "--features", "binary"],
        ["--model", "complement", "--alpha", "0.1"],
        ["--model", "gaussian"],
    ],
}


SPAM_CORPORA = ("spamassassin", "sms", "enron1")
BUDGETS = (None, "0.5%", "0.2%")  # None: no budget
# the models each budget is tried with: the defaults (the spam preset: chosen by cross-validation on the train
# splits, bench/defaults_cv.py; docs/performance.md, "The spam preset"; under a budget calibrated, without its
# unsure band), the general defaults (counts), the multinomial of presence, and the models of one TONE pass of the
# presence multinomial and of fisher (issue 34's goals 1 and 2; docs/performance.md)
BUDGET_MODELS = (
    [],
    GENERAL,
    [*GENERAL, "--features", "binary"],
    [*GENERAL, "--features", "binary", "--learn", "tone", "--min-count", "1", "--tone-margin", "20", "--alpha", "1"],
    ["--model", "fisher", "--learn", "tone", "--alpha", "1", "--min-count", "1"],
)
SPAM_HEADERS = ",".join(SPAM_PRESET["headers"])


def extracted(corpora):
    """Each of `corpora`, once it is found in data/ (else the run stops, saying how to extract it)."""
    for corpus in corpora:
        if not (DATA / corpus).is_dir():
            sys.exit(f"accuracy: data/{corpus} is missing; run 'make corpora' first")
        yield corpus


def folders(corpus, split):
    return sorted(str(p) for p in (DATA / corpus / split).iterdir() if p.is_dir())


def budget_rows(model):
    """Per spam corpus and budget: test spam missed (unsure included), ham flagged, unsure,
    errors, and the cut-off the training chose (a ceiling on P(ham)); ham flagged beside what the budget allows
    on the test split (B of its ham plus one message)."""
    print(f"(H: {SPAM_HEADERS})")
    print(
        f"{'corpus':14s} {'train':38s} {'spam missed':>11s} {'ham flagged':>11s} {'(allowed)':>9s} "
        f"{'unsure':>6s} {'errors':>6s}  cut-off"
    )
    for corpus in extracted(SPAM_CORPORA):
        spam, ham = (str(DATA / corpus / "test" / label) for label in ("spam", "ham"))
        n_spam, n_ham = (sum(1 for _ in Path(folder).iterdir()) for folder in (spam, ham))
        budgeted = [
            ([*base, *([] if budget is None else ["--max-ham-flagged", budget])], [], budget)
            for base in BUDGET_MODELS
            for budget in BUDGETS
        ]
        for options, use, budget in budgeted:
            subprocess.run(
                [NBTEXT, "train", *options, "-o", model, *folders(corpus, "train")], check=True, capture_output=True
            )
            report = json.loads(
                subprocess.run(
                    [NBTEXT, "eval", "-m", model, "--format", "json", *use, spam, ham], check=True, capture_output=True
                ).stdout
            )
            (ham_kept, ham_flagged), (spam_passed, spam_caught) = report["confusion"]  # classes ham, spam
            spam_unsure, ham_unsure = n_spam - spam_passed - spam_caught, n_ham - ham_kept - ham_flagged
            missed = spam_passed + spam_unsure
            calibration = (
                json.loads(
                    subprocess.run(
                        [
                            sys.executable,
                            "-c",
                            f"import json, nbtext; print(json.dumps(nbtext.load({model!r}).calibration))",
                        ],
                        check=True,
                        capture_output=True,
                    ).stdout
                )
                or {}
            )
            cut = calibration.get("other_ceiling")  # spam when P(ham) is below it (nbtext.cutoff)
            allowed = "" if budget is None else f"{float(budget[:-1]) / 100 * n_ham + 1:.1f}"
            said = " ".join([*options, *(["|", *use] if use else [])]).replace(SPAM_HEADERS, "H")
            print(
                f"{corpus:14s} {said or '(defaults)':38s} {missed:11d} {ham_flagged:11d} {allowed:>9s} "
                f"{spam_unsure + ham_unsure:6d} {missed + ham_flagged:6d}  "
                f"{'' if cut is None else f'P(ham) < {cut:.3g}'} (unsure: {spam_unsure} spam, {ham_unsure} ham)"
            )


def accuracy_rows(model):
    print(f"{'corpus':14s} {'settings':44s} {'λ':>5s} {'accuracy':>9s} {'macro F1':>9s}  ham flagged as spam")
    for corpus in extracted(SETTINGS):
        for options in SETTINGS[corpus]:
            subprocess.run(
                [NBTEXT, "train", *options, "-o", model, *folders(corpus, "train")], check=True, capture_output=True
            )
            out = subprocess.run(
                [NBTEXT, "eval", "-m", model, "--format", "json", *folders(corpus, "test")],
                check=True,
                capture_output=True,
            ).stdout
            report = json.loads(out)
            alpha = json.loads(
                subprocess.run(
                    [sys.executable, "-c", f"import nbtext; print(nbtext.load({model!r}).alpha)"],
                    check=True,
                    capture_output=True,
                ).stdout
            )
            flagged = ""
            if report["classes"] == ["ham", "spam"]:
                ham_row = report["confusion"][0]
                flagged = f"{ham_row[1]} of {sum(ham_row)} ({ham_row[1] / sum(ham_row):.2%})"
            print(
                f"{corpus:14s} {' '.join(options) or '(defaults)':44s} {alpha:5g} "
                f"{report['accuracy']:9.4f} {report['macro_f1']:9.4f}  {flagged}"
            )


# eval --online's settings kept (issue 34's goal 3), each run on every message of a corpus (train and
# test splits) in the order of seed 1, as bogofilter was run: the plain rule, and the one chosen on the train
# splits by bench/online_cv.py
ONLINE_SETTINGS = [  # (without --preset: the spam preset's, the defaults of spam and ham)
    ["--learn", "errors"],
    ["--learn", "tone"],
    [*GENERAL, "--learn", "errors"],
    [
        *GENERAL,
        "--learn",
        "tone",
        "--features",
        "binary",
        "--min-count",
        "1",
        "--alpha",
        "0.1",
        "--headers",
        SPAM_HEADERS,
    ],
]


def online_rows():
    """Per spam corpus and kept online setting: spam missed, ham flagged, errors, messages
    learned and 1-ROCA% of the online run over all its messages, and its errors as delivered
    (the unsure to the inbox: every unsure spam missed; `-` for a run with no unsure band)."""
    print(f"(H: {SPAM_HEADERS})")
    print(
        f"{'corpus':14s} {'eval --online --seed 1':68s} {'spam missed':>11s} {'ham flagged':>11s} "
        f"{'errors':>6s} {'learned':>7s} {'1-ROCA%':>8s} {'delivered':>9s}"
    )
    for corpus in extracted(SPAM_CORPORA):
        folders = [str(DATA / corpus / split / label) for label in ("spam", "ham") for split in ("train", "test")]
        for options in ONLINE_SETTINGS:
            report = json.loads(
                subprocess.run(
                    [NBTEXT, "eval", "--online", "--seed", "1", "-q", "--format", "json", *options, *folders],
                    check=True,
                    capture_output=True,
                ).stdout
            )
            classes, said = report["classes"], " ".join(options).replace(SPAM_HEADERS, "H")
            delivered = report["delivered"]["errors"] if "delivered" in report else "-"
            print(
                f"{corpus:14s} {said:68s} {classes['spam']['taken_for_another']:11d} "
                f"{classes['ham']['taken_for_another']:11d} {report['errors']:6d} {report['learned']:7d} "
                f"{report['roca_percent']:8.3f} {delivered:>9}"
            )


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = str(Path(tmp) / "m")
        if "--budgets" in sys.argv[1:]:
            budget_rows(model)
        elif "--online" in sys.argv[1:]:
            online_rows()
        else:
            accuracy_rows(model)
            print()
            budget_rows(model)
            print()
            online_rows()


if __name__ == "__main__":
    main()
