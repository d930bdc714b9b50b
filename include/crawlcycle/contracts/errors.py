"""The error every stage raises for bad input, which the command line and the tasks turn into one line."""


class InputError(ValueError):
    """Bad input (a setting, a file, an argument): the message is one line naming it and the reason."""
