"""The foreign-key join model on hand-checked sequences (KIP-213's rules)."""

from models.fk_join_model import FkJoin, Side


def fk(v):
    return v[0]


def test_inner_join_rejoins_on_both_sides_and_never_keeps_a_stale_result():
    j = FkJoin(fk, left_join=False)
    assert j.update(True, "o1", ("c1", 5), 1) == []  # no customer yet: no result
    assert j.update(False, "c1", "Ann", 2) == [("o1", (("c1", 5), "Ann"))]
    assert j.update(True, "o1", ("c2", 5), 3) == [("o1", None)]  # moved to c2 (absent): the old result goes
    assert j.update(False, "c2", "Bob", 4) == [("o1", (("c2", 5), "Bob"))]
    assert j.update(False, "c1", "Al", 5) == []  # nobody refers to c1 any more
    assert j.update(False, "c2", None, 6) == [("o1", None)]
    assert j.results == {}


def test_left_join_keeps_rows_without_match_and_deletes_deleted_rows():
    j = FkJoin(fk, left_join=True)
    assert j.update(True, "o1", ("c1", 5), 1) == [("o1", (("c1", 5), None))]
    assert j.update(True, "o2", (None, 7), 1) == [("o2", ((None, 7), None))]  # no foreign key
    assert j.update(False, "c1", "Ann", 2) == [("o1", (("c1", 5), "Ann"))]
    assert j.update(True, "o1", None, 3) == [("o1", None)]
    assert j.results == {"o2": ((None, 7), None)}


def test_versioned_sides_ignore_out_of_order_updates():
    j = FkJoin(fk, left_join=False, left=Side(versioned=True), right=Side(versioned=True))
    j.update(False, "c1", "Ann", 5)
    assert j.update(False, "c1", "old", 4) == []
    assert j.update(True, "o1", ("c1", 1), 3) == [("o1", (("c1", 1), "Ann"))]
    assert j.update(True, "o1", ("c9", 1), 2) == []  # older than o1's latest version
    assert j.update(True, "o1", None, 3) == [("o1", None)]  # equal timestamp: replaces
