"""The structure the code keeps: event models only in their registry, choices defined once
and light. (The import layers are checked by `lint-imports`, run by `make test`.)"""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from nbtext import choices
from nbtext.cli.commands import cli
from nbtext.stats.event_models import EVENT_MODELS

PACKAGE = Path(__file__).resolve().parent.parent / "nbtext"


def string_literals(path):
    """(line, value) of every string constant in a module's code."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_event_model_name_outside_the_registry():
    """No module but the registry (and the choice list) names an event model in its code:
    a sixth model is one class in nbtext/stats/event_models.py and one name in nbtext/choices.py."""
    found = [
        (str(path.relative_to(PACKAGE)), line, value)
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in ("event_models.py", "choices.py")
        for line, value in string_literals(path)
        if value in EVENT_MODELS
    ]
    assert found == []


@pytest.mark.parametrize("name", list(EVENT_MODELS))
def test_each_event_model_is_one_class_whose_forms_are_its_own(name):
    """An event model is one class: its forms of one document and online are instances of it
    (its one_document and online are the class itself, or None), each form it says it has
    made by its own hooks, and its flags one record. A model added to the registry is checked
    here without a line of its own."""
    from nbtext.stats.event_models import EventModel, Flags

    event = EVENT_MODELS[name]
    kind = type(event)
    assert isinstance(event.flags, Flags) and set(vars(kind)) & set(Flags.__slots__) == set()
    own = [hook for hook, form in (("one_document", event.one_document), ("online", event.online)) if form]
    assert all(getattr(event, hook) is kind for hook in own)

    def overrides(method):
        return getattr(kind, method) is not getattr(EventModel, method)

    expected = {"of_record", "record_of", "joint_log_likelihood", "explanation"} if event.one_document else set()
    expected |= {"of_counts", "joint_log_likelihood"} if event.online else set()
    expected |= {"record_after"} if event.flags.follows_changes else set()
    assert {method for method in expected if not overrides(method)} == set()
    assert not event.flags.follows_changes or event.one_document  # (a record to follow)


def test_the_registry_and_the_command_line_offer_the_same_choices():
    assert tuple(EVENT_MODELS) == choices.EVENT_MODELS
    train = cli.commands["train"]
    offered = {p.name: tuple(p.type.choices) for p in train.params if isinstance(p.type, click.Choice)}
    assert offered == {name: tuple(values) for name, values in choices.TRAIN_CHOICES.items()}
    defaults = {p.name: p.default for p in train.params if p.name in choices.TRAIN_DEFAULTS}
    expected = dict(choices.TRAIN_DEFAULTS, headers=",".join(choices.DEFAULT_HEADERS))
    # every train default is an option of train but columns (--table's) and classes (named by CLASS_DIR)
    assert defaults == {name: expected[name] for name in defaults} and set(expected) - set(defaults) == {
        "columns",
        "classes",
    }


def test_choices_import_neither_numpy_nor_click():
    code = "import sys, nbtext.choices; print(sorted(m for m in ('numpy', 'click', 'scipy') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


LIGHT_PATH_NEVER = (
    "click",
    "scipy",
    "dataclasses",
    "typing",  # (annotations are strings, their names imported only under TYPE_CHECKING)
    "contextlib",  # (a class with __enter__ and __exit__ where the path needs a `with`)
    "hashlib",
    "imaplib",
    "ssl",
    "netrc",
    "nbtext.reading.imap",
    "nbtext.reading.imapurl",
    "nbtext.stats.fisher",  # (the demo model is a multinomial: another model's formulas are not its path)
)


def test_one_message_imports_neither_click_nor_scipy(demo_model):
    """`nbtext predict < message` (the per-message path of a mail pipeline) loads the model
    and scores without click, scipy, the vocabulary dict or the IMAP reader."""
    code = (
        "import sys; from nbtext.cli.oneshot import fast; sys.argv = ['nbtext']; "
        f"fast(['predict', '-m', {str(demo_model)!r}]); "
        f"print(sorted(m for m in {LIGHT_PATH_NEVER!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], input="free prize now", capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["spam", "[]"]


@pytest.mark.parametrize("command", ["filter", "train --update", "forget"])
def test_one_message_filtered_learned_or_forgotten_imports_no_imap_reader(command, demo_model, tmp_path):
    """`nbtext filter` of a message, and `train --update` and `forget` of one (a learn-on-error
    job's, run for every message corrected) read files and stdin only: neither the IMAP reader
    (nbtext.reading.imap, loaded only when a folder's URL is read) nor its client's modules,
    nor click or scipy."""
    model, message = tmp_path / "copy.model", tmp_path / "spam" / "1.eml"
    shutil.copy(demo_model, model)
    message.parent.mkdir()
    message.write_text("Subject: free prize\n\nclaim your free prize now\n")
    argv = {
        "filter": ["filter", "-m", str(model)],
        "train --update": ["train", "--update", "-q", "-m", str(model), f"spam={message.parent}"],
        "forget": ["forget", "-q", "-m", str(model), str(message)],
    }[command]
    code = (
        "import sys; from nbtext.cli.oneshot import fast; sys.argv = ['nbtext']; "
        f"status = fast({argv!r}); "
        f"print(status, sorted(m for m in {LIGHT_PATH_NEVER!r} if m in sys.modules), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], input=message.read_text(), capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr.splitlines()[-1] == "0 []", result.stderr


def _nbtext_names(path):
    """(line, module, attribute or None) of every name from nbtext a script uses: its
    imports and the dotted names it reads (nbtext.reading.mail.mail_tokens)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nbtext":
            yield from ((node.lineno, node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name, None) for alias in node.names if alias.name.startswith("nbtext."))
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
            parts = []
            while isinstance(node, ast.Attribute):
                parts.insert(0, node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id == "nbtext" and len(parts) > 1:
                yield node.lineno, "nbtext." + ".".join(parts[:-1]), parts[-1]


def test_the_scripts_outside_the_tests_name_what_exists():
    """bench/ and fuzz/ run only by hand (make bench, make fuzz): every module and name they
    take from nbtext exists (a name moved or removed broke `make fuzz` silently before)."""
    import importlib

    root = PACKAGE.parent
    missing = []
    for path in sorted([*(root / "bench").glob("*.py"), *(root / "fuzz").glob("*.py")]):
        for line, module, name in _nbtext_names(path):
            try:
                found = importlib.import_module(module)
                if name is not None and not hasattr(found, name):
                    importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{path.relative_to(root)}:{line}: {module}" + (f".{name}" if name else ""))
    assert missing == []


def written_attributes(path, fields):
    """(line, text) of each assignment in a module's code to one of `fields` of an object
    other than `self` (or `state`, a file's record)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            for each in target.elts if isinstance(target, ast.Tuple) else [target]:
                if (
                    isinstance(each, ast.Attribute)
                    and each.attr in fields
                    and not (isinstance(each.value, ast.Name) and each.value.id in ("self", "state"))
                ):
                    yield each.lineno, ast.unparse(each)


def _named(node):
    """The name a node holds a value under: a variable's, an attribute's, else ''."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def test_the_rules_of_a_change_are_written_in_the_change_core_alone():
    """A training, a merge, an update, a forget and a pending section's replay each change a
    model's journal and its documents read as mail by nbtext.stats.changes (a Ledger: `add`
    for a change, `learn` for a training's batch, copies counted), and a count table's class
    counts take each document's step from it (changes.moves, changes.LEARNED_STEP) in one
    tally. add_counted and merge each wrote the journal's "last label wins" themselves, and
    training, merging, the cluster and the TONE pass summed the mail documents."""
    journal_writes, mail_sums = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where == "stats/changes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("update", "pop", "setdefault", "__setitem__")
                and "journal" in _named(node.func.value)
            ) or (
                isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete))
                and any(
                    isinstance(target, ast.Subscript) and "journal" in _named(target.value)
                    for target in (node.targets if not isinstance(node, ast.AugAssign) else [node.target])
                )
            ):
                journal_writes.append(f"{where}:{node.lineno}")
            # (the tokenizer counts each document it reads as mail: a Change's `mail`)
            if isinstance(node, ast.AugAssign) and _named(node.target) == "mail_documents":
                if where != "reading/tokenize.py":
                    mail_sums.append(f"{where}:{node.lineno}")
    assert journal_writes == []
    assert mail_sums == []
    counting = ast.parse((PACKAGE / "stats" / "counting.py").read_text(encoding="utf-8"))
    tallies = [
        function.name
        for function in ast.walk(counting)
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and _named(node.func) == "bincount"
    ]
    assert tallies == ["class_steps"]


