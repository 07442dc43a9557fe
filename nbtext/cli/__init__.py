"""The command line: the executable, the click commands and options, the terminal, and the
click-free path of one message (predict, filter, learning one)."""
