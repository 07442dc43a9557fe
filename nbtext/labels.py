"""What a class label may be: any text without control characters (C0, DEL, C1 and the
Unicode line and paragraph separators; a folder name that is not UTF-8, held as surrogate
escapes, is a label). A label is data that ends up in headers (filter's X-Nbtext-Class),
TSV columns and JSON, so a line break or another control character in one could forge a
header or a line: train refuses such a label, and the model reader a file that holds one.
And when an existing model may take a label it does not have (new_classes_refused)."""

# C0, DEL, C1 and the Unicode line and paragraph separators, as str.translate deletes them
CONTROLS = dict.fromkeys([*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029])


def without_controls(text):
    """`text` without its control characters: what a label may not hold, and what a token
    taken whole from a message loses (the model file separates tokens with NUL)."""
    return text.translate(CONTROLS)


def label_problem(label):
    """Why `label` cannot be a class label (a sentence), or None if it can."""
    if not isinstance(label, str) or not label:
        return "a class label must be a non-empty name"
    if not label.strip():
        return f"a class label must be a name, not {label!r}"
    control = next((c for c in label if ord(c) in CONTROLS), None)
    if control is not None:
        return f"the class label {label!r} holds a control character (U+{ord(control):04X}); rename it"
    return None


# The word nbtext itself labels with where a class would stand: an undecided document
# (predict, eval, imap-scan, filter's X-Nbtext-Class: unsure), which a class of that name
# could not be told from. (filter's X-Nbtext-Class: error, a message it could not classify,
# is filter's alone: a class 'error' is a common one, of log lines say, and is taken.)
DECISION_WORDS = ("unsure",)


def class_problem(label):
    """Why `label` cannot be the class of a model written now (a sentence), or None:
    label_problem's, and the word nbtext labels with itself (DECISION_WORDS). A model file
    of an older build that holds such a class is still read (label_problem alone)."""
    if label in DECISION_WORDS:
        return (
            f"the class label {label!r} is a word nbtext labels with itself (a document below --unsure-below "
            "or a spam cut-off); rename it"
        )
    return label_problem(label)


def classes_problem(labels):
    """class_problem's sentence of the first of `labels` that has one, or None: the check of
    labels that become classes (train's CLASS_DIR, a cluster's, eval --online's, a change's new ones)."""
    return next(filter(None, map(class_problem, labels)), None)


def spam_class(classes):
    """Of two classes, the one a spam filter flags, as their names say (in any case): the one
    named spam, else the one beside the one named ham; None when the names do not say."""
    for name, flagged in (("spam", True), ("ham", False)):
        named = [c for c in classes if c.lower() == name]
        if len(named) == 1:
            return named[0] if flagged else next(c for c in classes if c != named[0])
    return None


def spam_filter_classes(classes):
    """Whether `classes` (names, each once or more) are a spam filter's: two, one of them
    named spam or ham in any case (spam_class says which is flagged). Labels that are not
    names (the Python API takes any) are not: their own check refuses them."""
    names = set(classes)
    return len(names) == 2 and all(isinstance(name, str) for name in names) and spam_class(names) is not None


def positive_class(classes):
    """Of two classes, the positive one: spam_class's, else the second (sorted). eval
    --online's ROC uses it; a spam cut-off (train --max-ham-flagged) needs spam_class's."""
    return spam_class(classes) or sorted(classes)[1]


def new_classes(known, labels):
    """The labels of `labels` that are not among the classes `known`, each once, in the
    order they come."""
    had, new = set(known), []
    for label in labels:
        if label not in had:
            had.add(label)
            new.append(label)
    return new


def new_classes_said(known, new):
    """`new class 'eggs' (the model has ham, spam)`: what a change of a model would add."""

    def listed(names):
        return ", ".join(names[:5]) + (f" and {len(names) - 5:,} more" if len(names) > 5 else "")

    return (
        f"new class{'es' if len(new) > 1 else ''} {listed([repr(label) for label in new])} "
        f"(the model has {listed(list(known))})"
    )


def new_classes_refused(known, labels, allowed):
    """The rule for every change that takes labels into an existing model (train --update,
    the one-message learner that falls back to it, merge into one of its models): a class
    the model does not have is added only when asked (`allowed`, --new-classes). A folder
    given without LABEL= is a class named after it, so `train --update -m mail.model
    new-spam/` would add a class 'new-spam', not more spam, and the learn-on-error job that
    empties the folder next would lose those messages. A new class no model written now may
    have (class_problem) is refused whatever `allowed` says, before anything is counted, and
    so is a change of an older build's model that holds one (read, but changed by no way): an
    empty learn folder says so on its first run too. Why the change is refused (a sentence
    naming them), or None."""
    new = new_classes(known, labels)
    if problem := classes_problem(list(known)) or classes_problem(new):
        return problem  # (said before anything is counted; model_of_table would refuse it after)
    if not new or allowed:
        return None
    return (
        f"{new_classes_said(known, new)}: to add {'it' if len(new) == 1 else 'them'}, give --new-classes; "
        "to learn documents as a class the model has, name it: LABEL=PATH"
    )
