package org.apache.spark.sql.kstate.processor.join

/**
 * A response from the stage that holds the right table to the stage partitioned by the left key
 * (Kafka's `SubscriptionResponseWrapper` with its record key and timestamp): the subscribed left
 * value and its version (from the subscription that produced the response) and the right value
 * it joins with (null: none).
 */
final case class ForeignKeyResponse[K, V, VO](key: K, leftValue: V, foreignValue: VO, version: Long, timestamp: Long)
