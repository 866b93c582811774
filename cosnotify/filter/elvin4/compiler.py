"""ELVIN4 expressions compiled to Python functions (Elvin 4 client protocol §6.1).

Strategy: a checked tree (``check``) becomes Python source, compiled once per
constraint into three matchers (structured, Any, typed events). Matching an
event runs no tree walk and builds no tri-state values in the common case:

- Truth (§6.1.1, Lukasiewicz). Each predicate is compiled twice, as ``T(e)``
  ("e is true") and ``F(e)`` ("e is false"); bottom is "neither". Then
  T(a && b) = T(a) and T(b),  F(a && b) = F(a) or F(b),  T(!a) = F(a) ... which
  is exactly the seed's truth table, with Python's short-circuit ``and``/``or``.
  ``^^`` needs the three-valued ``V(e)`` of its operands (a helper per node),
  so no operand is ever compiled more than a fixed number of times.
- A leaf predicate is a *guard* (its operands have the types it needs, else
  bottom, §6.1.6) and a *test*: T = guard and test, F = guard and not test.
  Comparisons of an attribute with a literal, the type predicates and the
  string predicates are inlined; anything else calls ``evaluate``.
- Attributes (``values``): a prologue finds every attribute the expression
  names in one pass over the event's properties, converting CORBA Anys with
  a fast path for the basic TypeCodes. A missing attribute is ``MISSING`` and
  an unmapped one ``None``; both fail every guard.
- Matchers never raise (registry.CompiledConstraint). The generated source is
  executed twice: a fast namespace with the plain helpers and a *guarded*
  one whose helpers and pattern objects answer None (bottom) instead of
  raising. The fast matcher catches any exception and re-runs the event in
  the guarded matcher, so an operand that raises (a bug, never expected) is
  bottom for that operand only: ``a || b`` is still true when b is. An
  exception the guarded matcher still meets (a malformed event, read in the
  prologue) answers False. ``strict=True`` (tests) compiles without any of
  this, so a helper that raises fails the test that reached it.
- ``regex`` and ``wildcard`` calls share one ``regex.Budget`` per evaluation,
  made first in the prologue: the evaluation's pattern work is bounded, not
  each call's (review 130); a call that finds it spent is bottom.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from cosnotify.filter.elvin4 import ast, evaluate, values
from cosnotify.filter.elvin4 import regex as regex_module
from cosnotify.filter.elvin4.errors import SubscriptionError
from cosnotify.filter.elvin4.regex import Budget, Glob, PatternError, Regex
from cosnotify.filter.paths import STRUCTURED_HEADER

__all__ = ["ElvinProgram", "generate"]

#: Attribute names held in plain locals; more go to a list indexed by a dict.
_MAX_LOCALS: Final = 8
#: A literal smaller than this in magnitude compares with any Elvin number, in plain
#: Python, exactly as promotion to a common type would (§6.2).
_EXACT: Final = 2**53
_COMPARE_HELPERS: Final = {"==": "_eq", "<": "_lt", "<=": "_le", ">": "_gt", ">=": "_ge"}
_MATH_HELPERS: Final = {
    "+": "_add", "-": "_sub", "*": "_mul", "/": "_div", "%": "_mod", "<<": "_lshift",
    ">>": "_rshift", ">>>": "_urshift", "&": "_bit_and", "|": "_bit_or", "^": "_bit_xor",
}
_UNARY_HELPERS: Final = {"-": "_neg", "+": "_pos", "~": "_bit_not"}
_STRING_HELPERS: Final = {"size": "_size", "fold-case": "_fold_case",
                          "decompose": "_decompose", "decompose-compat": "_decompose_compat"}
_TYPE_TESTS: Final = {"int32": "int", "int64": "_Int64", "real64": "float", "string": "str",
                      "opaque": "bytes"}
#: Run-time helpers of the generated code, guarded in the fallback namespace.
_HELPERS: Final = frozenset({
    "_and3", "_or3", "_xor3", "_equals", *_COMPARE_HELPERS.values(), *_MATH_HELPERS.values(),
    *_UNARY_HELPERS.values(), *_STRING_HELPERS.values()})


def _and3(*items: bool | None) -> bool | None:
    if False in items:
        return False
    return None if None in items else True


def _or3(*items: bool | None) -> bool | None:
    if True in items:
        return True
    return None if None in items else False


def _xor3(*items: bool | None) -> bool | None:
    if None in items:
        return None
    return sum(1 for item in items if item) % 2 == 1


_NOT3: Final = {True: False, False: True, None: None}

_GLOBALS: Final[dict[str, Any]] = {
    "M": values.MISSING, "P": values.PLAIN_TYPECODES, "S": values.from_any,
    "_Int64": values.Int64, "_NUM": evaluate.NUMBERS, "_and3": _and3, "_or3": _or3,
    "_xor3": _xor3, "_NOT3": _NOT3, "_equals": evaluate.equals, "_Budget": Budget,
    **{helper: getattr(evaluate, helper[1:]) for helper in (
        *_COMPARE_HELPERS.values(), *_MATH_HELPERS.values(), *_UNARY_HELPERS.values(),
        *_STRING_HELPERS.values())},
}


@attrs.frozen(eq=False)
class ElvinProgram:
    """A compiled expression: the ``source`` of its CompiledConstraint."""

    text: str
    tree: ast.Node
    names: frozenset[str]
    python: str
    structured: Any
    any: Any
    typed: Any


@attrs.frozen
class _Leaf:
    guard: str | None  # None: always defined (require)
    test: str  # a Python bool expression, evaluated only when the guard holds


@attrs.frozen
class _Tri:
    code: str  # a Python expression giving True, False or None


class _Generator:
    def __init__(self, text: str, names: list[str]) -> None:
        self.text = text
        self.consts: dict[str, Any] = {}
        self.temps = 0
        self.patterns = 0            # regex and wildcard call sites (each its budget)
        if len(names) <= _MAX_LOCALS:
            self.var = {name: f"v{i}" for i, name in enumerate(names)}
        else:
            self.var = {name: f"V[{i}]" for i, name in enumerate(names)}

    def const(self, value: Any) -> str:
        key = f"k{len(self.consts)}"
        self.consts[key] = value
        return key

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    # -- values --------------------------------------------------------------------------------
    def value(self, node: ast.Node) -> str:
        if isinstance(node, ast.Name):
            return self.var[node.name]
        if isinstance(node, ast.Literal):
            if node.type == "int32":
                return f"({node.value!r})"
            if node.type == "int64":
                return self.const(values.Int64(node.value))
            return self.const(node.value)
        if isinstance(node, ast.Unary):
            return f"{_UNARY_HELPERS[node.op]}({self.value(node.operand)})"
        if isinstance(node, ast.Binary):
            return (f"{_MATH_HELPERS[node.op]}({self.value(node.left)}, "
                    f"{self.value(node.right)})")
        if isinstance(node, ast.Call) and node.name in _STRING_HELPERS:
            return f"{_STRING_HELPERS[node.name]}({self.value(node.args[0])})"
        raise AssertionError(f"not a value: {node!r}")  # check() rules this out

    def subject(self, node: ast.Node) -> tuple[str, str]:
        """(code to bind in the guard, name to use after it) for a string operand."""
        code = self.value(node)
        if isinstance(node, ast.Name):
            return code, code
        name = self.temp()
        return f"({name} := {code})", name

    # -- predicates ----------------------------------------------------------------------------
    def leaf(self, node: ast.Node) -> _Leaf | _Tri:
        if isinstance(node, ast.Compare):
            return self.compare(node)
        assert isinstance(node, ast.Call)
        name, args = node.name, node.args
        if name == "require":  # §6.1.6: true or false, never bottom
            return _Leaf(None, f"({self.value(args[0])} is not M)")
        if name == "equals":  # §6.1.7: type and value (evaluate.equals)
            return _Tri("_equals(" + ", ".join(self.value(arg) for arg in args) + ")")
        if name in _TYPE_TESTS:
            var = self.value(args[0])
            return _Leaf(f"({var} is not M)", f"(type({var}) is {_TYPE_TESTS[name]})")
        if name == "nan":
            var = self.value(args[0])
            return _Leaf(f"(type({var}) is float)", f"({var} != {var})")
        bound, subject = self.subject(args[0])
        patterns = [arg.value for arg in args[1:] if isinstance(arg, ast.Literal)]
        guard = f"(type({bound}) is str)"
        if name == "begins-with":
            return _Leaf(guard, f"{subject}.startswith({self.const(tuple(patterns))})")
        if name == "ends-with":
            return _Leaf(guard, f"{subject}.endswith({self.const(tuple(patterns))})")
        if name == "contains":
            return _Leaf(guard, "(" + " or ".join(
                f"{self.const(p)} in {subject}" for p in patterns) + ")")
        # regex and wildcard: bottom for a value too long or too costly, the cost counted
        # in the call site's share Bn of the evaluation's budget (made by the prologue)
        if name == "wildcard":
            site = self.budget_site()
            tests = [f"{self.const(Glob(str(p)))}.match({subject}, {site})" for p in patterns]
            test = tests[0] if len(tests) == 1 else "_or3(" + ", ".join(tests) + ")"
            return _Tri(f"({test} if {guard} else None)")
        if name == "regex":
            site = self.budget_site()
            regex = self.const(self.regex(args[1]))
            return _Tri(f"({regex}.search({subject}, {site}) if {guard} else None)")
        raise AssertionError(f"not a predicate: {node!r}")

    def budget_site(self) -> str:
        """The name of a new regex/wildcard call site's budget (``generate``)."""
        self.patterns += 1
        return f"B{self.patterns - 1}"

    def regex(self, node: ast.Node) -> Regex:
        assert isinstance(node, ast.Literal)
        try:
            return Regex(str(node.value))
        except PatternError as exc:
            raise SubscriptionError(exc.name, f"{exc} (at offset {exc.offset} of the pattern "
                                    f"{str(node.value)!r})", self.text, node.pos) from None

    def compare(self, node: ast.Compare) -> _Leaf | _Tri:
        left, right = node.left, node.right
        for attr, lit in ((left, right), (right, left)):
            if isinstance(attr, ast.Name) and isinstance(lit, ast.Literal):
                var = self.var[attr.name]
                k = lit.value
                if lit.type == "string":
                    if node.op == "==":
                        return _Leaf(f"(type({var}) is str)", f"({var} == {self.const(k)})")
                elif abs(k) < _EXACT and (node.op != "==" or k != 0):  # type: ignore[arg-type]
                    code_l, code_r = self.value(left), self.value(right)
                    return _Leaf(f"(type({var}) in _NUM)", f"({code_l} {node.op} {code_r})")
        return _Tri(f"{_COMPARE_HELPERS[node.op]}({self.value(left)}, {self.value(right)})")

    def truth(self, node: ast.Node, want: bool) -> str:
        """``T(node)`` (want=True) or ``F(node)``: a Python bool expression."""
        if isinstance(node, ast.Not):
            return self.truth(node.operand, not want)
        if isinstance(node, ast.Logic):
            if node.op == "^^":
                return f"({self.tri(node)} is {want})"
            joiner = " and " if (node.op == "&&") == want else " or "
            return "(" + joiner.join(self.truth(o, want) for o in node.operands) + ")"
        leaf = self.leaf(node)
        if isinstance(leaf, _Tri):
            return f"({leaf.code} is {want})"
        test = leaf.test if want else f"(not {leaf.test})"
        return test if leaf.guard is None else f"({leaf.guard} and {test})"

    def tri(self, node: ast.Node) -> str:
        """``V(node)``: a Python expression giving True, False or None."""
        if isinstance(node, ast.Not):
            return f"_NOT3[{self.tri(node.operand)}]"
        if isinstance(node, ast.Logic):
            helper = {"&&": "_and3", "||": "_or3", "^^": "_xor3"}[node.op]
            return f"{helper}(" + ", ".join(self.tri(o) for o in node.operands) + ")"
        leaf = self.leaf(node)
        if isinstance(leaf, _Tri):
            return leaf.code
        return leaf.test if leaf.guard is None else f"({leaf.test} if {leaf.guard} else None)"


