"""What the commands show: the text they print, the one writer of stdout, and pictures."""
