package org.apache.spark.sql.kstate.engine

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataOutputStream, EOFException, InputStream}
import java.util.zip.CRC32C

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class ChecksummedInputSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private sealed trait Field
  private case class B(v: Byte) extends Field
  private case class S(v: Short) extends Field
  private case class I(v: Int) extends Field
  private case class L(v: Long) extends Field
  private case class A(v: Array[Byte]) extends Field
  private case class U(v: String) extends Field

  private val field: Gen[Field] = Gen.oneOf(
    Gen.choose(Byte.MinValue, Byte.MaxValue).map(B),
    Gen.choose(Short.MinValue, Short.MaxValue).map(S),
    Gen.choose(Int.MinValue, Int.MaxValue).map(I),
    Gen.choose(Long.MinValue, Long.MaxValue).map(L),
    Gen.choose(0, 200).flatMap(n => Gen.listOfN(n, Gen.choose(Byte.MinValue, Byte.MaxValue)))
      .map(b => A(b.toArray)),
    Gen.asciiPrintableStr.map(_.take(40)).map(U),
    Gen.const(U("zaï-€-😀"))
  )

  /** Hands out at most `chunk` bytes per read, as network streams do. */
  private class Trickle(bytes: Array[Byte], chunk: Int) extends InputStream {
    private val in = new ByteArrayInputStream(bytes)
    override def read(): Int = in.read()
    override def read(b: Array[Byte], off: Int, len: Int): Int = in.read(b, off, math.min(len, chunk))
  }

  test("property: reads back what DataOutputStream wrote, checksumming exactly the bytes consumed") {
    forAll(Gen.listOf(field), Gen.choose(8, 64), Gen.choose(1, 50)) { (fields, bufferSize, chunk) =>
      val bytes = new ByteArrayOutputStream
      val out = new DataOutputStream(bytes)
      fields.foreach {
        case B(v) => out.writeByte(v)
        case S(v) => out.writeShort(v)
        case I(v) => out.writeInt(v)
        case L(v) => out.writeLong(v)
        case A(v) => out.write(v)
        case U(v) => out.writeUTF(v)
      }
      out.writeInt(0x5eed) // a trailer the checksum must not cover
      out.flush()
      val all = bytes.toByteArray
      val in = new ChecksummedInput(new Trickle(all, chunk), bufferSize)
      fields.foreach {
        case B(v) => assert(in.readByte() === v)
        case S(v) => assert(in.readShort() === v)
        case I(v) => assert(in.readInt() === v)
        case L(v) => assert(in.readLong() === v)
        case A(v) => val got = new Array[Byte](v.length); in.readFully(got); assert(got.sameElements(v))
        case U(v) => assert(in.readUTF() === v)
      }
      val crc = new CRC32C
      crc.update(all, 0, all.length - 4)
      assert(in.checksum === crc.getValue.toInt)
      assert(in.readInt() === 0x5eed)
      assert(in.atEnd)
    }
  }

  test("a stream ending inside a value is an EOFException; trailing bytes are not at end") {
    intercept[EOFException](new ChecksummedInput(new ByteArrayInputStream(Array[Byte](1, 2, 3))).readInt())
    val in = new ChecksummedInput(new ByteArrayInputStream(Array[Byte](0, 0, 0, 7, 9)), 8)
    assert(in.readInt() === 7)
    assert(!in.atEnd)
    assert(in.readByte() === 9 && in.atEnd)
  }
}
