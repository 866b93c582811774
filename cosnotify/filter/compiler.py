"""Compile an EXTENDED_TCL constraint into Python functions, once (§2.4).

Strategy: the AST is turned into Python *source* for one function per event
form (structured, Any, typed), which is compiled with ``compile``/``exec``;
matching an event then runs straight-line Python, never walking the tree.

- Every subexpression is generated with a static *kind*: ``i`` (int),
  ``f`` (float), ``s`` (str), ``b`` (bool) or ``?`` (known only at run
  time). Comparisons and arithmetic between known kinds are plain Python
  operators; a comparison with one known side tests the other side's type
  inline (``(_t < 2 if type(_t := X) is int else _lt(_t, 2))``) and only
  calls a ``runtime`` helper for the unusual mixes (chars as numbers, enums,
  booleans in arithmetic ...).
- Components become *locators* (``paths``), constants in the function's
  namespace. For structured events, paths through the fixed parts of a
  StructuredEvent are inlined as attribute chains (``$type_name`` is
  ``ev.header.fixed_header.event_type.type_name``) and ``$name`` properties use
  one fused loop over the variable header, then the filterable data (§2.4.5).
- A component used more than once is looked up once per match: its result is
  cached in a local initialised to a sentinel (lookups have no side effects).
  That includes the inlined StructuredEvent attribute chains. The sentinel is
  bound as a default argument (``def _match(ev, _U=_U)``), a local rather than
  a global, since every cached use tests it.
- Errors are exceptions: any ``Fail`` (§2.4.3 type errors, missing members,
  division by zero) or other exception ends the match with FALSE. ``and``
  and ``or`` are Python's, so they short-circuit as §2.4.3 requires and an
  error in an evaluated operand still ends the match (the third event of the
  §2.4.3 example).
- Python's parser refuses more than 200 nested parentheses, so subtrees deeper
  than ``_HOIST_DEPTH`` levels are hoisted into helper functions.
"""

from __future__ import annotations

import collections
import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias

from cosnotify.corba import descriptors as D
from cosnotify.filter import ast, paths, runtime
from cosnotify.filter.parser import parse_constraint
from cosnotify.filter.paths import Form
from cosnotify.filter.runtime import (
    DIRECT_KINDS,
    DIRECT_TYPECODES,
    FLOAT_KINDS,
    INTEGER_KINDS,
    STRING_KINDS,
    TEXT_KINDS,
    CorbaAny,
    Fail,
    Label,
    any_operand,
    base_kind,
    operand,
)

__all__ = ["Matcher", "compile_form", "compile_text", "compile_tree", "compile_trees",
           "generated_source", "operand_function", "sequence_function", "system_clock"]

Matcher: TypeAlias = Callable[[Any], bool]
Clock: TypeAlias = Callable[[], int]
Code: TypeAlias = tuple[str, str]  # (Python expression, kind)

#: Seconds between the TimeBase epoch (1582-10-15) and the Unix epoch.
_TIMET_EPOCH_OFFSET: Final = 12219292800
#: AST levels per generated function before a subtree is hoisted out.
_HOIST_DEPTH: Final = 40


def system_clock() -> int:
    """Now as a ``TimeBase::TimeT``: 100 ns units since 1582-10-15T00:00Z."""
    return time.time_ns() // 100 + _TIMET_EPOCH_OFFSET * 10_000_000


# -- run-time helpers visible to generated code ---------------------------------------------

_U: Final = object()  # "not looked up yet" marker for cached components


def _located_operand(found: paths.Pair | None) -> Any:
    if found is None:
        raise Fail
    value, d = found
    if type(d) is int:
        if d in DIRECT_KINDS:
            return value
    elif d[0] in TEXT_KINDS:
        return value
    return operand(value, d)


def _located_or_label(found: paths.Pair | None, name: str) -> Any:
    if found is None:
        return Label(name)
    return operand(*found)


_SE_MEMBERS: Final = frozenset(D.unalias(paths.SE_TC)[4::2])


