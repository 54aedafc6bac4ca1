package org.apache.spark.sql.kstate.processor.table

/** Shorthands of the table unit suites: Long values, tombstones and changes of String keys. */
object TableFixtures {
  def L(v: Long): java.lang.Long = java.lang.Long.valueOf(v)
  val Tomb: java.lang.Long = null
  type C = TableChange[String, java.lang.Long]
  def C(k: String, n: java.lang.Long, o: java.lang.Long, ts: Long, latest: Boolean = true): C =
    TableChange(k, n, o, ts, latest)
}
