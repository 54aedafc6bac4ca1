package org.apache.spark.sql.kstate.state

/**
 * The buffer limits are Spark-free (they are the suppress processor's); these aliases keep their
 * old names here for the buffer's callers.
 */
package object buffer {
  type BufferLimits = org.apache.spark.sql.kstate.processor.suppress.BufferLimits
  val BufferLimits: org.apache.spark.sql.kstate.processor.suppress.BufferLimits.type =
    org.apache.spark.sql.kstate.processor.suppress.BufferLimits
  type WhenFull = org.apache.spark.sql.kstate.processor.suppress.WhenFull
  val WhenFull: org.apache.spark.sql.kstate.processor.suppress.WhenFull.type =
    org.apache.spark.sql.kstate.processor.suppress.WhenFull
}
