package org.apache.spark.sql.kstate.connect

import java.lang.reflect.{Constructor, InvocationTargetException, Method, Modifier}

import scala.util.Try

import io.kstate.KStateErrors

import org.apache.spark.sql.connect.planner.SparkConnectPlanner
import org.apache.spark.sql.kstate.connect.KStateCall._
import org.apache.spark.sql.kstate.shim.ConnectPlannerShim

/**
 * Makes a [[KStateCall.Call]] on the server as py4j makes the same call for a classic session:
 * the method or constructor of that name whose parameters take the arguments, found by
 * reflection, so that a Connect DataFrame goes through the very `io.kstate` methods (and their
 * argument checks) a classic one does.
 *
 * Arguments: a column is the planner's expression as a `Column`, a relation the planner's plan
 * as a DataFrame of the session, a number a `Long` (or `Int`, `Double`, `Some(Long)` where the
 * parameter wants one), a null `null` (`None` for an `Option`), a list a `Seq`.
 *
 * Only kstate's public API can be called: static methods and constructors of `io.kstate.*`
 * classes and `java.time.Duration`, and methods that `io.kstate.*` classes declare, of their
 * values (not `Object`'s `wait` or `getClass`). Anything else is `KSTATE_CONNECT_INVALID_CALL`.
 */
private[connect] final class CallInvoker(planner: SparkConnectPlanner) {

  def eval(value: Value): Any = value match {
    case ColumnExpr(bytes) => ConnectPlannerShim.column(planner, bytes)
    case Text(s) => s
    case Number(n) => n
    case Null => null
    case Result(call) => invoke(call)
    case Relation(bytes) => ConnectPlannerShim.dataFrame(planner, bytes)
    case Items(values) => values.map(eval).toList
    case Session => ConnectPlannerShim.session(planner)
  }

  def invoke(call: Call): Any = {
    val args = call.args.map(eval)
    call.target match {
      case None => invokeStatic(call.method, args)
      case Some(t) =>
        val target = eval(t)
        if (target == null || !CallInvoker.isKState(target.getClass.getName)) {
          throw KStateErrors.connectInvalidCall(
            s"${call.method} called on ${Option(target).map(_.getClass.getName).orNull}, not a kstate value")
        }
        val methods = target.getClass.getMethods.toSeq.filter(m =>
          m.getName == call.method && !Modifier.isStatic(m.getModifiers) && CallInvoker.isKState(m.getDeclaringClass.getName))
        run(call.method, methods, args)((m, a) => m.invoke(target, a: _*))
    }
  }

  private def invokeStatic(name: String, args: Seq[Any]): Any = {
    if (!CallInvoker.isStaticAllowed(name)) throw KStateErrors.connectInvalidCall(s"$name is not kstate's API")
    load(name) match {
      case Some(cls) => run(name, cls.getConstructors.toSeq, args)((c, a) => c.newInstance(a: _*))
      case None =>
        val dot = name.lastIndexOf('.')
        val cls = load(name.substring(0, dot)).getOrElse(
          throw KStateErrors.connectInvalidCall(s"no class ${name.substring(0, dot)} on the server"))
        val method = name.substring(dot + 1)
        val methods = cls.getMethods.toSeq.filter(m => m.getName == method && Modifier.isStatic(m.getModifiers))
        run(name, methods, args)((m, a) => m.invoke(null, a: _*))
    }
  }

  private def load(name: String): Option[Class[_]] = Try(Class.forName(name, true, getClass.getClassLoader)).toOption

  /**
   * Calls the one of `candidates` whose parameters take `args`; of several, the one taking the
   * most nulls as `Option`s (`readTable(..., asOf: Option[Long])`, not `readTable(..., asOf:
   * Instant)`), then the first in a fixed order (overloads that differ only in the type of a null
   * argument, such as `join`'s `grace` as a `String` or a `Duration`, treat it alike).
   */
  private def run[M <: java.lang.reflect.Executable](name: String, candidates: Seq[M], args: Seq[Any])(
      call: (M, Seq[AnyRef]) => Any): Any = {
    def nullsNotOptions(m: M): Int =
      m.getParameterTypes.toSeq.zip(args).count { case (p, a) => a == null && p != classOf[Option[_]] }
    val ordered = candidates.filter(_.getParameterCount == args.size).sortBy(m => (nullsNotOptions(m), m.toGenericString))
    val chosen = ordered.iterator.map(m => m -> converted(m.getParameterTypes.toSeq, args)).collectFirst {
      case (m, Some(converted)) => m -> converted
    }
    chosen match {
      case Some((m, converted)) =>
        try call(m, converted) catch { case e: InvocationTargetException if e.getCause != null => throw e.getCause }
      case None =>
        throw KStateErrors.connectInvalidCall(
          s"no $name taking (${args.map(a => Option(a).map(_.getClass.getSimpleName).getOrElse("null")).mkString(", ")})")
    }
  }

  private def converted(params: Seq[Class[_]], args: Seq[Any]): Option[Seq[AnyRef]] = {
    val out = params.zip(args).map { case (p, a) => CallInvoker.convert(a, p) }
    if (out.forall(_.isDefined)) Some(out.map(_.get)) else None
  }
}

private[connect] object CallInvoker {
  def isKState(className: String): Boolean = className.startsWith("io.kstate.")

  def isStaticAllowed(name: String): Boolean = isKState(name) || name.startsWith("java.time.Duration.")

  /** `arg` as a value of parameter type `p`, or None when `p` cannot take it. */
  def convert(arg: Any, p: Class[_]): Option[AnyRef] = (arg, p) match {
    case (null, c) if c == classOf[Option[_]] => Some(None)
    case (null, c) => if (c.isPrimitive) None else Some(null)
    case (n: Long, c) if c == java.lang.Long.TYPE || c == classOf[java.lang.Long] => Some(java.lang.Long.valueOf(n))
    case (n: Long, c) if (c == Integer.TYPE || c == classOf[Integer]) && n.isValidInt => Some(Integer.valueOf(n.toInt))
    case (n: Long, c) if c == java.lang.Double.TYPE || c == classOf[java.lang.Double] => Some(java.lang.Double.valueOf(n.toDouble))
    case (n: Long, c) if c == classOf[Option[_]] => Some(Some(n))
    case (a: AnyRef, c) if c.isInstance(a) => Some(a)
    case _ => None
  }
}
