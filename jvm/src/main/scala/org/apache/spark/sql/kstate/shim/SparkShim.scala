package org.apache.spark.sql.kstate.shim

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.{Dataset => ClassicDataset, ExpressionUtils, SparkSession => ClassicSession}
import org.apache.spark.sql.types.StructType

/**
 * The Spark-version-specific calls used to build kstate DataFrames: classic (non-Connect)
 * `Dataset` and `SparkSession`, their logical plans and `ofRows`. One of the `shim/` files that
 * hold kstate's calls into Spark internals that change between Spark versions (the rest of
 * kstate uses Spark's developer API, such as Catalyst and `StateStore`, directly; see
 * docs/contributing.md, "Layering").
 */
object SparkShim {
  def classic(df: DataFrame): ClassicDataset[_] = df match {
    case c: ClassicDataset[_] => c
    case other => throw new UnsupportedOperationException(
        s"kstate needs a classic (non-Connect) DataFrame, got ${other.getClass.getName}"
      )
  }

  def logicalPlan(df: DataFrame): LogicalPlan = classic(df).logicalPlan

  /** The (unresolved) Catalyst expression of `c`, as `df`'s session converts it. */
  def expression(df: DataFrame, c: Column): Expression = session(df).expression(c)

  /** A DataFrame over `plan` in `df`'s session; analyses eagerly (errors surface here). */
  def ofRows(df: DataFrame, plan: LogicalPlan): DataFrame =
    ClassicDataset.ofRows(classic(df).sparkSession, plan)

  /** A DataFrame over `plan` in `session`; analyses eagerly. */
  def ofRows(session: ClassicSession, plan: LogicalPlan): DataFrame = ClassicDataset.ofRows(session, plan)

  /** A Column over the Catalyst expression `e`. */
  def column(e: Expression): Column = ExpressionUtils.column(e)

  def session(df: DataFrame): ClassicSession = classic(df).sparkSession

  def classic(spark: SparkSession): ClassicSession = spark match {
    case c: ClassicSession => c
    case other => throw new UnsupportedOperationException(
        s"kstate needs a classic (non-Connect) SparkSession, got ${other.getClass.getName}"
      )
  }

  /** A batch DataFrame over `rows`, which must match `schema`. */
  def dataFrameOf(session: ClassicSession, rows: RDD[InternalRow], schema: StructType): DataFrame =
    session.internalCreateDataFrame(rows, schema, isStreaming = false)
}
