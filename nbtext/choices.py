"""Every choice list and train default, defined once.

Used by the command line (click.Choice, option defaults) and by the settings checks, so
the two can never disagree. Imports neither numpy nor click: it is read at start-up.
"""

EVENT_MODELS = ("multinomial", "bernoulli", "complement", "gaussian", "categorical")
PRIORS = ("smoothed", "empirical", "uniform")
FEATURES = ("counts", "binary", "tfidf")
TF_MODES = ("raw", "log")
INPUT_MODES = ("auto", "mail", "text")
UNKNOWN_MODES = ("unk", "ignore")
PREDICT_FORMATS = ("tsv", "json")
EVAL_FORMATS = ("table", "json")
INFO_FORMATS = ("text", "json")

DEFAULT_HEADERS = ("subject", "from", "to", "content-type")  # mail headers whose words are tokens
DEFAULT_MODEL = "nbtext.model"  # the model file, unless $NBTEXT_MODEL or -m / -o say otherwise

TRAIN_DEFAULTS = {
    "model": "multinomial",
    "alpha": None,  # 1, or 0.1 when most training documents are e-mail (nbtext.settings)
    "prior": "smoothed",
    "min_count": 2,
    "max_features": None,
    "ngrams": 1,
    "unknown": None,  # "unk", or "ignore" with tf-idf features
    "input": "auto",
    "headers": DEFAULT_HEADERS,
    "columns": None,  # categorical: the feature columns of the table, in order
    # feature values; None: the event model's own default (nbtext.event_models)
    "features": None,
    "tf": None,
    "idf": None,
    "length_norm": None,
    "weight_norm": None,
}