def _store(target: str) -> list[str]:
    # the fast path only when ``_v`` already has the Elvin type's Python type (values),
    # an int within int32's range (an Any made in process may hold any int: values.py)
    return ["a = p.value",
            (f"{target} = b if (t := P.get(a._t)) is type(b := a._v) and (t is not int or"
             f" {values.INT32_MIN} <= b <= {values.INT32_MAX}) else S(a)")]


def _prologue_structured(gen: _Generator, names: list[str]) -> list[str]:
    header = [n for n in names if n in STRUCTURED_HEADER]
    # Every name is looked for among the properties while it is missing: a header
    # field that is empty is absent, as it is from a notification without that
    # attribute (mapping.from_event leaves it out), so a property may carry the name.
    props = list(names)
    lines: list[str] = []
    if len(names) > _MAX_LOCALS:
        lines.append(f"V = [M] * {len(names)}")
    elif names:
        lines.append(" = ".join(gen.var[n] for n in names) + " = M")
    for n in header:  # first: a header field that is there wins over a property
        var = gen.var[n]
        lines.append(f"{var} = ev.{'.'.join(STRUCTURED_HEADER[n])}")
        lines.append(f"if type({var}) is not str or not {var}: {var} = M")
    if props:
        index = {n: names.index(n) for n in props}
        missing = (" or ".join(f"{gen.var[n]} is M" for n in props)
                   if len(names) <= _MAX_LOCALS else "M in V")
        for source, condition in (("ev.filterable_data", None),
                                  ("ev.header.variable_header", missing)):
            indent = ""
            if condition:
                lines.append(f"if {condition}:")
                indent = "    "
            lines.append(f"{indent}for p in {source}:")
            if len(names) > _MAX_LOCALS:
                lines.append(f"{indent}    i = IDX.get(p.name)")
                lines.append(f"{indent}    if i is not None and V[i] is M:")
                lines.extend(f"{indent}        {line}" for line in _store("V[i]"))
                gen.consts["IDX"] = index
            else:
                lines.append(f"{indent}    n = p.name")
                for j, n in enumerate(props):
                    lines.append(f"{indent}    {'if' if j == 0 else 'elif'} n == {n!r}:")
                    lines.append(f"{indent}        if {gen.var[n]} is M:")
                    lines.extend(f"{indent}            {line}" for line in _store(gen.var[n]))
    return lines


