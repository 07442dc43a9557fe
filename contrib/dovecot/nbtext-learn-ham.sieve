# IMAPSieve: a message moved or copied out of Junk is learned as ham, unless it went to Trash.
require ["vnd.dovecot.pipe", "vnd.dovecot.environment", "environment", "variables", "copy", "imapsieve", "imap4flags"];

# The user took it out of Junk: from now on its moves are the user's, even one that nbtext
# imap-scan moved (and marked with $NbtextMoved) before.
removeflag "$NbtextMoved";
if environment :is "imap.mailbox" "Trash" {
  stop;
}
if environment :matches "vnd.dovecot.config.nbtext_model" "*" {
  set "model" "${1}";
}
# As in nbtext-learn-spam.sieve: the message stays, a failed learner is a line in the log.
pipe :copy :try "nbtext" ["train", "--update", "-q", "-m", "${model}", "ham=-"];
