package io.kstate

/**
 * The public name of kstate's state store provider, for
 * `spark.sql.streaming.stateStore.providerClass` and `spark.kstate.stateStore.providerClass`.
 * The implementation lives in [[org.apache.spark.sql.kstate.provider.KStateStoreProvider]].
 */
class KStateStoreProvider extends org.apache.spark.sql.kstate.provider.KStateStoreProvider
