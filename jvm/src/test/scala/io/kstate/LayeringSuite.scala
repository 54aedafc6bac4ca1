package io.kstate

import com.tngtech.archunit.base.DescribedPredicate
import com.tngtech.archunit.core.domain.{JavaClass, JavaClasses}
import com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage
import com.tngtech.archunit.core.importer.ClassFileImporter
import com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses
import org.scalatest.funsuite.AnyFunSuite

/**
 * The layering rule of docs/contributing.md ("Layering"), checked on kstate's compiled classes
 * (so fully qualified references count as much as imports):
 *  - the public API (`io.kstate` and its subpackages) depends on no kstate internals
 *    (`org.apache.spark.sql.kstate`), except the entry points that must build plans or name the
 *    internal implementation ([[LayeringSuite.EntryPoints]]);
 *  - the internals depend on no entry point: of the public API they use only its value types
 *    (durations, windows, buffer configs, versioned tables, processing orders) and its error
 *    type, which depend on nothing of kstate's internals;
 *  - no internal class extends or implements a public type;
 *  - operator processors (`org.apache.spark.sql.kstate.processor`) use no Spark types: they
 *    depend on nothing under `org.apache.spark` outside their own package.
 */
class LayeringSuite extends AnyFunSuite {
  private val classes: JavaClasses = new ClassFileImporter()
    .importUrl(classOf[KStateException].getProtectionDomain.getCodeSource.getLocation)

  private def sourceFile(c: JavaClass): String = {
    val source = c.getSource
    if (source.isPresent && source.get.getFileName.isPresent) source.get.getFileName.get else ""
  }

  private def fromFiles(description: String, files: Set[String]): DescribedPredicate[JavaClass] =
    DescribedPredicate.describe[JavaClass](description, (c: JavaClass) => files(sourceFile(c)))

  test("the classes were found") {
    assert(classes.contain(classOf[KStateDataFrame]) && classes.contain(
      classOf[org.apache.spark.sql.kstate.planning.KStateStrategy]
    ))
  }

  test("public classes depend on no kstate internals, except the entry points") {
    noClasses().that(resideInAPackage("io.kstate..")
      .and(DescribedPredicate.not(fromFiles("are entry points", LayeringSuite.EntryPoints))))
      .should().dependOnClassesThat(resideInAPackage("org.apache.spark.sql.kstate.."))
      .because("the public API must not expose or need kstate's internals (docs/contributing.md)")
      .check(classes)
  }

  test("internal classes depend on no entry point of the public API") {
    noClasses().that(resideInAPackage("org.apache.spark.sql.kstate.."))
      .should().dependOnClassesThat(resideInAPackage("io.kstate..").and(fromFiles(
        "are entry points",
        LayeringSuite.EntryPoints
      )))
      .because("the internals are used by the entry points, never the other way round (docs/contributing.md)")
      .check(classes)
  }

  test("internal classes neither extend nor implement a public type") {
    noClasses().that(resideInAPackage("org.apache.spark.sql.kstate.."))
      .should().beAssignableTo(resideInAPackage("io.kstate.."))
      .because("internal code may use public value types but not implement public contracts " +
        "(docs/contributing.md)")
      .check(classes)
  }

  test("processors use no Spark types") {
    noClasses().that(resideInAPackage("org.apache.spark.sql.kstate.processor.."))
      .should().dependOnClassesThat(resideInAPackage("org.apache.spark..")
        .and(DescribedPredicate.not(resideInAPackage("org.apache.spark.sql.kstate.processor..")))
        .and(DescribedPredicate.not(resideInAPackage("org.apache.spark.sql.kstate.errors.."))))
      .because("an operator's rules are Spark-free and unit-tested without Spark (docs/contributing.md)")
      .check(classes)
  }
}

object LayeringSuite {

  /**
   * Public files that may use internals: they build kstate's plans (`KStateDataFrame`), install
   * its rules (`KStateExtensions`), read its state (`KStateStateReader`), give the internal
   * provider its public class name (`KStateStoreProvider`), plug the replica coordinator and
   * followers into Spark (`KStatePlugin`), read the coordinator's table (`ReplicaStatus`),
   * serve kstate's Spark Connect messages (`KStateConnectPlugin`, `connect/KStateRelationPlugin`,
   * which parses them, and `connect/KStateConnectPlanner`, which maps each to its public API call),
   * or rescale a checkpoint's state (`KStateRepartition`).
   */
  val EntryPoints: Set[String] =
    Set(
      "KStateDataFrame.scala",
      "KStateExtensions.scala",
      "KStateStateReader.scala",
      "KStateTableReader.scala",
      "KStateStoreProvider.scala",
      "KTable.scala",
      "KGroupedTable.scala",
      "KStatePlugin.scala",
      "ReplicaStatus.scala",
      "KStateConnectPlugin.scala",
      "KStateRelationPlugin.scala",
      "KStateConnectPlanner.scala",
      "KStateRepartition.scala"
    )

}
