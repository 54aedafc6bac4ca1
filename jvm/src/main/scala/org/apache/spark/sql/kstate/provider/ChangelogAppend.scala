package org.apache.spark.sql.kstate.provider

import org.apache.spark.sql.kstate.provider.FamilyChange
import org.apache.spark.sql.kstate.engine.{Bytes, FamilyCodec, StateFile, WriteSet}

/**
 * Appends a store version's changes (family changes, then write-set entries in the order
 * given) to its changelog writer. With a working copy to count against (`countIn`), called
 * before that copy changes, it returns the change in the number of keys: dropped families'
 * keys counted, and for every change whether its key existed (resolved in batches); else 0.
 */
private[kstate] object ChangelogAppend {
  def apply(
      families: Vector[FamilyChange],
      changes: Array[WriteSet.Entry],
      w: StateFile.Writer,
      countIn: Option[WorkingCopy]
  ): Long = {
    var delta = 0L
    families.foreach {
      case FamilyChange.Created(name, id) => w.family(id, name)
      case FamilyChange.Dropped(id) =>
        // Its keys are gone: counted (drops are rare) before the working copy deletes them.
        countIn.foreach { c =>
          val p = FamilyCodec.prefixOf(id); delta -= c.count(p, Bytes.prefixEnd(p))
        }
        w.dropFamily(id)
    }
    countIn.foreach(_.resolveExistence(changes))
    val counting = countIn.isDefined
    changes.foreach { e =>
      if (e.isDelete) {
        w.delete(e.key)
        if (counting && e.existed == WriteSet.Present) delta -= 1
      } else {
        w.put(e.key, e.value)
        if (counting && e.existed != WriteSet.Present) delta += 1
      }
    }
    delta
  }

  /** The key prefixes of the families `families` drops. */
  def dropped(families: Vector[FamilyChange]): Seq[Array[Byte]] =
    families.collect { case FamilyChange.Dropped(id) => FamilyCodec.prefixOf(id) }
}
