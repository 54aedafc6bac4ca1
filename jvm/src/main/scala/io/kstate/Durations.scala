package io.kstate

import java.time.{Duration => JDuration}
import java.util.Locale

import scala.util.Try

/**
 * Parses the duration forms every kstate API accepts, to milliseconds: a number of
 * milliseconds, a `java.time.Duration`, an ISO-8601 string (`PT10S`) or a Spark interval-like
 * string (`10 seconds`, `1 minute 30 seconds`, `500ms`, `2h`). Negative values are rejected.
 */
object Durations {
  private val unitMs: Map[String, Long] = Map(
    "ms" -> 1L, "milli" -> 1L, "millis" -> 1L, "millisecond" -> 1L, "milliseconds" -> 1L,
    "s" -> 1000L, "sec" -> 1000L, "secs" -> 1000L, "second" -> 1000L, "seconds" -> 1000L,
    "m" -> 60000L, "min" -> 60000L, "mins" -> 60000L, "minute" -> 60000L, "minutes" -> 60000L,
    "h" -> 3600000L, "hour" -> 3600000L, "hours" -> 3600000L,
    "d" -> 86400000L, "day" -> 86400000L, "days" -> 86400000L,
    "w" -> 604800000L, "week" -> 604800000L, "weeks" -> 604800000L)

  private val part = """(\d+)\s*([a-z]+)""".r

  def toMillis(what: String, ms: Long): Long = {
    if (ms < 0) throw KStateErrors.invalidInterval(what, ms.toString, "it is negative")
    ms
  }

  def toMillis(what: String, d: JDuration): Long = {
    if (d == null) throw KStateErrors.invalidInterval(what, "null", "it is null")
    if (d.isNegative) throw KStateErrors.invalidInterval(what, d.toString, "it is negative")
    Try(d.toMillis).getOrElse(throw KStateErrors.invalidInterval(what, d.toString, "too large"))
  }

  def toMillis(what: String, text: String): Long = {
    if (text == null) throw KStateErrors.invalidInterval(what, "null", "it is null")
    val s = text.trim.toLowerCase(Locale.ROOT)
    if (s.isEmpty) throw KStateErrors.invalidInterval(what, text, "it is empty")
    if (s.startsWith("-")) throw KStateErrors.invalidInterval(what, text, "it is negative")
    if (s.startsWith("p")) {
      return toMillis(what, Try(JDuration.parse(s.toUpperCase(Locale.ROOT))).getOrElse(
        throw KStateErrors.invalidInterval(what, text, "it is not an ISO-8601 duration")))
    }
    if (s.forall(_.isDigit)) {
      return toMillis(what, s.toLongOption.getOrElse(
        throw KStateErrors.invalidInterval(what, text, "too large")))
    }
    val compact = s.stripPrefix("interval").trim
    val parts = part.findAllMatchIn(compact).toList
    val rebuilt = parts.map(m => m.group(1) + m.group(2)).mkString
    if (parts.isEmpty || rebuilt != compact.replaceAll("\\s+", "")) {
      throw KStateErrors.invalidInterval(what, text,
        "expected <number> <unit> pairs with units ms, s, m, h, d or w")
    }
    parts.foldLeft(0L) { (acc, m) =>
      val unit = unitMs.getOrElse(m.group(2),
        throw KStateErrors.invalidInterval(what, text, s"unknown unit '${m.group(2)}'"))
      Try(Math.addExact(acc, Math.multiplyExact(m.group(1).toLong, unit))).getOrElse(
        throw KStateErrors.invalidInterval(what, text, "too large"))
    }
  }
}
