package org.apache.spark.sql.kstate.engine

/**
 * Which column families exist in one store version: name -> id. Ids are never reused, so the
 * keys of a dropped family can never reappear under a new family of the same name. Immutable;
 * each store version works on its own copy.
 */
private[kstate] final case class FamilyRegistry(ids: Map[String, Short], nextId: Short) {
  def create(name: String): (FamilyRegistry, Short) = ids.get(name) match {
    case Some(id) => (this, id)
    case None =>
      require(nextId < Short.MaxValue, "too many column families in one state store")
      (FamilyRegistry(ids + (name -> nextId), (nextId + 1).toShort), nextId)
  }

  /** Adds a family read from a state file (ids come from the file). */
  def restored(name: String, id: Short): FamilyRegistry =
    FamilyRegistry(ids + (name -> id), math.max(nextId, id + 1).toShort)

  def drop(name: String): FamilyRegistry = copy(ids = ids - name)
  def dropId(id: Short): FamilyRegistry = copy(ids = ids.filterNot(_._2 == id))
}

private[kstate] object FamilyRegistry {

  /** Every store has Spark's default column family, id 0. */
  def initial(defaultName: String): FamilyRegistry = FamilyRegistry(Map(defaultName -> 0.toShort), 1)
}