def _structured_property(ev: Any, name: str) -> Any:
    """``$name`` (§2.4.5) in a structured event: variable header, then filterable data."""
    for prop in ev.header.variable_header:
        if prop.name == name:
            return _property_operand(prop.value)
    for prop in ev.filterable_data:
        if prop.name == name:
            value = prop.value
            if type(value) is CorbaAny:
                if value._t in DIRECT_TYPECODES:
                    return value._v
                return operand(value._v, value._t._d)
            raise Fail
    raise Fail


def _property_operand(value: Any) -> Any:
    if type(value) is CorbaAny:
        if value._t in DIRECT_TYPECODES:
            return value._v
        return operand(value._v, value._t._d)
    raise Fail


def _structured_property_or_label(ev: Any, name: str) -> Any:
    """As ``_structured_property``, but a missing name is an enum label (§2.4.7)."""
    for prop in ev.header.variable_header:
        if prop.name == name:
            return any_operand(prop.value)
    for prop in ev.filterable_data:
        if prop.name == name:
            return any_operand(prop.value)
    return Label(name)


def _typed_property(ev: Any, name: str) -> Any:
    """``$name`` in a typed event's name-value sequence (§2.7): the first pair so named,
    its value read as the generic path reads it (the pair's Any is one of the Any
    layers ``runtime.strip`` counts)."""
    for prop in ev:
        if prop.name == name:
            return _typed_operand(prop.value)
    raise Fail


def _typed_property_or_label(ev: Any, name: str) -> Any:
    """As ``_typed_property``, but a missing name is an enum label (§2.4.7)."""
    for prop in ev:
        if prop.name == name:
            return _typed_operand(prop.value)
    return Label(name)


def _typed_operand(value: Any) -> Any:
    if type(value) is CorbaAny and value._t in DIRECT_TYPECODES:
        return value._v
    return operand(value, D.ANY)


def _any_root(ev: Any) -> paths.Pair:
    if type(ev) is not CorbaAny:
        raise Fail
    return ev._v, ev._t._d


_NAMESPACE: Final[dict[str, Any]] = {
    "_U": _U, "Fail": Fail,
    "_val": _located_operand, "_lab": _located_or_label,
    "_sp": _structured_property, "_spl": _structured_property_or_label,
    "_tp": _typed_property, "_tpl": _typed_property_or_label,
    "_any_root": _any_root,
    "_bool": runtime.as_bool, "_tw": runtime.twiddle, "_in": runtime.contains,
    "_seq": runtime.sequence_view,
    "_dflt": paths.is_default_active,
    "_eq": runtime.eq, "_ne": runtime.ne, "_lt": runtime.lt, "_le": runtime.le,
    "_gt": runtime.gt, "_ge": runtime.ge,
    "_add": runtime.add, "_sub": runtime.sub, "_mul": runtime.mul, "_div": runtime.div,
}

_OP = ast.BinaryOperator
#: Steps that read differently as the operand of ``exist`` (§2.4.6, decision 31).
_UNION_LABELS: Final = (ast.UnionArm, ast.UnionEnumLabel)
_COMPARE: Final = {_OP.EQ: ("==", "_eq"), _OP.NE: ("!=", "_ne"), _OP.LT: ("<", "_lt"),
                   _OP.LE: ("<=", "_le"), _OP.GT: (">", "_gt"), _OP.GE: (">=", "_ge")}
_ARITH: Final = {_OP.ADD: ("+", "_add"), _OP.SUB: ("-", "_sub"), _OP.MUL: ("*", "_mul"),
                 _OP.DIV: ("/", "_div")}
_PY_TYPE: Final = {"i": "int", "f": "float", "s": "str", "b": "bool"}


def _kind_of(d: D.Descriptor) -> str | None:
    """The static kind of a value of descriptor ``d``, if plain Python ops apply."""
    k = base_kind(d)
    if k in INTEGER_KINDS:
        return "i"
    if k in FLOAT_KINDS:
        return "f"
    if k in STRING_KINDS:
        return "s"
    if k == D.BOOLEAN:
        return "b"
    return None


