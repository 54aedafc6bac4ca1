package io.kstate

/**
 * The order in which a kstate operator processes the records one state partition receives in
 * one micro-batch (or, for a static DataFrame, in the whole input). Kafka Streams has a single
 * order (a task's); Spark sources differ in whether the order of their rows means anything, so
 * kstate makes it a policy, set per session (`spark.kstate.processingOrder`) and per operator
 * (`df.kstate.withProcessingOrder(...)`, Python `order=`). docs/operators.md, "Processing order".
 *
 *  - [[ProcessingOrder.Task]]: a Kafka task's order. Each input partition's records in their
 *    order, merged across input partitions by taking the partition whose next record has the
 *    smallest timestamp (ties: lower partition index). Right for an ordered log: a Kafka topic
 *    read with one Spark partition per topic-partition range, where a record's position is its
 *    offset. Records that are out of order within a partition are late, as in Kafka Streams.
 *  - [[ProcessingOrder.EventTime]]: all of the micro-batch's records by event time (null first),
 *    ties by input position (input partition, then position in it). Right for sources whose row
 *    order means nothing (files, tables, unions): how Spark packs input into a micro-batch then
 *    cannot turn a catch-up batch into late records.
 *  - [[ProcessingOrder.Auto]] (default): `Task` where every source of the operator's input is an
 *    ordered log reached without a shuffle, `EventTime` otherwise; on a static DataFrame, the
 *    DataFrame's own order (input partition, then position), so static test data is processed
 *    exactly as listed.
 */
sealed abstract class ProcessingOrder(val name: String) {
  override def toString: String = name
}

object ProcessingOrder {
  case object Auto extends ProcessingOrder("auto")
  case object Task extends ProcessingOrder("task")
  case object EventTime extends ProcessingOrder("event_time")

  val values: Seq[ProcessingOrder] = Seq(Auto, Task, EventTime)

  /** Parses a policy name (`auto`, `task`, `event_time`; case and `-`/`_` do not matter). */
  def parse(what: String, s: String): ProcessingOrder = {
    val norm = Option(s).map(_.trim.toLowerCase(java.util.Locale.ROOT).replace('-', '_')).orNull
    values.find(_.name == norm).getOrElse(throw ArgumentErrors.invalidProcessingOrder(what, String.valueOf(s)))
  }
}
