"""Statement text as others may see it (the process list, the FE log): passwords and hashes
replaced by <secret>, as MySQL shows them."""

from __future__ import annotations

import re

_STRING = r"""(?:'(?:[^'\\]|\\.|'')*(?:'|$)|"(?:[^"\\]|\\.|"")*(?:"|$))"""
_SECRET = re.compile(
    r"(\bIDENTIFIED\s+(?:WITH\s+\S+\s+)?(?:BY|AS)\s+(?:PASSWORD\s+)?"
    r"|\bPASSWORD\s*\(\s*"
    r"|\bSET\s+PASSWORD\b[^=]*=\s*)" + _STRING,
    re.IGNORECASE,
)


def without_secrets(sql: str) -> str:
    """The statement with its passwords and hashes replaced by <secret>, as MySQL shows it."""
    return _SECRET.sub(r"\1<secret>", sql)