class _Function:
    """One generated Python function: its cache variables and temporaries."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cached: list[str] = []


class _Generator:
    """Generates the source of one form's match function for one or more
    constraints (TRUE when any of them is; each constraint's errors are its own)."""

    def __init__(self, trees: Sequence[ast.Expression], form: Form, clock: Clock) -> None:
        self.form = form
        self.clock = clock
        self.namespace: dict[str, Any] = dict(_NAMESPACE)
        self.functions: list[str] = []
        self._ids = itertools.count()
        self._locators: dict[tuple[ast.Component, bool], str] = {}
        self._cache: dict[tuple[ast.Component, str], str] = {}
        self._uses: collections.Counter[ast.Component] = collections.Counter()
        for tree in trees:
            self._count_uses(tree)
        self._current = _Function("_match")

    # -- bookkeeping -----------------------------------------------------------------------
    def _count_uses(self, node: ast.Expression) -> None:
        stack: list[Any] = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, (ast.Identifier, ast.Component)):
                self._uses[_as_component(item)] += 1
            elif isinstance(item, (ast.Or, ast.And)):
                stack.extend(item.operands)
            elif isinstance(item, ast.BinaryOp):
                stack.extend((item.left, item.right))
            elif isinstance(item, ast.In):
                stack.extend((item.element, item.collection))
            elif isinstance(item, (ast.Not, ast.Exist, ast.Default)):
                stack.append(item.operand)

    def _fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def _cached(self, component: ast.Component, context: str, code: str) -> str:
        """``code`` evaluated at most once per match when ``component`` recurs."""
        if self._uses[component] < 2:
            return code
        key = (component, context + self._current.name)
        name = self._cache.get(key)
        if name is None:
            name = self._fresh("_c")
            self._cache[key] = name
            self._current.cached.append(name)
        return f"({name} if {name} is not _U else ({name} := {code}))"

    def _locator(self, component: ast.Component, exist: bool) -> str:
        name = self._locators.get((component, exist))
        if name is None:
            name = self._fresh("_L")
            self.namespace[name] = paths.component_locator(component, self.form, self.clock,
                                                           exist)
            self._locators[component, exist] = name
        return name

    def located(self, component: ast.Component, exist: bool = False) -> str:
        """Code for the located ``(value, descriptor)`` pair of ``component``, or None;
        with ``exist``, as the operand of ``exist`` reads it (a union label resolves
        only while the discriminator is that label, §2.4.6)."""
        exist = exist and any(isinstance(step, _UNION_LABELS) for step in component.steps)
        return self._cached(component, "exl" if exist else "loc",
                            f"{self._locator(component, exist)}(ev)")

    # -- entry points ----------------------------------------------------------------------
    def source(self, trees: Sequence[ast.Expression]) -> str:
        bodies = []
        for tree in trees:
            code, kind = self.expr(tree, 0)
            bodies.append(code if kind == "b" else f"_bool({code})")
        head = "def _match(ev, _U=_U):\n"
        if self.form is Form.ANY:
            head += "    try:\n        ev = _any_root(ev)\n    except Exception:\n" \
                    "        return False\n"
        head += self._prologue(self._current)
        if len(bodies) == 1:
            main = (f"{head}    try:\n        return {bodies[0]}\n"
                    "    except Exception:\n        return False\n")
        else:
            # Constraints are ORed (§2.3); an error ends only its own constraint.
            blocks = "".join(f"    try:\n        if {body}:\n            return True\n"
                             "    except Exception:\n        pass\n" for body in bodies)
            main = f"{head}{blocks}    return False\n"
        return "\n".join([*self.functions, main])

    @staticmethod
    def _prologue(function: _Function) -> str:
        if not function.cached:
            return ""
        return "    " + " = ".join(function.cached) + " = _U\n"

    def boolean(self, node: ast.Expression, level: int) -> str:
        code, kind = self.expr(node, level)
        return code if kind == "b" else f"_bool({code})"

    def expr(self, node: ast.Expression, level: int) -> Code:
        if level >= _HOIST_DEPTH and node.depth > 1:
            return self._hoist(node)
        level += 1
        if isinstance(node, ast.IntegerLiteral):
            return repr(node.value), "i"
        if isinstance(node, ast.FloatLiteral):
            return repr(node.value), "f"
        if isinstance(node, ast.StringLiteral):
            return repr(node.value), "s"
        if isinstance(node, ast.BooleanLiteral):
            return ("True" if node.value else "False"), "b"
        if isinstance(node, (ast.Identifier, ast.Component)):
            return self.value(_as_component(node), label=False)
        if isinstance(node, ast.Or):
            return "(" + " or ".join(self.boolean(op, level) for op in node.operands) + ")", "b"
        if isinstance(node, ast.And):
            return "(" + " and ".join(self.boolean(op, level) for op in node.operands) + ")", "b"
        if isinstance(node, ast.Not):
            return f"(not {self.boolean(node.operand, level)})", "b"
        if isinstance(node, ast.Exist):
            return f"({self.located(_as_component(node.operand), exist=True)} is not None)", "b"
        if isinstance(node, ast.Default):
            return f"_dflt({self.located(_union_of(node.operand))})", "b"
        if isinstance(node, ast.In):
            element, _ = self.operand(node.element, level)
            collection = _as_component(node.collection)
            view = self._cached(collection, "seq", f"_seq({self.located(collection)})")
            return f"_in({element}, {view})", "b"
        assert isinstance(node, ast.BinaryOp)
        if node.operator in _COMPARE:
            return self._compare(node, level), "b"
        left = self.expr(node.left, level)
        right = self.expr(node.right, level)
        if node.operator is _OP.TWIDDLE:
            if left[1] == right[1] == "s":
                return f"({left[0]} in {right[0]})", "b"
            return f"_tw({left[0]}, {right[0]})", "b"
        return self._arithmetic(node.operator, left, right)

    def _hoist(self, node: ast.Expression) -> Code:
        """Generate ``node`` as its own function (keeps Python's nesting limits)."""
        outer = self._current
        self._current = _Function(self._fresh("_h"))
        code, kind = self.expr(node, 0)
        function = self._current
        self._current = outer
        self.functions.append(f"def {function.name}(ev, _U=_U):\n{self._prologue(function)}"
                              f"    return {code}\n")
        return f"{function.name}(ev)", kind

    # -- components ------------------------------------------------------------------------
    def value(self, component: ast.Component, *, label: bool) -> Code:
        """The operand of ``component``; with ``label``, a bare identifier that
        resolves to nothing becomes a Label (compared against an enum, §2.4.7)."""
        if self.form is Form.STRUCTURED:
            inline = _structured_inline(component)
            if inline is not None:
                # Cached like any component used twice: the 4-attribute chain of
                # ``$domain_name`` costs more than the cache test.
                return self._cached(component, "inl", inline[0]), inline[1]
            name = component.variable
            if (name is not None and not component.steps and name not in _SE_MEMBERS
                    and name not in paths.STRUCTURED_HEADER
                    and (component.escaped or name != paths.CURTIME)):
                helper = "_spl" if label else "_sp"
                return self._cached(component, helper, f"{helper}(ev, {name!r})"), "?"
        elif self.form is Form.TYPED:
            name = component.variable
            if (name is not None and not component.steps
                    and name not in ("domain_name", "type_name")  # from event_type (§2.7)
                    and (component.escaped or name != paths.CURTIME)):
                helper = "_tpl" if label else "_tp"
                return self._cached(component, helper, f"{helper}(ev, {name!r})"), "?"
        found = self.located(component)
        if label:
            return f"_lab({found}, {component.variable!r})", "?"
        return f"_val({found})", "?"

    def operand(self, node: ast.Expression, level: int) -> Code:
        """A comparison operand: bare identifiers may stand for enum labels."""
        if isinstance(node, ast.Identifier):
            return self.value(_as_component(node), label=True)
        return self.expr(node, level)

    # -- operators -------------------------------------------------------------------------
    def _compare(self, node: ast.BinaryOp, level: int) -> str:
        symbol, helper = _COMPARE[node.operator]
        (left, lk), (right, rk) = self.operand(node.left, level), self.operand(node.right, level)
        if lk == rk and lk != "?":
            return f"({left} {symbol} {right})"
        if {lk, rk} == {"i", "f"}:
            # §2.4.3: a double operand converts the other to double.
            if lk == "i":
                left = _as_float(node.left, left)
            else:
                right = _as_float(node.right, right)
            return f"({left} {symbol} {right})"
        if lk != "?" and rk == "?":
            t = self._fresh("_t")
            if not _is_atom(node.left):
                # Name the known side once: writing its code twice would double
                # the source at every nesting level.
                k = self._fresh("_t")
                return (f"({k} {symbol} {t} if type(({k} := {left}, {t} := {right})[1]) "
                        f"is {_PY_TYPE[lk]} else {helper}({k}, {t}))")
            return (f"({left} {symbol} {t} if type({t} := {right}) is {_PY_TYPE[lk]} "
                    f"else {helper}({left}, {t}))")
        if rk != "?" and lk == "?":
            t = self._fresh("_t")
            if not _is_atom(node.right):
                k = self._fresh("_t")
                return (f"({t} {symbol} {k} if type(({t} := {left}, {k} := {right})[0]) "
                        f"is {_PY_TYPE[rk]} else {helper}({t}, {k}))")
            return (f"({t} {symbol} {right} if type({t} := {left}) is {_PY_TYPE[rk]} "
                    f"else {helper}({t}, {right}))")
        return f"{helper}({left}, {right})"

    def _arithmetic(self, operator: ast.BinaryOperator, left: Code, right: Code) -> Code:
        symbol, helper = _ARITH[operator]
        kinds = {left[1], right[1]}
        if operator is not _OP.DIV and kinds <= {"i", "b", "f"}:
            kind = "f" if "f" in kinds else "i"
            return f"({left[0]} {symbol} {right[0]})", kind
        if kinds <= {"i", "b"}:
            return f"_div({left[0]}, {right[0]})", "i"
        if kinds <= {"i", "b", "f"}:
            return f"_div({left[0]}, {right[0]})", "f"
        return f"{helper}({left[0]}, {right[0]})", "?"


