package io.kstate

import java.time.{Duration => JDuration}
import java.util.Locale

import scala.util.Try

/**
 * Parses the duration forms every kstate API accepts, to milliseconds: a number of
 * milliseconds, a `java.time.Duration`, an ISO-8601 string (`PT10S`) or a Spark interval-like
 * string (`10 seconds`, `1 minute 30 seconds`, `500ms`, `2h`, `2000us`). Negative values are
 * rejected, and so is a sub-millisecond part (`1500us`, `PT0.0005S`, `Duration.ofNanos(1)`):
 * kstate durations are whole milliseconds, never truncated.
 */
object Durations {
  private val unitMs: Map[String, Long] = Map(
    "ms" -> 1L,
    "milli" -> 1L,
    "millis" -> 1L,
    "millisecond" -> 1L,
    "milliseconds" -> 1L,
    "s" -> 1000L,
    "sec" -> 1000L,
    "secs" -> 1000L,
    "second" -> 1000L,
    "seconds" -> 1000L,
    "m" -> 60000L,
    "min" -> 60000L,
    "mins" -> 60000L,
    "minute" -> 60000L,
    "minutes" -> 60000L,
    "h" -> 3600000L,
    "hour" -> 3600000L,
    "hours" -> 3600000L,
    "d" -> 86400000L,
    "day" -> 86400000L,
    "days" -> 86400000L,
    "w" -> 604800000L,
    "week" -> 604800000L,
    "weeks" -> 604800000L
  )

  /** Microseconds and nanoseconds, accepted only as whole milliseconds ("2000us"), in ns. */
  private val subMillisUnitNs: Map[String, Long] = Map(
    "us" -> 1000L,
    "micro" -> 1000L,
    "micros" -> 1000L,
    "microsecond" -> 1000L,
    "microseconds" -> 1000L,
    "ns" -> 1L,
    "nano" -> 1L,
    "nanos" -> 1L,
    "nanosecond" -> 1L,
    "nanoseconds" -> 1L
  )
  private val NanosPerMilli = 1000000L

  private val part = """(\d+)\s*([a-z]+)""".r

  private def subMillisecond(what: String, value: String) =
    ArgumentErrors.invalidInterval(
      what,
      value,
      "it has a sub-millisecond part; kstate durations are " +
        "whole milliseconds (event times are epoch milliseconds, as in Kafka Streams)"
    )

  def toMillis(what: String, ms: Long): Long = {
    if (ms < 0) throw ArgumentErrors.invalidInterval(what, ms.toString, "it is negative")
    ms
  }

  def toMillis(what: String, d: JDuration): Long = {
    if (d == null) throw ArgumentErrors.invalidInterval(what, "null", "it is null")
    if (d.isNegative) throw ArgumentErrors.invalidInterval(what, d.toString, "it is negative")
    if (d.getNano % NanosPerMilli != 0) throw subMillisecond(what, d.toString)
    Try(d.toMillis).getOrElse(throw ArgumentErrors.invalidInterval(what, d.toString, "too large"))
  }

  def toMillis(what: String, text: String): Long = {
    if (text == null) throw ArgumentErrors.invalidInterval(what, "null", "it is null")
    val s = text.trim.toLowerCase(Locale.ROOT)
    if (s.isEmpty) throw ArgumentErrors.invalidInterval(what, text, "it is empty")
    if (s.startsWith("-")) throw ArgumentErrors.invalidInterval(what, text, "it is negative")
    if (s.startsWith("p")) {
      return toMillis(
        what,
        Try(JDuration.parse(s.toUpperCase(Locale.ROOT))).getOrElse(
          throw ArgumentErrors.invalidInterval(what, text, "it is not an ISO-8601 duration")
        )
      )
    }
    if (s.forall(_.isDigit)) {
      return toMillis(
        what,
        s.toLongOption.getOrElse(
          throw ArgumentErrors.invalidInterval(what, text, "too large")
        )
      )
    }
    val compact = s.stripPrefix("interval").trim
    val parts = part.findAllMatchIn(compact).toList
    val rebuilt = parts.map(m => m.group(1) + m.group(2)).mkString
    if (parts.isEmpty || rebuilt != compact.replaceAll("\\s+", "")) {
      throw ArgumentErrors.invalidInterval(
        what,
        text,
        "expected <number> <unit> pairs with units ms, s, m, h, d or w"
      )
    }
    val nanos = parts.foldLeft(BigInt(0)) { (acc, m) =>
      val unitNs = unitMs.get(m.group(2)).map(_ * NanosPerMilli).orElse(subMillisUnitNs.get(m.group(2)))
        .getOrElse(throw ArgumentErrors.invalidInterval(what, text, s"unknown unit '${m.group(2)}'"))
      acc + BigInt(m.group(1)) * unitNs
    }
    if (nanos % NanosPerMilli != 0) throw subMillisecond(what, text)
    val ms = nanos / NanosPerMilli
    if (!ms.isValidLong) throw ArgumentErrors.invalidInterval(what, text, "too large")
    ms.toLong
  }
}