def _prologue_attributes(gen: _Generator, names: list[str]) -> list[str]:
    if len(names) > _MAX_LOCALS:
        gen.consts["NAMES"] = tuple(names)
        return ["V = [A.get(n, M) for n in NAMES]"]
    return [f"{gen.var[n]} = A.get({n!r}, M)" for n in names]


def _function(name: str, argument: str, prologue: list[str], body: str,
              strict: bool) -> str:
    if strict:
        lines = [f"def {name}({argument}):", *(f"    {line}" for line in prologue),
                 f"    return {body}", ""]
        return "\n".join(lines)
    lines = [f"def {name}({argument}):", "    try:"]
    lines.extend(f"        {line}" for line in prologue)
    lines.append(f"        return {body}")
    lines += ["    except Exception:", f"        return FALLBACK_{name}({argument})", ""]
    return "\n".join(lines)


def _never(event: Any) -> bool:
    """The fallback of the guarded matchers: nothing left to try."""
    return False


def _guarded(helper: Any) -> Any:
    """``helper`` answering None (bottom) where it would raise."""
    def call(*args: Any) -> Any:
        try:
            return helper(*args)
        except Exception:  # noqa: BLE001 - an operand that raises is bottom
            return None
    return call


class _GuardedPattern:
    """A Regex or Glob whose ``search``/``match`` answer None where they would raise."""

    __slots__ = ("_pattern",)

    def __init__(self, pattern: Regex | Glob) -> None:
        self._pattern = pattern

    def search(self, subject: str, budget: Budget) -> bool | None:
        try:
            return self._pattern.search(subject, budget)  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - an operand that raises is bottom
            return None

    def match(self, subject: str, budget: Budget) -> bool | None:
        try:
            return self._pattern.match(subject, budget)  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - an operand that raises is bottom
            return None


