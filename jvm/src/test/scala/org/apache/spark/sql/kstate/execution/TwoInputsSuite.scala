package org.apache.spark.sql.kstate.execution

import scala.collection.mutable
import scala.util.Random

import io.kstate.{KStateException, ProcessingOrder}
import io.kstate.testing.KStateSparkSuite

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  AttributeReference,
  AttributeSet,
  Expression,
  GenericInternalRow
}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.kstate.plans.TwoInputs
import org.apache.spark.sql.kstate.processor.MetricSet
import org.apache.spark.sql.kstate.shim.SparkShim
import org.apache.spark.sql.types._

/**
 * The two-input base: both inputs as a tagged union ([[TwoInputs]]) reach one state partition
 * per key and are processed in Kafka's task order across both sides' input partitions (lowest
 * head timestamp next, ties: left side first, then partition, then offset), each record handed
 * to its side. A probe operator records what its task sees; a step-by-step merge of the input
 * queues is the reference.
 */
class TwoInputsSuite extends KStateSparkSuite {
  import TwoInputsSuite._

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.experimental.extraStrategies = Seq(ProbeStrategy)
  }

  private val schema = StructType(Seq(
    StructField("k", StringType),
    StructField("ts", LongType),
    StructField("v", StringType)
  ))

  private def frame(rows: Seq[(String, Long, String)], partitions: Int) = {
    val rdd = spark.sparkContext.parallelize(rows.map { case (k, t, v) => Row(k, t, v) }, partitions)
    spark.createDataFrame(rdd, schema)
  }

  private def attr(df: DataFrame, name: String): Attribute =
    df.queryExecution.analyzed.output.find(_.name == name).get

  /** What the probe saw, per state partition, in processing order: (side, key, ts, value). */
  private def probe(left: Seq[(String, Long, String)], nl: Int, right: Seq[(String, Long, String)], nr: Int) = {
    val (l, r) = (frame(left, nl), frame(right, nr))
    val env = TwoInputs(
      SparkShim.logicalPlan(l),
      attr(l, "k"),
      attr(l, "ts"),
      SparkShim.logicalPlan(r),
      attr(r, "k"),
      attr(r, "ts")
    )
    val out = SparkShim.ofRows(l, MergeProbe(env.key, env.timestamp, env.plan))
    out.rdd.mapPartitionsWithIndex((p, rows) =>
      rows.map(r => (p, (r.getByte(0), r.getString(1), r.getLong(2), r.getString(3))))
    )
      .collect().groupBy(_._1).map { case (p, rs) => p -> rs.map(_._2).toSeq }
  }

  /** Kafka's PartitionGroup over the queues (left's first), restricted to `keys`. */
  private def reference(queues: Seq[Seq[(Byte, String, Long, String)]], keys: Set[String]) = {
    val qs = queues.map(q => mutable.Queue(q.filter(r => keys(r._2)): _*))
    val partitionTime = Array.fill(qs.length)(Long.MinValue)
    val out = mutable.ArrayBuffer.empty[(Byte, String, Long, String)]
    while (qs.exists(_.nonEmpty)) {
      // the head's timestamp as the queue sees it: no lower than what the queue already passed
      val heads = qs.indices.filter(qs(_).nonEmpty).map(i => (math.max(partitionTime(i), qs(i).head._3), i))
      val (_, i) = heads.min
      val r = qs(i).dequeue()
      partitionTime(i) = math.max(partitionTime(i), r._3)
      out += r
    }
    out.toSeq
  }

  private def slices[T](rows: Seq[T], n: Int): Seq[Seq[T]] =
    (0 until n).map(i => rows.slice((i.toLong * rows.length / n).toInt, ((i + 1).toLong * rows.length / n).toInt))

  test("both sides meet per key and are processed in Kafka task order across both inputs") {
    (1 to 6).foreach { seed =>
      val rnd = new Random(seed)
      def gen(side: String, n: Int) = (0 until n).map { i =>
        (s"k${rnd.nextInt(5)}", rnd.nextInt(40).toLong, s"$side$i")
      }
      val (left, right) = (gen("l", 30 + rnd.nextInt(30)), gen("r", 30 + rnd.nextInt(30)))
      val (nl, nr) = (1 + rnd.nextInt(3), 1 + rnd.nextInt(3))
      val seen = probe(left, nl, right, nr)
      val queues = slices(left.map(r => (TwoInputs.Left, r._1, r._2, r._3)), nl) ++
        slices(right.map(r => (TwoInputs.Right, r._1, r._2, r._3)), nr)
      assert(seen.values.map(_.length).sum === left.length + right.length, s"seed $seed: every record seen once")
      seen.foreach { case (p, got) =>
        val keys = got.map(_._2).toSet
        assert(seen.forall { case (q, o) => q == p || o.forall(r => !keys(r._2)) }, "a key in one state partition")
        assert(got === reference(queues, keys), s"seed $seed, state partition $p")
      }
    }
  }

  test("on equal timestamps the left side comes first, then each side's partitions and offsets") {
    val seen = probe(Seq(("a", 5L, "l0"), ("a", 5L, "l1")), 1, Seq(("a", 5L, "r0"), ("a", 1L, "r1")), 1)
    assert(seen.values.flatten.map(_._4).toSeq === Seq("l0", "l1", "r0", "r1"))
  }

  test("each side's row reaches its own method with its own columns") {
    val seen = probe(Seq(("a", 1L, "left")), 1, Seq(("a", 2L, "right")), 1)
    assert(seen.values.flatten.toSeq === Seq((TwoInputs.Left, "a", 1L, "left"), (TwoInputs.Right, "a", 2L, "right")))
  }

  test("KSTATE_MISMATCHED_INPUTS: different key or timestamp types, when the plan is built") {
    val l = frame(Seq(("a", 1L, "x")), 1)
    val r = frame(Seq(("a", 1L, "x")), 1).selectExpr("cast(k as binary) as k", "cast(ts as timestamp) as ts", "v")
    val lp = SparkShim.logicalPlan(l)
    val rp = SparkShim.logicalPlan(r)
    val keys = intercept[KStateException](TwoInputs(lp, attr(l, "k"), attr(l, "ts"), rp, attr(r, "k"), attr(l, "ts")))
    assert(keys.errorClass === "KSTATE_MISMATCHED_INPUTS" && keys.getMessage.contains("key"))
    val times = intercept[KStateException](TwoInputs(lp, attr(l, "k"), attr(l, "ts"), lp, attr(l, "k"), attr(r, "ts")))
    assert(times.errorClass === "KSTATE_MISMATCHED_INPUTS" && times.getMessage.contains("TIMESTAMP"))
  }
}

