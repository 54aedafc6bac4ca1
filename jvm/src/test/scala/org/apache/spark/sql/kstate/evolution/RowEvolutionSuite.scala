package org.apache.spark.sql.kstate.evolution

import io.kstate.KStateException
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/** Which row type changes convert, the conversion itself, and the recorded configuration's epochs. */
class RowEvolutionSuite extends AnyFunSuite {
  private def struct(ddl: String): StructType = StructType.fromDDL(ddl)
  private def row(schema: StructType, values: Any*): UnsafeRow =
    UnsafeProjection.create(schema).apply(new GenericInternalRow(values.toArray)).copy()

  test("compatible: add, remove, reorder, widen (also inside a struct); incompatible: named by column") {
    val old = struct("a INT, b STRING, s STRUCT<x: SMALLINT, y: FLOAT>, d DECIMAL(5,2)")
    val ok = Seq(
      "a INT, b STRING, s STRUCT<x: SMALLINT, y: FLOAT>, d DECIMAL(5,2), c STRING", // add
      "a INT, s STRUCT<x: SMALLINT, y: FLOAT>, d DECIMAL(5,2)", // remove
      "d DECIMAL(5,2), s STRUCT<y: FLOAT, x: SMALLINT>, b STRING, a INT", // reorder, also nested
      "a BIGINT, b STRING, s STRUCT<x: INT, y: DOUBLE>, d DECIMAL(8,3)", // widen
      "a DOUBLE, b STRING, s STRUCT<x: FLOAT, y: FLOAT, z: INT>, d DECIMAL(5,2)"
    )
    ok.foreach(n => assert(RowEvolution.incompatibility(old, struct(n)).isEmpty, n))
    val refused = Seq(
      "a STRING, b STRING, s STRUCT<x: SMALLINT, y: FLOAT>, d DECIMAL(5,2)" -> ("a", "int -> string"),
      "a SMALLINT, b STRING, s STRUCT<x: SMALLINT, y: FLOAT>, d DECIMAL(5,2)" -> ("a", "int -> smallint"),
      "a INT, b STRING, s STRUCT<x: TINYINT, y: FLOAT>, d DECIMAL(5,2)" -> ("s.x", "smallint -> tinyint"),
      "a INT, b STRING, s STRUCT<x: SMALLINT, y: FLOAT>, d DECIMAL(5,3)" -> ("d", "decimal(5,2) -> decimal(5,3)"),
      "a INT, b BINARY, s STRUCT<x: SMALLINT, y: FLOAT>, d DECIMAL(5,2)" -> ("b", "string -> binary")
    )
    refused.foreach { case (n, (column, change)) =>
      assert(RowEvolution.incompatibility(old, struct(n)).contains(RowEvolution.Incompatible(column, change)), n)
    }
    assert(!RowEvolution.widens(LongType, DoubleType)) // loses precision past 2^53
  }

  test("a converted row holds the old values by name, widened; added columns null; nested structs too") {
    val old = struct("a INT, b STRING, s STRUCT<x: SMALLINT, y: FLOAT>")
    val now = struct("s STRUCT<y: DOUBLE, x: INT, z: STRING>, c STRING, a BIGINT")
    val c = new RowEvolution.Converter(old, now)
    val out = new UnsafeRow(3)
    val bytes =
      c.bytes(row(old, -7, UTF8String.fromString("hi"), new GenericInternalRow(Array[Any](3.toShort, 1.5f))).getBytes)
    out.pointTo(bytes, bytes.length)
    assert(out.getLong(2) == -7L && out.isNullAt(1))
    val s = out.getStruct(0, 3)
    assert(s.getDouble(0) == 1.5 && s.getInt(1) == 3 && s.isNullAt(2))
    val nullStruct = c.bytes(row(old, 1, null, null).getBytes)
    out.pointTo(nullStruct, nullStruct.length)
    assert(out.isNullAt(0) && out.getLong(2) == 1L)
  }

  test("the recorded configuration: the types before apply below the evolution's version, the current ones from it") {
    val recorded = Map(
      "kind" -> "suppress",
      "rowType" -> "struct<k:string,v:bigint>",
      StateEvolution.FromVersionKey -> "5",
      StateEvolution.BeforePrefix + "rowType" -> "struct<k:string,v:int>"
    )
    assert(StateEvolution.effectiveAt(recorded, 4)("rowType") == "struct<k:string,v:int>")
    assert(StateEvolution.effectiveAt(recorded, 5) == Map(
      "kind" -> "suppress",
      "rowType" -> "struct<k:string,v:bigint>"
    ))
    val pending = StateEvolution.pendingAt(recorded, 4).get
    assert(pending.fromVersion == 5 && pending.change("rowType").get._2 == struct("k STRING, v BIGINT"))
    assert(StateEvolution.pendingAt(recorded, 5).isEmpty)
  }

  test(
    "classify: evolvable keys convert, others are a changed configuration, key types and arity are refused by name"
  ) {
    val stored = Map(
      "kind" -> "windowed_aggregate",
      "keyType" -> "string",
      "windows" -> "TimeWindows(size=1)",
      "buffer" -> "int,bigint",
      "results" -> "m:int,n:bigint"
    )
    val widened = stored ++ Map("buffer" -> "bigint,bigint", "results" -> "m:bigint,n:bigint")
    assert(StateEvolution.classify("w", stored, widened).toOption.get("buffer") == ("int,bigint", "bigint,bigint"))
    assert(StateEvolution.classify("w", stored, stored + ("windows" -> "TimeWindows(size=2)")) == Left(()))
    val key = intercept[KStateException](StateEvolution.classify("w", stored, stored + ("keyType" -> "int")))
    assert(key.errorClass == "KSTATE_INCOMPATIBLE_STATE_SCHEMA" && key.getMessage.contains("string -> int"))
    val arity =
      intercept[KStateException](StateEvolution.classify("w", stored, stored + ("buffer" -> "int,bigint,int")))
    assert(arity.getMessage.contains("2 values -> 3"))
    assert(StateEvolution.typeListOf("decimal(5,2),struct<a:int,b:int>,int") ==
      Seq("decimal(5,2)", "struct<a:int,b:int>", "int"))
  }
}
