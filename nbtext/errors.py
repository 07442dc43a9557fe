"""The one exception the library raises for bad input; the CLI prints it as `Error: ...`."""


class NbtextError(Exception):
    """A problem the user can fix: a bad path, a corrupt model, an invalid setting."""
