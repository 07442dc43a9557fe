# IMAPSieve: a message moved or copied into Junk is learned as spam.
require ["vnd.dovecot.pipe", "vnd.dovecot.environment", "environment", "variables", "copy", "imapsieve", "imap4flags"];

# A message nbtext imap-scan moved carries its keyword $NbtextMoved: its move is the model's own
# verdict, not the user's, and is not learned.
if hasflag "$NbtextMoved" {
  stop;
}
if environment :matches "vnd.dovecot.config.nbtext_model" "*" {
  set "model" "${1}";
}
# :copy keeps the message where the user put it; :try makes a learner that fails (model
# locked, missing or broken, disk full: nbtext exits 1, or is stopped by the timeout) a
# line in the log, never a failed move.
pipe :copy :try "nbtext" ["train", "--update", "-q", "-m", "${model}", "spam=-"];
