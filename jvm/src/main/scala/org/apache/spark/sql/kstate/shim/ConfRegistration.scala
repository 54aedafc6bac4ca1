package org.apache.spark.sql.kstate.shim

import io.kstate.BuildInfo
import org.apache.spark.sql.kstate.config.KStateConf

import org.apache.spark.sql.internal.SQLConf

/**
 * Registers kstate's settings ([[KStateConf.entries]]) with Spark's SQL configuration, once
 * per JVM (the registry is global): `spark.conf.get(key)` then returns the default of a
 * setting nobody set, and `SET -v` lists each with its doc. Registered as string settings with
 * their default strings, so Spark does not convert or reject values: kstate parses them where
 * it reads them and raises its own named errors. Spark's config builder is internal API, hence
 * the shim.
 */
object ConfRegistration {
  def registerAll(): Unit = synchronized {
    KStateConf.entries.foreach { e =>
      if (!SQLConf.containsConfigKey(e.key)) {
        SQLConf.buildConf(e.key).doc(e.doc).version(BuildInfo.version).stringConf
          .createWithDefault(e.defaultString)
      }
    }
  }
}