def _as_component(node: ast.Identifier | ast.Component) -> ast.Component:
    """A bare identifier resolves exactly like ``$ident`` (§2.4.5; docs/filters.md #1):
    ``\\curtime`` is ``$\\curtime`` (decision 16)."""
    if isinstance(node, ast.Identifier):
        return ast.Component(node.name, node.escaped, ())
    return node


def _union_of(component: ast.Component) -> ast.Component:
    """``default $.u._d`` and ``default $.u`` both test union ``$.u`` (§2.4.2, §2.4.7)."""
    steps = component.steps
    if steps and steps[-1] == ast.ImplicitMember(ast.Implicit.DISCRIMINATOR):
        return ast.Component(component.variable, component.escaped, steps[:-1])
    return component


_ATOMS: Final = (ast.IntegerLiteral, ast.FloatLiteral, ast.StringLiteral, ast.BooleanLiteral,
                 ast.Identifier, ast.Component)


def _is_atom(node: ast.Expression) -> bool:
    """Is the generated code of ``node`` short and free of nested subexpressions?"""
    return isinstance(node, _ATOMS)


def _as_float(node: ast.Expression, code: str) -> str:
    if isinstance(node, ast.IntegerLiteral):
        return repr(float(node.value))
    return f"float({code})"


def _structured_inline(component: ast.Component) -> Code | None:
    """A plain attribute chain for fixed StructuredEvent fields of a simple type."""
    if component.variable is None:
        steps: tuple[ast.Step, ...] = component.steps
    elif component.variable in paths.STRUCTURED_HEADER:
        steps = tuple(ast.Member(n) for n in paths.STRUCTURED_HEADER[component.variable])
        steps += component.steps
    else:
        return None
    names, d, covered = paths.static_path(paths.SE_TC, steps)
    if covered != len(steps) or not names:
        return None
    kind = _kind_of(d)
    if kind is None:
        return None
    return "ev." + ".".join(names), kind


