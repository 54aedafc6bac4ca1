package org.apache.spark.sql.kstate.provider

import java.io.File
import java.nio.file.Files
import java.util.UUID

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

/** Row building and provider plumbing shared by the state store conformance suites. */
object StateStoreConformanceSupport {

  /** An UnsafeRow of `schema` holding `values` (Scala Strings become UTF8String); never reused. */
  def row(schema: StructType, values: Any*): UnsafeRow = {
    require(values.length == schema.length, s"${values.length} values for $schema")
    val internal = InternalRow.fromSeq(values.map {
      case s: String => UTF8String.fromString(s)
      case v => v
    })
    UnsafeProjection.create(schema).apply(internal).copy()
  }

  /** The row's fields as Scala values (UTF8String becomes String), for readable comparisons. */
  def fields(schema: StructType, r: UnsafeRow): Seq[Any] =
    if (r == null) null
    else schema.fields.indices.map { i =>
      if (r.isNullAt(i)) null
      else r.get(i, schema.fields(i).dataType) match {
        case s: UTF8String => s.toString
        case v => v
      }
    }

  def tempDir(prefix: String): File = {
    val d = Files.createTempDirectory(prefix).toFile
    d.deleteOnExit()
    d
  }

  def deleteRecursively(f: File): Unit = {
    if (f.isDirectory) Option(f.listFiles()).foreach(_.foreach(deleteRecursively))
    f.delete()
  }
}

/** Where one provider instance's state lives and how it is configured. */
final case class StoreSetup(
    keySchema: StructType,
    valueSchema: StructType,
    keySpec: KeyStateEncoderSpec,
    useColumnFamilies: Boolean = false,
    useMultipleValuesPerKey: Boolean = false
)

final class ProviderFactory(
    providerClassName: String,
    root: File,
    baseConf: Map[String, String]
) {

  def storeConf(overrides: Map[String, String] = Map.empty): StateStoreConf = {
    val sql = new SQLConf
    sql.setConfString(SQLConf.STATE_STORE_PROVIDER_CLASS.key, providerClassName)
    (baseConf ++ overrides).foreach { case (k, v) => sql.setConfString(k, v) }
    new StateStoreConf(sql, Map.empty)
  }

  /** A fresh provider instance over the store at (root, operator 0, partition 0). */
  def create(setup: StoreSetup, overrides: Map[String, String] = Map.empty): StateStoreProvider = {
    val id = StateStoreProviderId(StateStoreId(root.getAbsolutePath, 0L, 0), UUID.randomUUID())
    StateStoreProvider.createAndInit(
      id,
      setup.keySchema,
      setup.valueSchema,
      setup.keySpec,
      setup.useColumnFamilies,
      storeConf(overrides),
      new Configuration(),
      setup.useMultipleValuesPerKey,
      None
    )
  }
}
