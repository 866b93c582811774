"""The OES_SUBTREE constraint grammar: Object Eventing Service subtree subscriptions.

Strategy: a constraint is a subscription on a node of the OES tree with a
depth (object-eventing-service.txt, "Basic Concepts", Figure 2); an event
names its node in the ``node`` property. ``subtree`` parses and compiles
subscriptions; ``limits`` holds the per-channel node limits of Figures 3 and 4
(upward propagation limits and barricades) and the context variable through
which the routing channel hands them to the matchers; ``index`` files
subscriptions in the routing index by their node's pathname (Figure 5's
subscription pools are in ``limits`` too). Importing the package registers the
grammar as ``OES_SUBTREE``. docs/grammars/oes.md has the
grammar and the rules.
"""

from __future__ import annotations

from cosnotify.filter.oes.index import decompose_oes_subtree
from cosnotify.filter.oes.limits import (
    CURRENT_LIMITS,
    INFINITE,
    NodeLimit,
    NodeLimits,
    current_limits,
    format_path,
    reset_limits,
    set_limits,
    split_path,
    using,
)
from cosnotify.filter.oes.subtree import (
    NODE_PROPERTY,
    Subscription,
    SubtreeSyntaxError,
    compile_subscription,
    event_path,
    parse_subscription,
    render_subscription,
)
from cosnotify.filter.registry import CompileContext, CompiledConstraint, register_grammar

__all__ = [
    "CURRENT_LIMITS",
    "INFINITE",
    "NODE_PROPERTY",
    "NodeLimit",
    "NodeLimits",
    "Subscription",
    "SubtreeSyntaxError",
    "compile_oes_subtree",
    "compile_subscription",
    "current_limits",
    "event_path",
    "format_path",
    "parse_subscription",
    "render_subscription",
    "reset_limits",
    "set_limits",
    "split_path",
    "using",
]


def compile_oes_subtree(text: str, context: CompileContext) -> CompiledConstraint:
    """Compile one OES_SUBTREE constraint; SubtreeSyntaxError if the text is not one."""
    subscription = parse_subscription(text)
    structured, any_, typed = compile_subscription(subscription)
    return CompiledConstraint(structured, any_, typed, subscription)


register_grammar("OES_SUBTREE", compile_oes_subtree, decompose=decompose_oes_subtree)
