"""RPL000: a file that cannot be read or parsed."""

from __future__ import annotations

from repro_lint.rule import Invalid, Rule


class SyntaxError(Rule):
    """
    ## What it does
    Reports a file that cannot be read, decoded or parsed: a syntax error, a null byte, bytes
    that are not valid in the file's encoding, a broken symbolic link, a permission error.

    ## Why is this bad?
    Nothing in such a file can be checked, so every other rule is silent about it. The
    diagnostic carries the parser's own position and message; the rest of the run goes on.

    ## Known limitations
    Always reported (``select`` cannot turn it off); an explicit ``ignore = ["RPL000"]`` or a
    per-file ignore hides it. A ``# noqa`` comment cannot suppress it: the file has no
    comments repro-lint can trust.
    """

    CODE = "RPL000"
    MESSAGE = "The file cannot be read or parsed"
    INVALID = (
        Invalid("def train(:\n    pass\n"),
        Invalid("import torch\nx = (\n"),
        Invalid("import torch\nx = 1\x00\n"),
    )
    VALID = ("import torch\ntorch.manual_seed(0)\n",)
