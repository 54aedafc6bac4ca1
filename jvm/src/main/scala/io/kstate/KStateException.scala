package io.kstate

import java.util.{Map => JMap}

import scala.jdk.CollectionConverters._

import org.apache.spark.{ErrorClassesJsonReader, SparkThrowable}

/**
 * The one error type kstate raises for anything the user can fix: bad arguments, unsupported
 * plans, configuration changed on restart, a full buffer. It is a [[SparkThrowable]], as Spark's
 * own errors are:
 *  - `getCondition`: the error condition, `KSTATE_...`, or `KSTATE_....SUB_CONDITION` where one
 *    condition has several forms (e.g. `KSTATE_STATE_NOT_FOUND.NO_COMMITTED_BATCH`);
 *  - `getSqlState`: the condition's SQLSTATE;
 *  - `getMessageParameters`: the values filled into the condition's message template.
 * Conditions, SQLSTATEs and templates live in one file, `python/kstate/error_conditions.json`
 * (in the jar as `io/kstate/error-conditions.json`), read here with Spark's own reader; the
 * message is Spark's format: `[CONDITION] text SQLSTATE: xxxxx`. Python's `kstate.KStateError`
 * carries the same condition, SQLSTATE and parameters.
 *
 * Errors are made by the error hubs, nowhere else: `ArgumentErrors` for the public value types'
 * arguments, `org.apache.spark.sql.kstate.errors.KStateErrors` for everything else. It extends
 * `IllegalArgumentException` (as Spark's `SparkIllegalArgumentException` does), so existing
 * `catch` clauses keep working.
 *
 * @param condition a condition of the conditions file, or condition.sub-condition
 * @param parameters the values of the condition's message template, every one of them
 * @param cause the error that caused this one, or null
 */
final class KStateException(
    condition: String,
    parameters: Map[String, String],
    cause: Throwable
) extends IllegalArgumentException(KStateException.render(condition, parameters), cause)
    with SparkThrowable {

  override def getCondition: String = condition

  override def getSqlState: String = KStateException.conditions.getSqlState(condition)

  override def getMessageParameters: JMap[String, String] = parameters.asJava

  /**
   * The condition without its sub-condition (`KSTATE_STATE_NOT_FOUND` for
   * `KSTATE_STATE_NOT_FOUND.NO_COMMITTED_BATCH`): what kstate called the error class before it
   * had sub-conditions, and what Python's `KStateError.error_class` still is.
   */
  def errorClass: String = condition.takeWhile(_ != '.')
}

object KStateException {

  /** Where the conditions file is in the jar (build.sbt copies it from the Python package). */
  val ConditionsResource: String = "io/kstate/error-conditions.json"

  private[kstate] lazy val conditions: ErrorClassesJsonReader = {
    val url = Option(classOf[KStateException].getClassLoader.getResource(ConditionsResource))
      .getOrElse(throw new IllegalStateException(s"$ConditionsResource is not in the kstate jar"))
    new ErrorClassesJsonReader(Seq(url))
  }

  /** Spark's message format for `condition` with `parameters` filled in. */
  private def render(condition: String, parameters: Map[String, String]): String = {
    val text = conditions.getErrorMessage(condition, parameters)
    val sqlState = Option(conditions.getSqlState(condition)).fold("")(s => s" SQLSTATE: $s")
    s"[$condition] $text$sqlState"
  }
}