def generated_source(tree: ast.Expression, form: Form, clock: Clock = system_clock) -> str:
    """The Python source generated for ``tree`` (for tests and debugging)."""
    return _Generator([tree], form, clock).source([tree])


def compile_form(trees: Sequence[ast.Expression], form: Form,
                 clock: Clock = system_clock) -> Matcher:
    """The match function of one event form, TRUE when any of ``trees`` is."""
    if not trees:
        raise ValueError("no constraints to compile")
    generator = _Generator(trees, form, clock)
    source = generator.source(trees)
    code = compile(source, f"<constraint {form.value}>", "exec")
    namespace = generator.namespace
    exec(code, namespace)  # noqa: S102 - our own generated source, no user text in names
    match: Matcher = namespace["_match"]
    return match


def operand_function(component: ast.Component, form: Form,
                     clock: Clock = system_clock) -> Callable[[Any], Any]:
    """A function from an event of ``form`` to the operand ``component`` stands for
    in a comparison with a literal, exactly as a compiled constraint reads it; it
    raises (``Fail``) where that comparison would be an error (the routing index,
    ``cosnotify.routing``, looks events up by it)."""
    generator = _Generator([component], form, clock)
    code, _ = generator.value(component, label=False)
    head = "def _operand(ev, _U=_U):\n"
    if form is Form.ANY:
        head += "    ev = _any_root(ev)\n"
    source = "\n".join([*generator.functions, f"{head}    return {code}\n"])
    namespace = generator.namespace
    exec(compile(source, "<operand>", "exec"), namespace)  # noqa: S102 - generated, as above
    found: Callable[[Any], Any] = namespace["_operand"]
    return found


