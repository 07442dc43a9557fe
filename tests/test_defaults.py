"""The defaults a corpus chooses: a corpus read mostly as e-mail gets the multinomial's mail
settings (each token once per message, λ = 0.03, min count 1; chosen by cross-validation,
see nbtext.event_models), plain text keeps counts, λ = 1 and min count 2."""

import nbtext

SPAM = "From: x@spam.example\nSubject: free free prize\n\nFree money, free now. Win money!\n"
MAILS = [SPAM, SPAM.replace("prize", "gift"), "From: a@b.c\nSubject: lunch\n\nLunch at noon, lunch notes.\n",
         "From: a@b.c\nSubject: notes\n\nThe meeting notes, notes attached.\n"]
MAIL_LABELS = ["spam", "spam", "ham", "ham"]
TEXTS = ["free money free now", "win free money", "lunch at noon lunch", "meeting notes notes"]


def test_mail_gets_presence_a_small_lambda_and_no_pruning():
    model = nbtext.train(MAILS, MAIL_LABELS)
    assert (model.alpha, model.settings["min_count"], model.settings["features"]) == (0.03, 1, "counts")
    assert model.settings["tokenizer"]["mail_presence"] is True
    assert model.corpus == {"mail_documents": 4, "default_alpha": True, "default_min_count": True}
    # "free" is twice in each spam message's body (and subject:free twice in its subject):
    # counted once per message
    spam = model.classes.index("spam")
    column = model.feature_names.index("free")
    assert model.feature_sums[spam, column] == 2
    assert "win" in model.feature_names  # seen once, kept (min count 1)


def test_text_keeps_counts_lambda_1_and_min_count_2():
    model = nbtext.train(TEXTS, MAIL_LABELS)
    assert (model.alpha, model.settings["min_count"]) == (1.0, 2)
    spam = model.classes.index("spam")
    assert model.feature_sums[spam, model.feature_names.index("free")] == 3  # every occurrence
    assert "win" not in model.feature_names  # seen once: pruned
    assert model.corpus == {"mail_documents": 0, "default_alpha": True, "default_min_count": True}


def test_given_options_are_kept_and_features_counts_turns_presence_off():
    counted = nbtext.train(MAILS, MAIL_LABELS, features="counts", min_count=2, alpha=0.5)
    assert "mail_presence" not in counted.settings["tokenizer"]
    assert (counted.alpha, counted.settings["min_count"]) == (0.5, 2)
    assert counted.corpus == {"mail_documents": 4, "default_alpha": False, "default_min_count": False}
    assert counted.feature_sums[counted.classes.index("spam"), counted.feature_names.index("free")] == 4


def test_bernoulli_keeps_its_own_mail_lambda_and_the_text_min_count():
    model = nbtext.train(MAILS, MAIL_LABELS, model="bernoulli")
    assert (model.alpha, model.settings["min_count"]) == (0.1, 2)
    assert "mail_presence" not in model.settings["tokenizer"]  # presence is its event model already


def test_predicting_a_message_counts_its_repeats_once():
    """A message scored with mail presence gives the same scores however often a word repeats."""
    model = nbtext.train(MAILS, MAIL_LABELS, calibration="none")
    once = "From: q@r.s\nSubject: hello\n\nfree money\n"
    many = "From: q@r.s\nSubject: hello\n\n" + "free money " * 50 + "\n"
    assert (model.predict_log_proba([once]) == model.predict_log_proba([many])).all()
    text = nbtext.train(MAILS, MAIL_LABELS, calibration="none", features="counts")
    assert (text.predict_log_proba([once]) != text.predict_log_proba([many])).any()
