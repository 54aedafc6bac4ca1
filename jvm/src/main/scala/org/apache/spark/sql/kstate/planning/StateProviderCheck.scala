package org.apache.spark.sql.kstate.planning

import scala.util.control.NonFatal

import org.apache.spark.sql.kstate.config.KStateConf
import org.apache.spark.sql.kstate.errors.KStateErrors

import org.apache.spark.sql.execution.streaming.state.{
  HDFSBackedStateStoreProvider,
  RocksDBStateStoreProvider,
  StateStoreProvider
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.kstate.execution.StoreCapability
import org.apache.spark.sql.kstate.provider.KStateStoreProvider

/**
 * Checks that `spark.kstate.stateStore.providerClass` can back kstate operators, by its class
 * (a subclass has what its parent has):
 *
 * | provider class | capabilities |
 * | --- | --- |
 * | kstate's `io.kstate.KStateStoreProvider` (and any subclass) | all ([[StoreCapability.All]]) |
 * | Spark's `RocksDBStateStoreProvider` (and any subclass) | column families only |
 * | Spark's `HDFSBackedStateStoreProvider` (and any subclass) | none |
 * | any other `StateStoreProvider` | column families assumed: it is opened with them, and fails in its own way if it has none |
 *
 * [[check]] runs whenever a plan with a kstate operator is analysed ([[KStateCheckRule]]): the
 * class is on the classpath, is a Spark `StateStoreProvider`, and has column families (every
 * kstate operator needs them). [[requireCapabilities]] runs when a micro-batch is planned, with
 * what the planned exec declares it needs.
 */
object StateProviderCheck {

  /** The configured provider class; throws `KSTATE_UNSUPPORTED_STATE_PROVIDER` if unusable. */
  def check(conf: SQLConf): Class[_] = {
    val cls = providerClass(KStateConf.StateStoreProvider.get(conf))
    if (!capabilitiesOf(cls).contains(StoreCapability.ColumnFamilies)) {
      throw KStateErrors.providerWithoutColumnFamilies(cls.getName)
    }
    cls
  }

  /**
   * Throws `KSTATE_UNSUPPORTED_STATE_PROVIDER` if provider class `provider` lacks any of
   * `needed`, naming `operator` and what it lacks.
   */
  def requireCapabilities(provider: String, needed: Set[StoreCapability], operator: String): Unit = {
    val missing = needed -- capabilitiesOf(providerClass(provider))
    if (missing.nonEmpty) {
      throw KStateErrors.providerLacksCapabilities(operator, provider, missing.toSeq.map(_.description).sorted)
    }
  }

  /** What a provider class has (the table above). */
  def capabilitiesOf(cls: Class[_]): Set[StoreCapability] =
    if (classOf[KStateStoreProvider].isAssignableFrom(cls)) StoreCapability.All
    else if (classOf[RocksDBStateStoreProvider].isAssignableFrom(cls)) Set(StoreCapability.ColumnFamilies)
    else if (classOf[HDFSBackedStateStoreProvider].isAssignableFrom(cls)) Set.empty
    else Set(StoreCapability.ColumnFamilies)

  /** The class named `name`, a `StateStoreProvider`; else `KSTATE_UNSUPPORTED_STATE_PROVIDER`. */
  private def providerClass(name: String): Class[_] = {
    val key = KStateConf.StateStoreProvider.key
    val cls =
      try Class.forName(name.trim, false, loader)
      catch {
        case _: ClassNotFoundException | _: LinkageError =>
          throw KStateErrors.unknownStateProvider(key, name, "class not found")
        case NonFatal(e) =>
          throw KStateErrors.unknownStateProvider(key, name, s"class not found (${e.getMessage})")
      }
    if (!classOf[StateStoreProvider].isAssignableFrom(cls)) {
      throw KStateErrors.unknownStateProvider(
        key,
        name,
        s"the class is not a ${classOf[StateStoreProvider].getName}"
      )
    }
    cls
  }

  private def loader: ClassLoader =
    Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
}
