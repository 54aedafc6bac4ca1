package org.apache.spark.sql.kstate.errors

import io.kstate.KStateException

import java.lang.reflect.Method

import scala.jdk.CollectionConverters._

import org.apache.spark.{ErrorClassesJsonReader, SparkThrowable}
import org.scalatest.funsuite.AnyFunSuite

/**
 * kstate's errors are Spark errors: every method of [[KStateErrors]] is called (with placeholder
 * arguments) and its error checked against the conditions file, so a template and the method
 * that fills it cannot drift apart.
 */
class KStateErrorsSuite extends AnyFunSuite {
  private val reader = new ErrorClassesJsonReader(
    Seq(getClass.getClassLoader.getResource(KStateException.ConditionsResource))
  )

  private def placeholder(t: Class[_]): AnyRef = t match {
    case c if c == classOf[String] => "x"
    case c if c == java.lang.Long.TYPE => java.lang.Long.valueOf(7L)
    case c if c == java.lang.Integer.TYPE => java.lang.Integer.valueOf(3)
    case c if c == java.lang.Boolean.TYPE => java.lang.Boolean.TRUE
    case c if classOf[Seq[_]].isAssignableFrom(c) => Seq("a", "b")
    case c if classOf[Iterable[_]].isAssignableFrom(c) => Seq("a", "b")
    case c if c == classOf[Option[_]] => Some("id-1")
    case c if c == classOf[Throwable] => new java.io.IOException("No space left on device")
    case other => fail(s"no placeholder for a parameter of type $other")
  }

  /** The methods of both hubs, with the object to call them on. */
  private val factories: Seq[(Method, AnyRef)] = Seq[AnyRef](KStateErrors, io.kstate.ArgumentErrors).flatMap { hub =>
    hub.getClass.getDeclaredMethods.toSeq
      .filter(m => java.lang.reflect.Modifier.isPublic(m.getModifiers) && m.getReturnType == classOf[KStateException])
      .map(m => (m, hub))
  }.sortBy(_._1.getName)

  private def make(f: (Method, AnyRef)): KStateException =
    f._1.invoke(f._2, f._1.getParameterTypes.map(placeholder): _*).asInstanceOf[KStateException]

  test("the hub has its factories") {
    assert(factories.size > 60, factories.map(_._1.getName))
  }

  test("every error's condition is in the conditions file, with exactly the parameters its template names") {
    for (m <- factories) withClue(s"${m._2.getClass.getSimpleName}${m._1.getName}: ") {
      val e = make(m)
      assert(reader.isValidErrorClass(e.getCondition), e.getCondition)
      assert(e.getMessageParameters.asScala.keySet === reader.getMessageParameters(e.getCondition).toSet)
    }
  }

  test("an error is a SparkThrowable in Spark's message format, its errorClass the condition without sub-condition") {
    for (m <- factories) withClue(s"${m._2.getClass.getSimpleName}${m._1.getName}: ") {
      val e = make(m)
      val t: SparkThrowable = e
      assert(e.getCondition.startsWith("KSTATE_"))
      assert(e.getSqlState != null && e.getSqlState.matches("[0-9A-Z]{5}"), e.getSqlState)
      assert(e.getMessage.startsWith(s"[${t.getCondition}] "))
      assert(e.getMessage.endsWith(s" SQLSTATE: ${e.getSqlState}"))
      assert(e.errorClass === e.getCondition.takeWhile(_ != '.'))
      assert(!e.getMessage.matches("(?s).*<[a-zA-Z0-9_-]+>.*"), "a placeholder was left in the message")
      assert(e.isInstanceOf[IllegalArgumentException])
    }
  }

  test("parameters carry the values, sub-conditions name the form") {
    val e = KStateErrors.batchNotCommitted(9L, "/cp", 0L, 4L)
    assert(e.getCondition === "KSTATE_STATE_NOT_FOUND.BATCH_NOT_COMMITTED")
    assert(e.errorClass === "KSTATE_STATE_NOT_FOUND")
    assert(e.getSqlState === "42K03")
    assert(e.getMessageParameters.asScala === Map(
      "batchId" -> "9",
      "reason" -> "is not committed (yet)",
      "checkpoint" -> "/cp",
      "first" -> "0",
      "latest" -> "4"
    ))
    assert(e.getMessage === "[KSTATE_STATE_NOT_FOUND.BATCH_NOT_COMMITTED] Cannot read kstate state: micro-batch 9 " +
      "is not committed (yet) in checkpoint /cp; its committed batches there are 0 to 4. Pass one of them as " +
      "the batch id, or none to read the latest. SQLSTATE: 42K03")
  }

  test("a spill failure keeps its cause") {
    val cause = new java.io.IOException("disk full")
    assert(KStateErrors.stateSpillFailed("s", 3L, "/tmp", cause).getCause eq cause)
  }

  test("every condition in the file has a SQLSTATE and a message; sub-conditions only under a condition") {
    val json = new com.fasterxml.jackson.databind.ObjectMapper()
      .readTree(getClass.getClassLoader.getResource(KStateException.ConditionsResource))
    val names = json.fieldNames.asScala.toSeq
    assert(names === names.sorted, "conditions in alphabetical order")
    for (name <- names) withClue(name) {
      assert(name.matches("KSTATE_[A-Z_]+"))
      val info = json.get(name)
      assert(info.get("sqlState").asText.matches("[0-9A-Z]{5}"))
      assert(info.get("message").size > 0)
      Option(info.get("subClass")).foreach { subs =>
        assert(subs.fieldNames.asScala.forall(_.matches("[A-Z_]+")))
        subs.fieldNames.asScala.foreach(s => assert(reader.isValidErrorClass(s"$name.$s")))
      }
      assert(reader.isValidErrorClass(name))
    }
  }
}