_MATCHERS: Final = ("match_structured", "match_attributes")


def generate(text: str, tree: ast.Node, *, strict: bool = False) -> ElvinProgram:
    """Compile a checked ``tree`` (of ``text``) into an ElvinProgram.

    SubscriptionError for a bad ``regex`` pattern (§6.3 INVALID_REGEXP,
    REGEXP_TOO_COMPLEX). ``strict`` matchers let every exception through
    (for tests); the others never raise (see the module docstring).
    """
    names = sorted(ast.names_of(tree))
    gen = _Generator(text, names)
    body = gen.truth(tree, True)
    # The evaluation's work budget, in equal shares, one per regex/wildcard call site
    # (regex.Budget): the total is bounded (review 130), and one costly call spends
    # only its share, so it cannot make a cheap call of the same expression bottom
    # (review 143: `regex(x, costly) || regex(y, "^ok$")` was bottom, not TRUE).
    share = regex_module.WORK_BUDGET // max(1, gen.patterns)
    budget = [f"B{i} = _Budget({share})" for i in range(gen.patterns)]
    source = "\n".join([
        _function("match_structured", "ev", budget + _prologue_structured(gen, names), body,
                  strict),
        _function("match_attributes", "A", budget + _prologue_attributes(gen, names), body,
                  strict),
        "def match_typed(ev):", "    return match_attributes(typed_attributes(ev))", "",
        "def match_any(ev):", "    return match_attributes(any_attributes(ev))", "",
    ])
    namespace: dict[str, Any] = {**_GLOBALS, **gen.consts,
                                 "typed_attributes": values.typed_attributes,
                                 "any_attributes": values.any_attributes}
    try:
        code = compile(source, f"<ELVIN4 {text[:60]!r}>", "exec")
    except (RecursionError, SyntaxError, MemoryError):  # not expected below MAX_NESTING
        raise SubscriptionError("NESTING_TOO_DEEP", "expression too deeply nested to compile",
                                text, 0) from None
    if not strict:
        guarded: dict[str, Any] = {
            key: (_guarded(item) if key in _HELPERS
                  else _GuardedPattern(item) if isinstance(item, (Regex, Glob)) else item)
            for key, item in namespace.items()}
        guarded.update({f"FALLBACK_{name}": _never for name in _MATCHERS})
        exec(code, guarded)  # noqa: S102
        namespace.update({f"FALLBACK_{name}": guarded[name] for name in _MATCHERS})
    exec(code, namespace)  # noqa: S102
    return ElvinProgram(text, tree, frozenset(names), source, namespace["match_structured"],
                        namespace["match_any"], namespace["match_typed"])
