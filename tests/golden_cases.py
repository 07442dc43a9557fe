"""Golden outputs: model files and command outputs that a change of structure must keep
byte for byte (tests/test_golden.py compares them; tests/golden/regenerate.py rewrites
them, only on purpose).

Every command runs through the click command line with the working folder set to a
scratch folder that links `corpora` (the bundled corpus) and `mail` (tests/golden/mail, a
few hand-written messages), so every path in the outputs is relative and the same on
every machine.
"""

import os
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
FILES = GOLDEN / "files"

TRAIN = ["corpora/mail/train/spam", "corpora/mail/train/ham"]
TEST = ["corpora/mail/test/spam", "corpora/mail/test/ham"]
MAIL = ["mail/spam", "mail/ham"]
DATING = ["--table", "corpora/dating/train.tsv", "--label-col", "约会"]

# the general defaults of a multinomial model of classes spam and ham (which --preset auto gives the spam preset's)
GENERAL = ["--preset", "general"]
# name -> the train arguments of a model (and, for --update, a second train command)
MODELS = {
    "multinomial": [*GENERAL, *TRAIN],
    "multinomial-j2": ["-j", "2", *GENERAL, *TRAIN],
    "bernoulli": ["--model", "bernoulli", *TRAIN],
    "complement": ["--model", "complement", *TRAIN],
    "complement-options": ["--model", "complement", "--weight-norm", "--tf", "raw", "--no-idf", *TRAIN],
    "gaussian": ["--model", "gaussian", *TRAIN],
    "binary": ["--features", "binary", *GENERAL, *TRAIN],
    "tfidf": ["--features", "tfidf", "--no-length-norm", *GENERAL, *TRAIN],
    "pruned": ["--ngrams", "2", "--max-features", "60", "--prior", "uniform", "--alpha", "0.5", *GENERAL, *TRAIN],
    "ignore": ["--unknown", "ignore", "--min-count", "1", "--prior", "empirical", "--input", "text", *GENERAL, *TRAIN],
    "bernoulli-ignore": ["--model", "bernoulli", "--unknown", "ignore", "--min-count", "3", *TRAIN],
    "mail": ["--headers", "subject,from", *GENERAL, *MAIL],
    "mail-text": ["--input", "text", *GENERAL, *MAIL],
    "spam": TRAIN,  # the defaults of classes spam and ham: the spam preset (nbtext.choices.SPAM_PRESET)
    "categorical": ["--model", "categorical", "--alpha", "0", *DATING],
    "categorical-smoothed": ["--model", "categorical", *DATING],
}
UPDATES = {  # name -> (the model it starts from, the update's arguments)
    "multinomial-updated": ("multinomial", ["spam=corpora/mail/test/spam", "ham=corpora/mail/test/ham"]),
    "moved": ("multinomial-updated", ["ham=corpora/mail/test/spam"]),
    "bernoulli-updated": ("bernoulli-ignore", TEST),
    "mail-updated": ("mail", ["spam=mail/ham/1.eml", "ham=mail/spam"]),
    "spam-updated": ("spam", ["spam=mail/spam", "ham=mail/ham"]),
}

TEXT_MODELS = [m for m in [*MODELS, *UPDATES] if not m.startswith("categorical")]


def outputs():
    """name -> the arguments of a command whose stdout is kept."""
    cases = {}
    for m in TEXT_MODELS:
        model = ["-m", f"{m}.model"]
        test = MAIL if m.startswith("mail") else TEST
        cases[f"{m}.predict.tsv"] = ["predict", *model, *test]
        cases[f"{m}.predict-proba.tsv"] = ["predict", *model, "--proba", "--explain", "3", *test]
        cases[f"{m}.predict.json"] = ["predict", *model, "--format", "json", "--explain", "2", test[0]]
        cases[f"{m}.eval.txt"] = ["eval", *model, "--unsure-below", "0.9", *test]
        cases[f"{m}.eval.json"] = ["eval", *model, "--format", "json", *test]
        cases[f"{m}.info.txt"] = ["info", *model, "--top", "5"]
        cases[f"{m}.info.json"] = ["info", *model, "--format", "json"]
    for m in ("categorical", "categorical-smoothed"):
        model = ["-m", f"{m}.model"]
        cases[f"{m}.predict.txt"] = ["predict", *model, "--table", "corpora/dating/query-rain.tsv"]
        cases[f"{m}.predict-explain.tsv"] = ["predict", *model, "--explain", "3", "--table", "corpora/dating/query.tsv"]
        cases[f"{m}.eval.json"] = ["eval", *model, "--format", "json", *DATING]
        cases[f"{m}.info.txt"] = ["info", *model, "--top", "3"]
    cases["stdin.txt"] = ["predict", "-m", "multinomial.model", "-"]
    cases["lines.tsv"] = ["predict", "-m", "bernoulli.model", "--lines", "--proba", "-"]
    cases["folds.json"] = [
        "eval",
        "--folds",
        "3",
        "--seed",
        "1",
        "--format",
        "json",
        "--compare",
        "multinomial,bernoulli,complement,gaussian",
        *GENERAL,
        *TRAIN,
    ]
    cases["folds.txt"] = ["eval", "--folds", "4", "--features", "binary", *GENERAL, *TRAIN]
    cases["folds-spam.txt"] = ["eval", "--folds", "4", *TRAIN]  # (the spam preset: unsure below 0.999)
    return cases


STDIN = "Free prize! Claim your cash now\nLunch notes for the meeting on Thursday\n\nwin win win\n"


def produce(folder):
    """Write every golden model and output into `folder`; returns {file name: bytes}."""
    from nbtext.cli.commands import cli

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in (("corpora", ROOT / "corpora"), ("mail", GOLDEN / "mail")):
        if not (folder / name).exists():
            os.symlink(target, folder / name)
    here = os.getcwd()
    os.chdir(folder)
    try:

        def run(args, input=None):
            result = CliRunner().invoke(cli, args, input=input)
            assert result.exit_code == 0, (args, result.output, result.exception)
            return result.stdout_bytes

        produced = {}
        for name, args in MODELS.items():
            run(["train", "-o", f"{name}.model", *args])
        for name, (start, args) in UPDATES.items():  # the full way (-o another file): the file rewritten
            run(["train", "--update", "-m", f"{start}.model", "-o", f"{name}.model", *args])
        for name in [*MODELS, *UPDATES]:
            produced[f"{name}.model"] = Path(f"{name}.model").read_bytes()
        for name, args in outputs().items():
            produced[name] = run(args, input=STDIN if "-" in args else None)
        return produced
    finally:
        os.chdir(here)
