"""Reading documents: every kind of PATH and stream to Documents, e-mail to tagged text, text to tokens."""
