package org.apache.spark.sql.kstate

import scala.util.control.NonFatal

import io.kstate.{KStateConf, KStateErrors}

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider
import org.apache.spark.sql.internal.SQLConf

/**
 * Checks `spark.kstate.stateStore.providerClass` can back kstate operators: the class is on
 * the classpath, is a Spark `StateStoreProvider`, and is not Spark's HDFS provider (no column
 * families or range scans). Run when a kstate DataFrame is built (the setting in effect then)
 * and again when a micro-batch is planned (the setting the query runs with), so an unknown
 * class is named before any task fails on it.
 */
object StateProviderCheck {

  /** The configured provider class name; throws `KSTATE_UNSUPPORTED_STATE_PROVIDER` if unusable. */
  def check(conf: SQLConf): String = {
    val name = KStateConf.StateStoreProvider.get(conf)
    val key = KStateConf.StateStoreProvider.key
    val cls = try Class.forName(name.trim, false, loader) catch {
      case _: ClassNotFoundException | _: LinkageError =>
        throw KStateErrors.unknownStateProvider(key, name, "class not found")
      case NonFatal(e) =>
        throw KStateErrors.unknownStateProvider(key, name, s"class not found (${e.getMessage})")
    }
    if (!classOf[StateStoreProvider].isAssignableFrom(cls)) {
      throw KStateErrors.unknownStateProvider(key, name,
        s"the class is not a ${classOf[StateStoreProvider].getName}")
    }
    if (name.endsWith("HDFSBackedStateStoreProvider")) {
      throw KStateErrors.providerWithoutColumnFamilies(name)
    }
    name
  }

  private def loader: ClassLoader =
    Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
}