object TwoInputsSuite {
  object ProbeMetrics extends MetricSet

  /** Test-only two-input operator: emits (side, key, ts, value) of each record as its task sees it. */
  case class MergeProbe(
      key: Expression,
      timestamp: Expression,
      child: LogicalPlan,
      output: Seq[Attribute] = Seq(
        AttributeReference("side", ByteType)(),
        AttributeReference("key", StringType)(),
        AttributeReference("ts", LongType)(),
        AttributeReference("value", StringType)()
      )
  ) extends UnaryNode {
    override def producedAttributes: AttributeSet = outputSet
    override protected def withNewChildInternal(c: LogicalPlan): MergeProbe = copy(child = c)
  }

  object ProbeStrategy extends SparkStrategy {
    override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
      case p: MergeProbe => MergeProbeExec(p.key, p.timestamp, p.output, InputPositionExec(planLater(p.child))) :: Nil
      case _ => Nil
    }
  }

  case class MergeProbeExec(key: Expression, timestamp: Expression, output: Seq[Attribute], child: SparkPlan)
      extends KStateStatefulExec {
    override def operatorName: String = "merge-probe"
    override def fingerprint: Map[String, String] = Map.empty
    override def partitionBy: Seq[Expression] = Seq(key)
    override def providerClass: String = "io.kstate.KStateStoreProvider"
    override def followWatermark: Boolean = false
    override def processingOrder: ProcessingOrder = ProcessingOrder.Task
    override def stateInfo: Option[StatefulOperatorStateInfo] = None
    override def shortName: String = "kstate_merge_probe"
    override def storeCapabilities: Set[StoreCapability] = Set.empty
    override protected def stateKeySchema: StructType = StructType(Seq(StructField("k", StringType)))
    override protected def stateValueSchema: StructType = StructType(Seq(StructField("v", LongType)))
    override protected def metricSet: MetricSet = ProbeMetrics

    override protected def newTask(store: Option[StateStore]): KStateTask = new TwoInputTask(child.output) {
      private def record(side: Byte, row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit =
        emit(new GenericInternalRow(Array[Any](side, row.getUTF8String(0).copy(), ts, row.getUTF8String(2).copy())))
      override protected def processLeft(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit =
        record(TwoInputs.Left, row, ts, emit)
      override protected def processRight(row: InternalRow, ts: Long, emit: InternalRow => Unit): Unit =
        record(TwoInputs.Right, row, ts, emit)
      override def advanceStreamTime(t: Long): Unit = ()
      override def finish(): Unit = ()
      override def metrics: KStateTask.Metrics = KStateTask.Metrics(Map.empty, 0L, 0L, 0L)
    }

    override protected def withNewChildInternal(c: SparkPlan): MergeProbeExec = copy(child = c)
  }
}
