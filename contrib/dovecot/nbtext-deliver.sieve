# Delivery (LMTP or LDA): nbtext tags each message, spam is filed into Junk.
# Run before the users' own scripts (sieve_before in 90-nbtext.conf).
require ["vnd.dovecot.filter", "vnd.dovecot.environment", "environment", "variables", "fileinto", "mailbox"];

if environment :matches "vnd.dovecot.config.nbtext_model" "*" {
  set "model" "${1}";
}
# The message comes back with X-Nbtext-Class and X-Nbtext-Probability added, every other byte
# its own. When nbtext exits non-zero (1: the model is missing or broken; 75: it could not
# write the message whole) Dovecot logs nbtext's line and the script goes on with the message
# as it came, untagged: it is delivered to INBOX.
filter "nbtext" ["filter", "-m", "${model}"];

if header :is "X-Nbtext-Class" "spam" {
  fileinto :create "Junk";
}
