package org.apache.spark.sql.kstate.planning

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{Alias, ExprId, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Generate, LogicalPlan}

/**
 * Where the columns an expression reads come from, through an analysed plan: each attribute is
 * followed back to the expression that computes it (an `Alias` in a Project, Aggregate, Window,
 * ..., or a `Generate`'s generator), and on through that expression's own inputs, down to the
 * columns a source reads.
 */
object ExpressionLineage {

  /** A column computed in the plan: its name and the expression that computes it. */
  final case class Definition(column: String, expr: Expression)

  /**
   * The first column `expr` depends on, directly or through other computed columns of `plan`,
   * that `plan` computes with a non-deterministic expression (`rand()`, `uuid()`,
   * `shuffle()`, ...); None when every dependency is deterministic. `expr` itself is not
   * checked, only what it reads.
   */
  def nonDeterministicDependency(expr: Expression, plan: LogicalPlan): Option[Definition] = {
    val defs = definitions(plan)
    val seen = mutable.Set.empty[ExprId]
    val pending = mutable.Stack.empty[ExprId]
    expr.references.foreach(a => pending.push(a.exprId))
    while (pending.nonEmpty) {
      val id = pending.pop()
      if (seen.add(id)) {
        defs.get(id).foreach { d =>
          if (!d.expr.deterministic) return Some(d)
          d.expr.references.foreach(a => pending.push(a.exprId))
        }
      }
    }
    None
  }

  /** Every column `plan` computes, by its expression id. */
  private def definitions(plan: LogicalPlan): Map[ExprId, Definition] = {
    val defs = mutable.Map.empty[ExprId, Definition]
    plan.foreach {
      case g: Generate => g.generatorOutput.foreach(a => defs(a.exprId) = Definition(a.name, g.generator))
      case node => node.expressions.foreach(_.foreach {
          case a: Alias => defs(a.exprId) = Definition(a.name, a.child)
          case _ =>
        })
    }
    defs.toMap
  }
}