def test_every_learner_changes_counts_through_the_change_core():
    """The outcome of a document given to a learner is asked (changes.outcome) at one door,
    Ledger.change; no module but the change core (and the count table, stats/counting.py)
    writes a class's count of documents, and none but the change core writes the one-document
    record's d, UNK_k or T_k after counts move (HeldCounts, record_moved). training._changed and
    learnone asked the outcome themselves (3 sites), the online learner joined a class by hand
    (3) and kept its own totals, and it, PureModel.derived_after and the multinomial's
    record_after each wrote the record's rule (13 lines)."""
    record = {"totals", "unk", "kept_totals", "unk_totals", "n_kept", "features"}  # (the record's parts)
    outcomes, class_counts, records = [], [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where == "stats/changes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _named(node.func) == "outcome":
                outcomes.append(f"{where}:{node.lineno}")
            if not isinstance(node, (ast.Assign, ast.AugAssign)):
                continue
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Subscript):
                    if "class_count" in _named(target.value) and where != "stats/counting.py":
                        class_counts.append(f"{where}:{node.lineno}")
                    key = target.slice.value if isinstance(target.slice, ast.Constant) else None
                    if _named(target.value) in record or key in record:
                        records.append(f"{where}:{node.lineno}")
                elif isinstance(node, ast.AugAssign) and _named(target) in record:
                    records.append(f"{where}:{node.lineno}")
    assert outcomes == []
    assert class_counts == []
    assert records == []


