package org.apache.spark.sql.kstate.engine

import java.io.{ByteArrayOutputStream, DataOutputStream}
import java.util.zip.CRC32C

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class ChecksummedOutputSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  /** One field: how DataOutputStream writes it, and how ChecksummedOutput does. */
  private final case class Field(reference: DataOutputStream => Unit, ours: ChecksummedOutput => Unit)

  private val field: Gen[Field] = Gen.oneOf(
    Gen.choose(-300, 300).map(v => Field(_.writeByte(v), _.writeByte(v))),
    Gen.choose(-70000, 70000).map(v => Field(_.writeShort(v), _.writeShort(v))),
    Gen.choose(Int.MinValue, Int.MaxValue).map(v => Field(_.writeInt(v), _.writeInt(v))),
    Gen.choose(Long.MinValue, Long.MaxValue).map(v => Field(_.writeLong(v), _.writeLong(v))),
    Gen.choose(0, 200).flatMap(n => Gen.listOfN(n, Gen.choose(Byte.MinValue, Byte.MaxValue)))
      .map(_.toArray).map(b => Field(_.write(b), _.write(b))),
    Gen.oneOf(Gen.asciiPrintableStr.map(_.take(40)), Gen.const("zaï-€-😀"))
      .map(s => Field(_.writeUTF(s), _.writeUTF(s)))
  )

  test("property: writes exactly DataOutputStream's bytes, with their CRC32C and size") {
    forAll(Gen.listOf(field), Gen.choose(8, 64)) { (fields, bufferSize) =>
      val expected = new ByteArrayOutputStream
      val reference = new DataOutputStream(expected)
      fields.foreach(_.reference(reference))
      reference.flush()
      val got = new ByteArrayOutputStream
      val out = new ChecksummedOutput(got, bufferSize)
      fields.foreach(_.ours(out))
      assert(out.size === expected.size().toLong)
      out.flush()
      assert(got.toByteArray.sameElements(expected.toByteArray))
      val crc = new CRC32C
      crc.update(expected.toByteArray)
      assert(out.checksum === crc.getValue.toInt)
    }
  }
}
