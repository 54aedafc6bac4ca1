package org.apache.spark.sql.kstate.reader

import org.apache.spark.sql.kstate.config.KStateConf

import org.apache.spark.sql.kstate.planning.OperatorIdentity

/**
 * A kstate operator as a checkpoint records it: its Spark operator id (the name of its state
 * directory) and the configuration [[OperatorIdentity.checkOrRecordConfig]] wrote at its first
 * micro-batch (empty when none was recorded).
 */
final case class RecordedOperator(id: Long, config: Map[String, String]) {
  def name: Option[String] = config.get(OperatorIdentity.NameKey)

  /**
   * The state store provider the operator's state was written with: the one recorded in its
   * configuration, else kstate's own (the default of `spark.kstate.stateStore.providerClass`).
   */
  def providerClass: String =
    config.getOrElse(OperatorIdentity.ProviderKey, KStateConf.StateStoreProvider.default)

  /** For messages: `name (operator id n)`. */
  def describe: String = s"${name.getOrElse("<no recorded name>")} (operator id $id)"
}
