"""Evaluation of IDL constant expressions (CORBA 2.6 section 3.10.2).

Strategy: an expression is evaluated against the type it must produce (the
constant's declared type, a union's discriminator type, or ``unsigned long``
for bounds and array sizes), so each literal and each named constant is
checked for the right category on the way, and the result is range-checked
for that type. Integer arithmetic is done on Python ints, and every
intermediate result must fit in 64 bits (signed or unsigned), so
``2147483647 + 1`` is fine for a ``long long`` and an overflow for a
``long``. ``/`` and ``%`` truncate toward zero, as in C; ``~`` complements
within the width of the target type (section 3.10.2: ``-(v+1)`` for signed
types, ``2**n - 1 - v`` for unsigned ones). Floating, fixed-point, character,
string, boolean and enum constants only accept what their category allows.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable

from cosnotify.idl import ast, model
from cosnotify.idl.errors import IDLError, Location

_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1
_FLOAT_MAX = {"float": 3.4028234663852886e38, "double": 1.7976931348623157e308}
_MAX_DEPTH = 500

#: Resolves a scoped name in an expression to a constant or enumerator.
Resolver = Callable[[ast.ScopedName], model.Decl]


def category(t: model.Type) -> str:
    """The constant category of a (non-alias) type, or '' if it cannot be a constant."""
    if isinstance(t, model.Primitive):
        if t.name in model.INTEGER_RANGES:
            return "integer"
        if t.name in model.FLOAT_TYPES:
            return "float"
        if t.name in ("boolean", "char", "wchar"):
            return t.name
        return ""
    if isinstance(t, model.StringT):
        return "wstring" if t.wide else "string"
    if isinstance(t, model.FixedT):
        return "fixed"
    if isinstance(t, model.Named) and isinstance(t.decl, model.Enum):
        return "enum"
    return ""


def type_name(t: model.Type) -> str:
    """How a type is named in messages."""
    t2 = model.unalias(t)
    if isinstance(t2, model.Primitive):
        return t2.name
    if isinstance(t2, model.StringT):
        kind = "wstring" if t2.wide else "string"
        return f"{kind}<{t2.bound}>" if t2.bound else kind
    if isinstance(t2, model.FixedT):
        return "fixed"
    if isinstance(t2, model.Named):
        return t2.decl.describe()
    return "a constructed type"


class Evaluator:
    """Evaluates expressions; ``resolve`` looks up names in the current scope."""

    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve
        self._depth = 0

    def evaluate(self, expr: ast.Expr, target: model.Type) -> model.ConstValue:
        """The value of ``expr`` as a constant of type ``target``."""
        t = model.unalias(target)
        cat = category(t)
        if cat == "integer":
            assert isinstance(t, model.Primitive)
            value = self._integer(expr, t.name)
            low, high = model.INTEGER_RANGES[t.name]
            if not low <= value <= high:
                raise IDLError.at(expr.loc, f"value {value} out of range for {t.name}")
            return value
        if cat == "float":
            assert isinstance(t, model.Primitive)
            fvalue = self._float(expr)
            limit = _FLOAT_MAX.get(t.name)
            if not math.isfinite(fvalue) or (limit is not None and abs(fvalue) > limit):
                raise IDLError.at(expr.loc, f"value {fvalue} out of range for {t.name}")
            return fvalue
        if cat == "fixed":
            dvalue = self._fixed(expr)
            digits = len(dvalue.as_tuple().digits)
            if digits > 31:
                raise IDLError.at(expr.loc, "fixed-point constant has more than 31 digits")
            return dvalue
        if cat in ("string", "wstring"):
            assert isinstance(t, model.StringT)
            text = self._simple(expr, cat, (str,))
            assert isinstance(text, str)
            if t.bound and len(text) > t.bound:
                raise IDLError.at(expr.loc, f"string of length {len(text)} exceeds bound {t.bound}")
            return text
        if cat in ("char", "wchar", "boolean"):
            return self._simple(expr, cat, (str, bool))
        if cat == "enum":
            assert isinstance(t, model.Named) and isinstance(t.decl, model.Enum)
            return self._enumerator(expr, t.decl)
        raise IDLError.at(expr.loc, f"{type_name(target)} cannot be the type of a constant")

    def positive_int(self, expr: ast.Expr, what: str) -> int:
        """A bound or array size: a positive ``unsigned long``."""
        value = self.evaluate(expr, model.Primitive("unsigned long"))
        assert isinstance(value, int)
        if value <= 0:
            raise IDLError.at(expr.loc, f"{what} must be positive, not {value}")
        return value

    # -- helpers ----------------------------------------------------------------

    def _named(self, ref: ast.NameRef) -> model.Decl:
        decl = self.resolve(ref.name)
        if not isinstance(decl, (model.Const, model.Enumerator)):
            raise IDLError.at(ref.loc, f"'{ref.name}' is a {decl.kind}, not a constant")
        return decl

    def _mismatch(self, loc: Location, wanted: str, found: str) -> IDLError:
        return IDLError.at(loc, f"expected {_article(wanted)} constant, found {found}")

    def _enter(self, loc: Location) -> None:
        self._depth += 1
        if self._depth > _MAX_DEPTH:
            self._depth = 0
            raise IDLError.at(loc, "constant expression nested too deeply")

    def _integer(self, expr: ast.Expr, target: str) -> int:
        self._enter(expr.loc)
        try:
            value = self._integer_inner(expr, target)
        finally:
            self._depth = max(self._depth - 1, 0)
        if not _INT64_MIN <= value <= _UINT64_MAX:
            raise IDLError.at(expr.loc, f"integer overflow in constant expression ({value})")
        return value

    def _integer_inner(self, expr: ast.Expr, target: str) -> int:
        if isinstance(expr, ast.Literal):
            if expr.kind != "integer":
                raise self._mismatch(expr.loc, "integer", f"{expr.kind} literal")
            assert isinstance(expr.value, int)
            return expr.value
        if isinstance(expr, ast.NameRef):
            decl = self._named(expr)
            if isinstance(decl, model.Const) and category(model.unalias(decl.type)) == "integer":
                assert isinstance(decl.value, int)
                return decl.value
            raise self._mismatch(expr.loc, "integer", decl.describe())
        if isinstance(expr, ast.UnaryOp):
            operand = self._integer(expr.operand, target)
            if expr.op == "-":
                return -operand
            if expr.op == "+":
                return operand
            if target.startswith("unsigned") or target == "octet":
                high = model.INTEGER_RANGES[target][1]
                return high - operand
            return -(operand + 1)
        left = self._integer(expr.left, target)
        right = self._integer(expr.right, target)
        return _int_op(expr, left, right)

    def _float(self, expr: ast.Expr) -> float:
        self._enter(expr.loc)
        try:
            if isinstance(expr, ast.Literal):
                if expr.kind not in ("float", "integer"):
                    raise self._mismatch(expr.loc, "floating-point", f"{expr.kind} literal")
                return float(expr.value)
            if isinstance(expr, ast.NameRef):
                decl = self._named(expr)
                if isinstance(decl, model.Const) and category(
                    model.unalias(decl.type)
                ) in ("float", "integer"):
                    assert isinstance(decl.value, (int, float))
                    return float(decl.value)
                raise self._mismatch(expr.loc, "floating-point", decl.describe())
            if isinstance(expr, ast.UnaryOp):
                if expr.op == "~":
                    raise IDLError.at(expr.loc, "'~' needs an integer operand")
                operand = self._float(expr.operand)
                return -operand if expr.op == "-" else operand
            left, right = self._float(expr.left), self._float(expr.right)
            if expr.op not in "+-*/":
                raise IDLError.at(expr.loc, f"'{expr.op}' needs integer operands")
            if expr.op == "/" and right == 0:
                raise IDLError.at(expr.loc, "division by zero in constant expression")
            ops = {"+": left + right, "-": left - right, "*": left * right}
            try:
                return ops[expr.op] if expr.op in ops else left / right
            except OverflowError:
                raise IDLError.at(expr.loc, "floating-point overflow") from None
        finally:
            self._depth = max(self._depth - 1, 0)

    def _fixed(self, expr: ast.Expr) -> decimal.Decimal:
        self._enter(expr.loc)
        ctx = decimal.Context(prec=62)
        try:
            if isinstance(expr, ast.Literal):
                if expr.kind not in ("fixed", "integer"):
                    raise self._mismatch(expr.loc, "fixed-point", f"{expr.kind} literal")
                assert isinstance(expr.value, (int, decimal.Decimal))
                return decimal.Decimal(expr.value)
            if isinstance(expr, ast.NameRef):
                decl = self._named(expr)
                if isinstance(decl, model.Const) and category(
                    model.unalias(decl.type)
                ) in ("fixed", "integer"):
                    assert isinstance(decl.value, (int, decimal.Decimal))
                    return decimal.Decimal(decl.value)
                raise self._mismatch(expr.loc, "fixed-point", decl.describe())
            if isinstance(expr, ast.UnaryOp):
                if expr.op == "~":
                    raise IDLError.at(expr.loc, "'~' needs an integer operand")
                operand = self._fixed(expr.operand)
                return -operand if expr.op == "-" else operand
            left, right = self._fixed(expr.left), self._fixed(expr.right)
            if expr.op not in "+-*/":
                raise IDLError.at(expr.loc, f"'{expr.op}' needs integer operands")
            if expr.op == "/" and right == 0:
                raise IDLError.at(expr.loc, "division by zero in constant expression")
            if expr.op == "+":
                return ctx.add(left, right)
            if expr.op == "-":
                return ctx.subtract(left, right)
            if expr.op == "*":
                return ctx.multiply(left, right)
            return ctx.divide(left, right)
        finally:
            self._depth = max(self._depth - 1, 0)

    def _simple(self, expr: ast.Expr, cat: str, types: tuple[type, ...]) -> model.ConstValue:
        """char, wchar, string, wstring and boolean: a literal or a named constant."""
        wanted = {"boolean": "boolean", "char": "char", "wchar": "wchar"}.get(cat, cat)
        if isinstance(expr, ast.Literal):
            if expr.kind != cat:
                raise self._mismatch(expr.loc, wanted, f"{expr.kind} literal")
            assert isinstance(expr.value, types)
            return expr.value
        if isinstance(expr, ast.NameRef):
            decl = self._named(expr)
            if isinstance(decl, model.Const) and category(model.unalias(decl.type)) == cat:
                return decl.value
            raise self._mismatch(expr.loc, wanted, decl.describe())
        raise IDLError.at(expr.loc, f"operators cannot be applied to {wanted} constants")

    def _enumerator(self, expr: ast.Expr, enum: model.Enum) -> model.Enumerator:
        if isinstance(expr, ast.NameRef):
            decl = self._named(expr)
            if isinstance(decl, model.Const) and isinstance(decl.value, model.Enumerator):
                decl = decl.value
            if isinstance(decl, model.Enumerator) and decl.enum is enum:
                return decl
            raise IDLError.at(
                expr.loc, f"expected a value of {enum.describe()}, found {decl.describe()}"
            )
        raise IDLError.at(expr.loc, f"expected a value of {enum.describe()}")


def _int_op(expr: ast.BinaryOp, a: int, b: int) -> int:
    op = expr.op
    if op in ("/", "%"):
        if b == 0:
            raise IDLError.at(expr.loc, "division by zero in constant expression")
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        return quotient if op == "/" else a - quotient * b
    if op in ("<<", ">>"):
        if not 0 <= b < 64:
            raise IDLError.at(expr.loc, f"shift count {b} out of range 0..63")
        return a << b if op == "<<" else a >> b
    results = {"|": a | b, "^": a ^ b, "&": a & b, "+": a + b, "-": a - b, "*": a * b}
    return results[op]


def _article(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"
