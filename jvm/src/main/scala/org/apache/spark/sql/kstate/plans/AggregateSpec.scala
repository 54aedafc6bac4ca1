package org.apache.spark.sql.kstate.plans

import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, AttributeSet, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression,
  Count,
  DeclarativeAggregate,
  Max,
  Min,
  Sum
}
import org.apache.spark.sql.types.{AtomicType, DataType, DoubleType, FloatType, IntegralType, StructField, StructType}

/**
 * Aggregate columns of a kstate operator, taken apart into what a per-group buffer needs:
 *  - `bufferAttributes`: the buffer row's fields (all aggregate functions' buffers, in order);
 *  - `initialValues`: a new group's buffer;
 *  - `updateExpressions`: the buffer after one more input row, over `bufferAttributes` followed
 *    by the child's output;
 *  - `mergeExpressions`: two buffers combined (merging session windows), over `bufferAttributes`
 *    followed by `inputBufferAttributes` (the other buffer's fields);
 *  - `results`: the output columns (name, expression over `bufferAttributes`);
 *  - `orderInsensitive`: every function's result is the same whatever the order and grouping in
 *    which its input rows were added and buffers merged (`count`; `sum` of integers; `min` and
 *    `max` of values other than floating point, whose -0.0 and 0.0 compare equal but differ).
 *    A floating-point or decimal sum is not (rounding, and a decimal's overflow to null, depend
 *    on the order), nor `avg` (a floating-point sum), nor `first`, `last` or `collect_list`.
 * Only declarative aggregates (Spark's built-in count, sum, min, max, avg, first, last, ...)
 * can be taken apart this way; DISTINCT and FILTER are not supported.
 */
case class AggregateSpec(
    bufferAttributes: Seq[AttributeReference],
    initialValues: Seq[Expression],
    updateExpressions: Seq[Expression],
    inputBufferAttributes: Seq[AttributeReference],
    mergeExpressions: Seq[Expression],
    results: Seq[(String, Expression)],
    orderInsensitive: Boolean
) {

  def bufferSchema: StructType = StructType(bufferAttributes.map(a => StructField(a.name, a.dataType, a.nullable)))
  def resultTypes: Seq[DataType] = results.map(_._2.dataType)

  /** Recorded in the checkpoint: the buffer layout and the result columns. */
  def describe: String =
    s"buffer=${bufferSchema.catalogString};results=${results.map { case (n, e) =>
        s"$n:${e.dataType.catalogString}"
      }.mkString(",")}"
}

object AggregateSpec {

  /** `aggregates`: the resolved aggregate columns (as in `df.groupBy().agg(...)`). */
  def of(aggregates: Seq[NamedExpression]): AggregateSpec = {
    val calls = aggregates.flatMap(_.collect { case ae: AggregateExpression => ae })
    calls.foreach { ae =>
      if (ae.isDistinct) throw KStateErrors.unsupportedAggregate(ae.sql, "DISTINCT aggregates are not supported")
      if (ae.filter.isDefined) throw KStateErrors.unsupportedAggregate(ae.sql, "FILTER clauses are not supported")
      ae.aggregateFunction match {
        case _: DeclarativeAggregate =>
        case f => throw KStateErrors.unsupportedAggregate(
            ae.sql,
            s"${f.prettyName} keeps an opaque buffer (an imperative or typed aggregate), which kstate cannot store"
          )
      }
    }
    val functions = calls.map(_.aggregateFunction.asInstanceOf[DeclarativeAggregate]).distinct
    val buffer = functions.flatMap(_.aggBufferAttributes)
    val results = aggregates.map { ne =>
      val e = ne.transformUp { case ae: AggregateExpression =>
        ae.aggregateFunction.asInstanceOf[DeclarativeAggregate].evaluateExpression
      }
      val expr = e match {
        case n: NamedExpression => stripAlias(n)
        case other => other
      }
      val stray = expr.references -- AttributeSet(buffer)
      if (stray.nonEmpty) {
        throw KStateErrors.unsupportedAggregate(
          ne.sql,
          s"${stray.map(_.name).mkString(", ")} is not inside an aggregate function"
        )
      }
      ne.name -> expr
    }
    AggregateSpec(
      buffer,
      functions.flatMap(_.initialValues),
      functions.flatMap(_.updateExpressions),
      functions.flatMap(_.inputAggBufferAttributes),
      functions.flatMap(_.mergeExpressions),
      results,
      functions.forall(isOrderInsensitive)
    )
  }

  private def isOrderInsensitive(f: DeclarativeAggregate): Boolean = {
    def exact(t: DataType): Boolean = t match {
      case _: FloatType | _: DoubleType => false
      case _: AtomicType => true
      case _ => false
    }
    f match {
      case _: Count => true
      case s: Sum => s.child.dataType.isInstanceOf[IntegralType]
      case m: Min => exact(m.child.dataType)
      case m: Max => exact(m.child.dataType)
      case _ => false
    }
  }

  private def stripAlias(e: NamedExpression): Expression = e match {
    case a: org.apache.spark.sql.catalyst.expressions.Alias => a.child
    case other => other
  }
}
