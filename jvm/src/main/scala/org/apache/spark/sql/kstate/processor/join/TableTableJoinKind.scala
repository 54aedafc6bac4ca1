package org.apache.spark.sql.kstate.processor.join

/**
 * Which rows a primary-key table–table join keeps (Kafka's `join`, `leftJoin`, `outerJoin`):
 * a side is "preserved" when its value makes a result row on its own (the other side absent).
 *  - [[TableTableJoinKind.Inner]]: neither side is preserved;
 *  - [[TableTableJoinKind.Left]]: the left side is;
 *  - [[TableTableJoinKind.Outer]]: both are.
 */
sealed abstract class TableTableJoinKind(val leftPreserved: Boolean, val rightPreserved: Boolean)

object TableTableJoinKind {
  case object Inner extends TableTableJoinKind(false, false)
  case object Left extends TableTableJoinKind(true, false)
  case object Outer extends TableTableJoinKind(true, true)
}