def sequence_function(component: ast.Component, form: Form,
                      clock: Clock = system_clock) -> Callable[[Any], Any]:
    """A function from an event of ``form`` to the sequence view (``runtime.sequence_view``)
    that ``x in component`` reads; it raises where that would be an error."""
    generator = _Generator([component], form, clock)
    head = "def _sequence(ev, _U=_U):\n"
    if form is Form.ANY:
        head += "    ev = _any_root(ev)\n"
    source = f"{head}    return _seq({generator.located(component)})\n"
    namespace = generator.namespace
    exec(compile(source, "<sequence>", "exec"), namespace)  # noqa: S102 - generated, as above
    found: Callable[[Any], Any] = namespace["_sequence"]
    return found


def compile_trees(trees: Sequence[ast.Expression],
                  clock: Clock = system_clock) -> tuple[Matcher, Matcher, Matcher]:
    """Match functions for structured, Any and typed events that are TRUE when any
    of ``trees`` is (a filter's constraints ORed, §2.3), sharing component lookups."""
    return (compile_form(trees, Form.STRUCTURED, clock), compile_form(trees, Form.ANY, clock),
            compile_form(trees, Form.TYPED, clock))


def compile_tree(tree: ast.Expression,
                 clock: Clock = system_clock) -> tuple[Matcher, Matcher, Matcher]:
    """Match functions for structured, Any and typed events."""
    return compile_trees([tree], clock)


def compile_text(text: str, clock: Clock = system_clock) -> tuple[Matcher, Matcher, Matcher]:
    """Parse and compile; raises ConstraintSyntaxError for invalid text."""
    return compile_tree(parse_constraint(text), clock)
