package org.apache.spark.sql.kstate.plans

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, CreateStruct, Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, Union}
import org.apache.spark.sql.types.{ByteType, StructType}

/**
 * The two inputs of a two-input kstate operator (stream–table and table–table joins) as ONE
 * input: a tagged union. Each side is projected to the same five columns and the two are
 * unioned:
 * {{{
 *   __kstate_side   TINYINT    0 = left, 1 = right
 *   __kstate_key    <key type> the side's key (both sides' key types must be equal)
 *   __kstate_ts     <ts type>  the side's event time (both sides' types must be equal)
 *   __kstate_left   STRUCT     the left row (null on right rows)
 *   __kstate_right  STRUCT     the right row (null on left rows)
 * }}}
 * and the operator is an ordinary unary kstate exec partitioned by `__kstate_key`.
 *
 * Why a tagged union and not a binary exec: everything a kstate operator needs from its input
 * then holds for two inputs unchanged. One shuffle co-partitions both sides by key (equal keys
 * of either side meet in one state partition, a Kafka task), each side's rows of an input
 * partition are a queue of their own (the left side's first: Spark may union two inputs that are
 * already partitioned alike partition by partition, so the operator's strategy case puts a
 * [[org.apache.spark.sql.kstate.execution.SidePositionsExec]] over the input positions), so
 * every row keeps its input position within its side, and
 * [[org.apache.spark.sql.kstate.execution.InputOrder]] puts the rows of both sides in one
 * processing order: in Kafka task order, the record whose partition has the lowest head
 * timestamp next (Kafka's `PartitionGroup` rule), as for any operator with several input
 * partitions. Ties are broken by input position: the left side's partitions come first in the
 * union, so on equal timestamps a left record is processed before a right one, and records of
 * one side by their partition, then offset. Deterministic on replay. Ordered-log detection,
 * the external sort, spilling, state, metrics and restart checks are the unary machinery's.
 * The cost is a wider row (the other side's struct is a null field).
 *
 * The operator's task reads a row's side and hands the side's struct to its processor
 * ([[org.apache.spark.sql.kstate.execution.TwoInputTask]]).
 */
object TwoInputs {
  val SideColumn = "__kstate_side"
  val KeyColumn = "__kstate_key"
  val TimestampColumn = "__kstate_ts"
  val LeftColumn = "__kstate_left"
  val RightColumn = "__kstate_right"

  val Left: Byte = 0
  val Right: Byte = 1

  /** The envelope plan and its columns. */
  final case class Envelope(plan: LogicalPlan, leftSchema: StructType, rightSchema: StructType) {
    private def column(name: String): Attribute = plan.output.find(_.name == name).get
    def side: Attribute = column(SideColumn)
    def key: Attribute = column(KeyColumn)
    def timestamp: Attribute = column(TimestampColumn)
    def left: Attribute = column(LeftColumn)
    def right: Attribute = column(RightColumn)
  }

  /**
   * The tagged union of `left` and `right`, keyed and timed by the given expressions (resolved
   * over each side's output). Key types and timestamp types must be equal on both sides:
   * `KSTATE_MISMATCHED_INPUTS` otherwise, when the DataFrame is built.
   */
  def apply(
      left: LogicalPlan,
      leftKey: Expression,
      leftTs: Expression,
      right: LogicalPlan,
      rightKey: Expression,
      rightTs: Expression
  ): Envelope = {
    if (leftKey.dataType != rightKey.dataType) {
      throw KStateErrors.mismatchedInputs("key", leftKey.dataType.sql, rightKey.dataType.sql)
    }
    if (leftTs.dataType != rightTs.dataType) {
      throw KStateErrors.mismatchedInputs("timestamp", leftTs.dataType.sql, rightTs.dataType.sql)
    }
    val leftStruct = CreateStruct(left.output)
    val rightStruct = CreateStruct(right.output)
    def side(
        tag: Byte,
        plan: LogicalPlan,
        key: Expression,
        ts: Expression,
        l: Expression,
        r: Expression
    ): LogicalPlan = Project(
      Seq(
        Alias(Literal(tag, ByteType), SideColumn)(),
        Alias(key, KeyColumn)(),
        Alias(ts, TimestampColumn)(),
        Alias(l, LeftColumn)(),
        Alias(r, RightColumn)()
      ),
      plan
    )
    val union = Union(Seq(
      side(Left, left, leftKey, leftTs, leftStruct, Literal(null, rightStruct.dataType)),
      side(Right, right, rightKey, rightTs, Literal(null, leftStruct.dataType), rightStruct)
    ))
    Envelope(union, leftStruct.dataType, rightStruct.dataType)
  }
}
