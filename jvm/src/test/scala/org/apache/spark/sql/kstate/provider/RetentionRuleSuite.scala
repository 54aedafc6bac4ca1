package org.apache.spark.sql.kstate.provider

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.kstate.provider.CheckpointFiles.Versions

/** The retention rule on file listings (the provider-level property test is in KStateStoreRetentionSuite). */
class RetentionRuleSuite extends AnyFunSuite {
  private val example = Versions((1L to 14L).toSet, Set(3L, 6L, 9L, 12L))

  test("the documented example: keep 4, snapshots 3, 6, 9, 12, changelogs 1..14") {
    val d = RetentionRule.delete(example, 4, _ => true)
    assert(d.snapshots == Set(3L, 6L) && d.changelogs == (1L to 9L).toSet)
  }

  test("an unusable base snapshot is skipped: the next older usable one is the base") {
    val d = RetentionRule.delete(example, 4, _ != 9L)
    assert(d.snapshots == Set(3L) && d.changelogs == (1L to 6L).toSet)
  }

  test("no usable snapshot at or below the oldest retained version: nothing is deleted") {
    assert(RetentionRule.delete(example, 4, s => s > 11) == Versions(Set.empty, Set.empty))
    assert(RetentionRule.delete(Versions((1L to 14L).toSet, Set.empty), 4, _ => true) == Versions(Set.empty, Set.empty))
    assert(RetentionRule.delete(Versions(Set.empty, Set.empty), 4, _ => true) == Versions(Set.empty, Set.empty))
  }

  test("a snapshot exactly at the oldest retained version is a base; minBatchesToRetain below 1 keeps 1") {
    val d = RetentionRule.delete(Versions((1L to 12L).toSet, Set(9L)), 4, _ => true)
    assert(d.changelogs == (1L to 9L).toSet && d.snapshots.isEmpty)
    val one = RetentionRule.delete(Versions((1L to 12L).toSet, Set(9L, 12L)), 0, _ => true)
    assert(one.changelogs == (1L to 12L).toSet && one.snapshots == Set(9L))
  }

  test("usable is asked newest first and only until a base is found") {
    var asked = List.empty[Long]
    RetentionRule.delete(example, 4, s => { asked ::= s; s == 6 })
    assert(asked.reverse == Seq(9L, 6L))
  }
}
