"""The table source model against the KIP-914 / docs/tables.md examples (the model itself checked)."""

from models.table_model import Change, TableModel, filter_change, map_change, run_table

KIP914_FILTER = [("a", "v1", 1), ("a", "x", 2), ("a", "y", 4), ("a", "v2", 3)]


def _starts_with_v(k, v, ts):
    return v.startswith("v")


def test_kip914_filter_example_unversioned_drops_the_duplicate_tombstone() -> None:
    out = run_table(KIP914_FILTER, None, lambda c: filter_change(c, _starts_with_v, versioned=False))
    assert [(c.new, c.ts) for c in out] == [("v1", 1), (None, 2), ("v2", 3)]


def test_kip914_filter_example_versioned_keeps_it() -> None:
    out = run_table(KIP914_FILTER, (60, 60), lambda c: filter_change(c, _starts_with_v, versioned=True))
    assert [(c.new, c.ts) for c in out] == [("v1", 1), (None, 2), (None, 4), ("v2", 3)]
    assert [c.latest for c in out] == [True, True, True, False]


def test_versioned_grace_drops_updates_older_than_stream_time_minus_grace() -> None:
    # docs/tables.md: VersionedTable(60, grace=5), a@100, a@90, a@96, b@94 pass on a@100, a@96
    out = run_table([("a", "p", 100), ("a", "q", 90), ("a", "r", 96), ("b", "s", 94)], (60, 5))
    assert [(c.key, c.new, c.ts, c.latest) for c in out] == [("a", "p", 100, True), ("a", "r", 96, False)]


def test_old_value_is_the_latest_and_a_tombstone_is_a_version() -> None:
    # docs D3: c:6@33, c:null@33, c:3@19, c:7@26 (retention = grace = 15): the key stays deleted
    out = run_table([("c", 6, 33), ("c", None, 33), ("c", 3, 19), ("c", 7, 26)], (15, 15))
    assert out == [
        Change("c", 6, None, 33),
        Change("c", None, 6, 33),
        Change("c", 3, None, 19, False),
        Change("c", 7, None, 26, False),
    ]


def test_unversioned_passes_every_update_on_and_drops_null_keys_and_timestamps() -> None:
    m = TableModel()
    assert m.process(None, "p", 1) is None and m.process("a", "q", None) is None
    assert m.process("a", "p", 100) == Change("a", "p", None, 100)
    assert m.process("a", "q", 1) == Change("a", "q", "p", 1)
    assert m.process("a", None, 2) == Change("a", None, "q", 2)
    assert m.dropped == 2


def test_map_values_keeps_tombstones_and_maps_old_values() -> None:
    out = run_table(
        [("a", "p", 1), ("a", None, 2), ("a", "q", 3)], None, lambda c: map_change(c, lambda k, v, ts: v.upper())
    )
    assert [(c.new, c.old) for c in out] == [("P", None), (None, "P"), ("Q", None)]
