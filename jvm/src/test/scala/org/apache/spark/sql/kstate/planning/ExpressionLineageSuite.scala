package org.apache.spark.sql.kstate.planning

import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{array, col, concat, explode, expr, rand, upper}
import org.apache.spark.sql.kstate.shim.SparkShim

/** Following a key's columns back through the analysed plan to non-deterministic definitions. */
class ExpressionLineageSuite extends KStateSparkSuite {
  private def base: DataFrame = spark.range(3).toDF("id").withColumn("k", col("id").cast("string"))

  /** The dependency of `df.select(c)`'s single expression, through its analysed plan. */
  private def dependency(df: DataFrame, c: org.apache.spark.sql.Column) = {
    val plan = SparkShim.logicalPlan(df.select(c))
    ExpressionLineage.nonDeterministicDependency(plan.expressions.head, plan)
  }

  test("a column computed with uuid() or rand() upstream is found, by name, also through other columns") {
    assert(dependency(base.withColumn("rk", expr("uuid()")), col("rk")).map(_.column) === Some("rk"))
    val twoSteps = base.withColumn("r", rand()).withColumn("rk", concat(col("k"), col("r").cast("string")))
    val d = dependency(twoSteps, col("rk"))
    assert(d.map(_.column) === Some("r") && d.exists(!_.expr.deterministic))
    assert(dependency(base.withColumn("rk", rand()).select(col("rk").as("x")), col("x")).map(_.column) === Some("rk"))
  }

  test("a generator's output is followed to the generator") {
    val exploded = base.select(col("k"), explode(array(rand(), rand())).as("e"))
    assert(dependency(exploded, col("e")).map(_.column) === Some("e"))
  }

  test("deterministic lineage and unread non-deterministic columns pass") {
    val df = base.withColumn("uk", upper(col("k"))).withColumn("noise", rand())
    assert(dependency(df, col("uk")) === None)
    assert(dependency(df, col("id")) === None)
  }
}
