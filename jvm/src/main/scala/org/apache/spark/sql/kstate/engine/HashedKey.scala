package org.apache.spark.sql.kstate.engine

import java.util.Arrays

import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.hash.Murmur3_x86_32

/**
 * Key bytes as a hash map key: equal by content, hashed once (Murmur3, a word at a time), so a
 * key looked up in a version's write set and then in the heap working copy is hashed once.
 * The bytes must not change while the key is in use.
 */
private[kstate] final class HashedKey private (val bytes: Array[Byte], override val hashCode: Int) {
  def this(bytes: Array[Byte]) = this(bytes, HashedKey.hashOf(bytes))

  override def equals(o: Any): Boolean = o match {
    case k: HashedKey => (k eq this) || (k.hashCode == hashCode && Arrays.equals(bytes, k.bytes))
    case _ => false
  }
}

private[kstate] object HashedKey {
  def hashOf(bytes: Array[Byte]): Int =
    Murmur3_x86_32.hashUnsafeBytes2(bytes, Platform.BYTE_ARRAY_OFFSET, bytes.length, 42)

  /** `bytes` with a hash already computed by [[hashOf]] (a map that stored it). */
  private[kstate] def withHash(bytes: Array[Byte], hash: Int): HashedKey = new HashedKey(bytes, hash)
}
