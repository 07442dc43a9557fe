"""`nbtext eval`'s work, whichever of its three kinds: a model scored on labelled documents,
the train options cross-validated (--folds, --compare), or the spam track's online run
(--online). The command line parses the options, loads the model and draws the progress
it is handed here (`progress`, `on_fold`, `online_steps`); this module decides what runs."""

from nbtext.errors import NbtextError
from nbtext.jobs.training import with_table_columns
from nbtext.reading.sources import labelled_input


def _unchanged(documents, label, paths=(), labelled=False):
    return documents


def evaluation(
    model,
    model_name,
    inputs,
    settings,
    unsure_below,
    jobs,
    folds,
    seed,
    compare,
    learn,
    skipped,
    progress=_unchanged,
    on_fold=None,
    online_steps=None,
):
    """("crossval", {folds, seed, models: results by event model}, None, documents) with
    `folds`; ("online", the report, None, documents) with `learn` (an online run, from
    `model` or, None, from nothing with train `settings`, learning by the rule and TONE
    margin of `learn`); else ("report", the report of
    `model`, its curves, documents). `model_name` (its path) names it in errors;
    `inputs` are labelled_input's keyword arguments. `progress(documents, label, paths,
    labelled)` gives the documents back as they are read (a progress bar), `on_fold` is
    cross_validate's, and `online_steps(n)` gives the online run's on_step for n documents
    (or None)."""
    if folds is not None:
        return _cross_validated(inputs, settings, unsure_below, jobs, folds, seed, compare, skipped, progress, on_fold)
    columns = model.settings["tokenizer"].get("columns") if model else None
    if learn is not None and columns is not None:  # (said before its table is asked for)
        raise NbtextError(f"eval --online runs a multinomial model of counts, and {model_name} is a categorical one")
    docs = labelled_input(**inputs, columns=columns)  # (an online run checks the classes it makes: evaluate_online)
    if learn is not None:
        from nbtext.jobs.online import evaluate_online

        documents = list(docs())
        on_step = online_steps(len(documents)) if online_steps is not None else None
        rule, tone_margin = learn
        report = evaluate_online(
            documents, settings, model, rule, seed, unsure_below, jobs, skipped, on_step, tone_margin
        )
        return "online", report, None, report["n"]
    from nbtext.jobs.evaluation import evaluate as score

    docs, curves = progress(docs(), "evaluating", inputs["class_dirs"], True), {}
    report = score(model, docs, unsure_below=unsure_below, jobs=jobs, on_error=skipped, curves=curves)
    if not report["n"] + report.get("unsure", 0):  # a report of dashes says nothing
        raise NbtextError("no documents to evaluate: the input given holds none that could be read")
    return "report", report, curves, report["n"] + report.get("unsure", 0)


def _cross_validated(inputs, settings, unsure_below, jobs, folds, seed, compare, skipped, progress, on_fold):
    from nbtext.classifier.settings import table_rows_model
    from nbtext.jobs.crossval import cross_validate
    from nbtext.stats.event_models import EVENT_MODELS

    models = [m.strip() for m in compare.split(",")] if compare else [settings["model"]]
    rows = {table_rows_model(m) for m in models if m in EVENT_MODELS}
    if len(rows) > 1:
        raise NbtextError(
            "--compare: a model of a table's columns (categorical) and the text models read "
            "different documents; compare one kind at a time"
        )
    settings = with_table_columns({**settings, "model": models[0]}, inputs)  # (--model is refused with --compare)
    docs = labelled_input(**inputs, columns=settings.get("columns"), classes_made=True)  # (each fold trains a model)
    docs = progress(docs(), "reading", inputs["class_dirs"], True)
    results = cross_validate(docs, folds, seed, models, skipped, on_fold, jobs, unsure_below, **settings)
    done = sum(f["n"] for f in next(iter(results.values()))["folds"])
    decision = {"unsure_below": unsure_below} if unsure_below is not None else {}
    return "crossval", {"folds": folds, "seed": seed, **decision, "models": results}, None, done
