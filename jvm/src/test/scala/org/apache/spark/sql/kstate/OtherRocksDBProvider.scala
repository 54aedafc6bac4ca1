package org.apache.spark.sql.kstate

import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider

/** A provider class other than kstate's default, for the provider-change-on-restart test. */
class OtherRocksDBProvider extends RocksDBStateStoreProvider