def test_the_loop_over_the_documents_a_learner_is_given_is_written_once():
    """Every learner of given documents (train --update and forget, jobs.training; the
    one-message learner, jobs.learnone) goes through one loop, changes.Ledger.changes_of: a
    document read, its journal key found, its change asked, its tokens made only then. No
    other module finds a document's journal key (journal_key), asks what the ledger holds one
    under (learned_as) or asks the door (`change`): training._changed and learnone._appended
    each wrote that loop, their reading and their handling of errors apart."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where == "stats/changes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _named(node.func) in ("journal_key", "learned_as", "change"):
                found.append(f"{where}:{node.lineno}: {_named(node.func)}")
    assert found == []


def test_a_models_file_record_is_given_when_it_is_made():
    """What a model knows of its file (file_info: its version, its pending records) is given
    to it when it is made: the replay of pending records wrote it onto the model it had made."""
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in written_attributes(path, {"file_info"})
    ]
    assert found == []


CALIBRATION_FIELDS = {"calibration", "calibration_sample", "sample_bound", "sample_mode"}  # classifier.model.Calibrated


def test_a_models_calibration_is_set_only_by_take_calibration():
    """A model's calibration (its fit, sample, bound and mode: one Calibrated) is set in one
    place, NaiveBayes.take_calibration: no module writes one of them onto another object
    (`self`'s own are an object's own, as the model file's record of them is)."""
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in written_attributes(path, CALIBRATION_FIELDS)
    ]
    assert found == []


def _wrappers(callback):
    """The code names of a command callback's wrappers, outermost first (functools.wraps
    copies the wrapped function's __name__, not its code)."""
    names = []
    while callback is not None:
        names.append(callback.__code__.co_name)
        callback = getattr(callback, "__wrapped__", None)
    return names


