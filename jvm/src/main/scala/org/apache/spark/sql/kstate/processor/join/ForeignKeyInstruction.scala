package org.apache.spark.sql.kstate.processor.join

/**
 * What a foreign-key subscription asks of the stage that holds the right table (Kafka's
 * `SubscriptionWrapper.Instruction`, KIP-213):
 *  - [[ForeignKeyInstruction.DeleteNoPropagate]]: remove the subscription (key moved to another
 *    foreign key, whose subscription answers); no response;
 *  - [[ForeignKeyInstruction.DeleteAndPropagate]]: remove it and respond with no right value
 *    (the left row is gone, or its foreign key became null in an inner join);
 *  - [[ForeignKeyInstruction.PropagateNullIfNoMatch]]: store it and respond with the right value,
 *    or with none when there is none (the previous result must be replaced or removed);
 *  - [[ForeignKeyInstruction.PropagateOnlyIfMatch]]: store it and respond only when the right
 *    table has a value (a new left row, or an unchanged foreign key: no previous result to undo).
 */
sealed abstract class ForeignKeyInstruction(val stores: Boolean)

object ForeignKeyInstruction {
  case object DeleteNoPropagate extends ForeignKeyInstruction(false)
  case object DeleteAndPropagate extends ForeignKeyInstruction(false)
  case object PropagateNullIfNoMatch extends ForeignKeyInstruction(true)
  case object PropagateOnlyIfMatch extends ForeignKeyInstruction(true)

  /** Every instruction; its index is its code in a subscription row (TINYINT). */
  val All: IndexedSeq[ForeignKeyInstruction] =
    IndexedSeq(DeleteNoPropagate, DeleteAndPropagate, PropagateNullIfNoMatch, PropagateOnlyIfMatch)
  def code(i: ForeignKeyInstruction): Byte = All.indexOf(i).toByte
  def of(code: Byte): ForeignKeyInstruction = All(code)
}
