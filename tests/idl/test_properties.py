"""Property tests: whatever the input, the compiler raises only IDLError (or succeeds)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from cosnotify.idl import IDLError, generate, parse_string
from tests.strategies import idl_near_misses, idl_token_soups

_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_DIR = Path(tempfile.gettempdir())


def compile_text(text: str) -> None:
    try:
        spec = parse_string(text, str(_DIR / "soup.idl"))
    except IDLError as err:
        assert err.line >= 1 and err.column >= 1 and err.message
        return
    try:
        generate(spec, "soup.idl")
    except IDLError:
        pass


class TestTokenSoup:
    """Random token sequences never crash the compiler."""

    @_SETTINGS
    @given(idl_token_soups)
    def test_soup(self, text: str) -> None:
        """Random tokens give IDLError or a valid specification, never another exception."""
        compile_text(text)

    @_SETTINGS
    @given(idl_near_misses)
    def test_near_misses(self, text: str) -> None:
        """Soup after a plausible opening reaches deeper into the grammar, still safely."""
        compile_text(text)

    def test_deep_nesting(self) -> None:
        """Absurdly nested input is an IDLError, not a RecursionError."""
        compile_text("const long C = " + "(" * 5000 + "1" + ")" * 5000 + ";")
        compile_text("typedef " + "sequence<" * 3000 + "long" + ">" * 3000 + " T;")