def test_imap_access_is_made_before_the_inputs_are_grouped():
    """cli.options.imap_options hands `imap_access` to the command, and `grouped` puts it among
    the labelled inputs: on a command with both, imap_options must wrap grouped (sit above it),
    or the command fails on its first call."""
    both = 0
    for name, command in cli.commands.items():
        wrappers = _wrappers(command.callback)
        if "with_access" in wrappers and "with_groups" in wrappers:
            both += 1
            assert wrappers.index("with_access") < wrappers.index("with_groups"), name
    assert both == 2  # train and eval


def test_only_the_cutoff_module_tells_the_kinds_of_a_spam_cutoff_apart():
    """What each kind of spam cut-off means (this build's ceiling on the other class's
    probability, older builds' floor on spam's: its range, its decision, when it means never,
    the one-message path's agreement, its words) is written in nbtext/cutoff.py alone (Cutoff):
    no other module names a kind, by its constant or its record's key. The schema, the report's
    words, the one-message path's agreement check and the online report each branched on it."""
    from nbtext import cutoff

    kinds = {"OTHER_CEILING", "SPAM_FLOOR"}
    keys = {cutoff.OTHER_CEILING, cutoff.SPAM_FLOOR}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "cutoff.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = (
                {alias.name for alias in node.names}
                if isinstance(node, ast.ImportFrom)
                else {_named(node)}
                if isinstance(node, (ast.Name, ast.Attribute))
                else set()
            ) & kinds
            if isinstance(node, ast.Constant) and node.value in keys:
                named.add(node.value)
            found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {name}" for name in sorted(named)]
    assert found == []


def test_the_repository_tracks_no_symbolic_link():
    """A clone holds what it tracks, and a link holds a path of the machine it was made on
    (a `data` link into one checkout, committed by mistake, sent `make corpora` of every
    clone into that checkout, or to no folder at all where it is absent)."""
    root = PACKAGE.parent
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=root, capture_output=True, text=True, check=True).stdout
    assert [line.split("\t", 1)[1] for line in listed.splitlines() if line.startswith("120000 ")] == []


def architecture_blocks():
    """docs/architecture.md's tree of modules ({package: {module}}) and its list of layers
    ({container: 'a > b | c > ...'}, continuation lines joined)."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree_text = text.split("```text", 1)[1].split("```", 1)[0]
    layers_text = text.split("## The layers", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    tree, package = {}, None
    for line in tree_text.splitlines():
        if re.match(r"  \w+/", line):  # a package (`  reading/      documents -> tokens`)
            package = line.split()[0].rstrip("/")
            tree[package] = set()
        elif package and re.match(r"    \w", line):  # one of its modules (continuations are indented further)
            tree[package].add(line.split()[0])
    layers, name = {}, None
    for line in layers_text.splitlines():
        if line.strip().startswith(">"):
            layers[name] += " " + line.strip()
        elif line.strip():
            name, _, rest = line.strip().partition(" ")
            layers[name] = rest.strip()
    return tree, {k: " ".join(v.split()) for k, v in layers.items()}


def test_the_architecture_page_names_every_module_and_the_contracts_layers():
    """docs/architecture.md's tree lists every module of every package (and no other), and
    its list of layers is pyproject's importlinter contracts, one line each: a module added,
    moved or renamed fails here until the page says so (it had left out fisher, the IMAP
    rooms and imapscan, and put online where the contracts do not)."""
    import tomllib

    tree, layers = architecture_blocks()
    modules = {
        package.name: {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
        for package in PACKAGE.iterdir()
        if package.is_dir() and (package / "__init__.py").exists()
    }
    assert tree == modules
    contracts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    expected = {
        contract["containers"][0].removeprefix("nbtext."): " > ".join(
            " ".join(layer.split()) for layer in contract["layers"]
        )
        for contract in contracts
        if contract["type"] == "layers"
    }
    assert layers == expected
