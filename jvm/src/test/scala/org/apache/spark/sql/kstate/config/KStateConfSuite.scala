package org.apache.spark.sql.kstate.config

import io.kstate.KStateException

import io.kstate.testing.KStateSparkSuite

/** kstate's settings are registered with Spark's SQL configuration, with their defaults and docs. */
class KStateConfSuite extends KStateSparkSuite {
  test("every entry's default string parses to its default") {
    KStateConf.entries.foreach(e => assert(e.parse(e.defaultString) == e.default, e.key))
  }

  test("spark.conf.get returns each setting's default when nobody set it, and the value when set") {
    KStateConf.entries.foreach { e =>
      val set = spark.conf.getOption(e.key)
      spark.conf.unset(e.key)
      try {
        assert(spark.conf.get(e.key) == e.defaultString, e.key)
        if (e == KStateConf.StateStoreProvider) assert(spark.conf.get(e.key) == "io.kstate.KStateStoreProvider")
        if (e == KStateConf.ProcessingOrderPolicy) assert(spark.conf.get(e.key) == "auto")
      } finally set.foreach(spark.conf.set(e.key, _))
    }
    spark.conf.set(KStateConf.StreamTimeFollowsWatermark.key, "true")
    try assert(KStateConf.StreamTimeFollowsWatermark.get(spark.sessionState.conf))
    finally spark.conf.unset(KStateConf.StreamTimeFollowsWatermark.key)
  }

  test("SET -v lists every setting with its default and doc") {
    val rows = spark.sql("SET -v").collect().map(r => r.getString(0) -> (r.getString(1), r.getString(2))).toMap
    KStateConf.entries.foreach { e =>
      val (value, doc) = rows.getOrElse(e.key, fail(s"${e.key} not listed by SET -v"))
      assert(doc == e.doc, e.key)
      assert(value == spark.conf.get(e.key), e.key)
    }
  }

  test("a bad value is still kstate's named error where kstate reads it, not Spark's at set") {
    spark.conf.set(KStateConf.ProcessingOrderPolicy.key, "bogus")
    try {
      val e = intercept[KStateException](KStateConf.ProcessingOrderPolicy.get(spark.sessionState.conf))
      assert(e.errorClass == "KSTATE_INVALID_PROCESSING_ORDER")
    } finally spark.conf.unset(KStateConf.ProcessingOrderPolicy.key)
  }
}
