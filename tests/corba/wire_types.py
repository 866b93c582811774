"""Builder for wire_client.py: Anys of data/WireTypes.idl (runs in the client process)."""

MODULES = ["WireTypes"]


def cases(CORBA, modules):
    W = modules["WireTypes"]
    point = W.Point(1, 2)
    tree = W.Node("root", [W.Node("a", []), W.Node("b", [W.Node("c", [])])])
    everything = W.Everything(
        seg=W.Segment(point, W.Point(3, 4)),
        opt=W.Choice(where=W.Point(5, 6)),
        flg=W.Flag(on=7),
        pk=W.Pick(b=8),
        tree=tree,
        hue=W.green,
        paint=W.blue,
        money=CORBA.fixed("12.50"),
        inner=CORBA.Any(CORBA.TypeCode(W.Segment), W.Segment(W.Point(9, 9), point)),
        raw=b"\x01\x02\xff",
        tag="short",
        cells=[[1, 2, 3], [4, 5, 6]],
        path=[W.Point(0, 0), W.Point(1, 1)],
        big=2**64 - 1,
        letter="z",
        ok=True,
    )
    any_of = lambda cls, value: CORBA.Any(CORBA.TypeCode(cls), value)
    return [
        ("everything", any_of(W.Everything, everything)),
        ("segment", any_of(W.Segment, W.Segment(point, point))),
        ("choice_text", any_of(W.Choice, W.Choice(text="hello"))),
        ("choice_amount", any_of(W.Choice, W.Choice(4, 2.5))),
        ("choice_default", any_of(W.Choice, W.Choice(tint=W.green))),
        ("flag_unset", any_of(W.Flag, W.Flag(False, None))),
        ("tree", any_of(W.Node, tree)),
        ("track", any_of(W.Track, [W.Point(0, 0), W.Point(1, 1)])),
        ("holding", any_of(W.Holding, W.Holding(W.blue, 10))),
        ("failure", any_of(W.Failure, W.Failure("disk", 5))),
    ]
