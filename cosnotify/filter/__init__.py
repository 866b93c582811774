"""Filter objects and the EXTENDED_TCL constraint language (Notification §2.3-2.4).

Strategy: text is parsed once, when a constraint is added, into a frozen AST
(``ast``) by a PLY lexer (``lexer``) and parser (``parser``); malformed text
raises ``ConstraintSyntaxError``, which the servant turns into
``CosNotifyFilter::InvalidConstraint``. Evaluation against events builds on
the AST and lives in its own modules.
"""

from cosnotify.filter.errors import ConstraintSyntaxError
from cosnotify.filter.parser import parse_constraint

__all__ = ["ConstraintSyntaxError", "parse_constraint"]
