package io.kstate.oracle

import java.util.Properties

import org.apache.kafka.common.serialization.Serdes
import org.apache.kafka.streams.{StreamsConfig, Topology, TopologyTestDriver}

/**
 * Kafka Streams' `TopologyTestDriver` as every oracle runs it: caches off
 * (`statestore.cache.max.bytes=0`, so every update is forwarded as it happens), a fresh state
 * directory, String keys and Long values by default, no broker ever contacted.
 */
object OracleDriver {
  def props(): Properties = {
    val props = new Properties()
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "kstate-oracle")
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1") // never contacted by the test driver
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0")
    props.put(StreamsConfig.STATE_DIR_CONFIG, java.nio.file.Files.createTempDirectory("kafka-oracle").toString)
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass.getName)
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.Long().getClass.getName)
    props
  }

  /** Runs `f` on a driver of `topology`, closing it afterwards. */
  def using[A](topology: Topology)(f: TopologyTestDriver => A): A = {
    val driver = new TopologyTestDriver(topology, props())
    try f(driver)
    finally driver.close()
  }
}
