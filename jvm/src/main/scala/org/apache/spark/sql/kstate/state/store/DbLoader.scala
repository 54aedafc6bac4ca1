package org.apache.spark.sql.kstate.state.store

import org.rocksdb.WriteBatch

/**
 * Applies the records of a state file to a local database in bounded write batches, collecting
 * column family records to apply to the registry once the file is verified.
 */
private[kstate] final class DbLoader(db: LocalDb) extends StateFile.Visitor {
  private var batch = new WriteBatch()
  private var pending = 0
  private var families = Vector.empty[Either[Short, (String, Short)]]

  override def put(key: Array[Byte], value: Array[Byte]): Unit = {
    batch.put(key, value); bump()
  }

  override def delete(key: Array[Byte]): Unit = {
    batch.delete(key); bump()
  }

  override def family(cf: Short, name: String): Unit = families :+= Right(name -> cf)

  override def dropFamily(cf: Short): Unit = {
    val p = FamilyCodec.prefixOf(cf)
    batch.deleteRange(p, Bytes.prefixEnd(p).getOrElse(Array[Byte](-1, -1, -1)))
    families :+= Left(cf)
    bump()
  }

  private def bump(): Unit = {
    pending += 1
    if (pending >= 8192) flush()
  }

  def flush(): Unit = {
    val b = batch
    batch = new WriteBatch()
    pending = 0
    try db.writeBatch(b) finally b.close()
  }

  /** Releases the pending batch without writing it (after a failed read). */
  def discard(): Unit = batch.close()

  def applyFamilies(registry: FamilyRegistry): FamilyRegistry = families.foldLeft(registry) {
    case (r, Left(id)) => r.dropId(id)
    case (r, Right((name, id))) => r.restored(name, id)
  }
}
