"""Values of user IDL types, compiled by our compiler, round-trip through CORBA.Any and CDR."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cosnotify.idl import compile_file
from cosnotify.orb import CORBA, cdr, validate
from cosnotify.orb.cdr_core import Codec
from cosnotify.stubs import CosNotification as N
from tests.idl.helpers import imported

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    outdir = tmp_path_factory.mktemp("shapes")
    # Only the main file is generated (as omniidl does): compile the included one too.
    compile_file(DATA / "inc" / "geometry_base.idl", outdir)
    compile_file(DATA / "shapes.idl", outdir, include_dirs=[DATA / "inc"])
    with imported(outdir, "GeometryBase", "Shapes") as (_, module):
        yield module


def samples(S: ModuleType) -> list[tuple[Any, Any]]:
    point = S.Point(3, -4)
    event = N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "e"), []),
        [N.Property("p", CORBA.Any(S._tc_Point, point))], CORBA.Any(CORBA.TC_long, 1))
    drawing = S.Drawing("title", [point, S.Point(1, 1)], S.Fill(gradient_origin=point),
                        [[1, 2, 3], [4, 5, 6]], event)
    tree = S.Tree("root", [S.Tree("a", []), S.Tree("b", [S.Tree("c", [])])])
    return [
        (S._tc_Point, point),
        (S._tc_Polygon, [point] * 16),
        (S._tc_Matrix, [[0, -1, 2], [3, 4, 2**31 - 1]]),
        (S._tc_Fill, S.Fill(S.red, S.blue)),
        (S._tc_Fill, S.Fill(pattern="stripes")),
        (S._tc_Fill, S.Fill(S.white, "dots")),       # default arm through another label
        (S._tc_Flag, S.Flag(count=7)),
        (S._tc_Flag, S.Flag(False, None)),           # implicit default: no member
        (S._tc_Colour, S.black),
        (S._tc_Drawing, drawing),
        (S._tc_Tree, tree),
        (S._tc_TooManyPoints, S.TooManyPoints(16, "too many")),
        (S.Canvas._tc_Layers, [S.Canvas.Layer("top", 1), S.Canvas.Layer("base", 0)]),
    ]


class TestAnyRoundTrip:
    @pytest.mark.parametrize("little", [True, False], ids=["little-endian", "big-endian"])
    def test_every_kind_round_trips(self, shapes: ModuleType, little: bool) -> None:
        """struct, bounded sequence, array, unions (default and implicit), enum, nested
        struct holding a StructuredEvent, a recursive struct and an exception survive
        Any -> CDR -> Any with equal TypeCodes and values, in generated classes."""
        codec = Codec(little_endian=little)
        for typecode, value in samples(shapes):
            validate.check(typecode, value)
            wrapped = CORBA.Any(typecode, value)
            data = cdr.encode(CORBA.TC_any, wrapped, codec)
            back = cdr.decode(CORBA.TC_any, data, codec)
            assert back.typecode().equal(typecode), typecode
            assert back == wrapped, typecode
            assert type(back.value()) is type(value)

    def test_bounds_are_enforced(self, shapes: ModuleType) -> None:
        """A polygon longer than its bound is refused with BAD_PARAM naming the path."""
        with pytest.raises(CORBA.BAD_PARAM) as info:
            cdr.encode(shapes._tc_Polygon, [shapes.Point(0, 0)] * 17, Codec())
        assert "17" in str(info.value) or "16" in str(info.value)

    def test_constants_and_interfaces(self, shapes: ModuleType) -> None:
        """Constants evaluate; Canvas inherits operations from its two bases."""
        assert shapes.MAX_POINTS == 16 and shapes.MASK == 0xFFFF and shapes.HALF == 0.5
        operations = shapes.Canvas._NP_operations
        assert {"area", "_get_colour", "_set_colour", "repaint", "draw"} <= set(operations)
        assert operations["repaint"].oneway
