"""``kstate.replica_status``: where a query's state lives and how warm its standby replicas are
(wraps ``io.kstate.ReplicaStatus``; docs/replicas.md)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from ._jvm import check_jvm, jvalue, translate_errors

__all__ = ["replica_status"]


@translate_errors
def replica_status(query: StreamingQuery) -> List[Dict[str, Any]]:
    """The driver's table of standby and warm-up replicas of ``query``'s kstate state stores.

    Parameters
    ----------
    query : pyspark.sql.streaming.StreamingQuery
        A running (or stopped) query of this session; on Spark Connect, a query of a Connect
        session whose server runs kstate's plugin (the server's table).

    Returns
    -------
    list of dict
        One entry per state store of each kstate operator the coordinator follows:
        ``operator``, ``partition``, ``store``, ``active`` (executor id of the active copy, or
        None when unknown), ``committed_version`` (the version the query's last planned
        micro-batch started from), ``standbys``: a list of ``{"executor": id, "version": v}``,
        ``v`` the committed version the standby holds (None while it holds none yet),
        ``warmup``: the store's warm-up copy as ``{"executor": id, "version": v}`` or None,
        ``moving_to``: the executor its planned move goes to, or None, and
        ``replaced_standbys``: copies of standbys that a balance move replaced, each as
        ``{"executor": id, "version": v}``, kept (and preferred after a loss) until a current
        standby holds a version as new. Empty when neither
        standbys nor warm-ups are wanted (``spark.kstate.standbyReplicas=0`` and
        ``spark.kstate.maxWarmupReplicas=0``) or after the query stopped.

    Raises
    ------
    KStateError
        ``KSTATE_STANDBY_REPLICAS_NEED_PLUGIN`` when the session was started without kstate's
        plugin (build it with :func:`kstate.configure`).

    Examples
    --------
    >>> spark.conf.set("spark.kstate.standbyReplicas", "1")
    >>> q = events.kstate.deduplicate_by_key("1 hour", key="k", timestamp="ts").writeStream...start()
    >>> kstate.replica_status(q)[0]
    {'operator': 1, 'partition': 0, 'store': 'default', 'active': '2', 'committed_version': 7,
     'standbys': [{'executor': '0', 'version': 7}], 'warmup': None, 'moving_to': None,
     'replaced_standbys': []}
    """
    # a classic query handle carries no session: the query runs in this process's SparkContext;
    # a Connect one names its session
    spark = getattr(query, "_session", None) or SparkSession.getActiveSession() or SparkSession._instantiatedSession
    jvm = check_jvm(spark)
    return json.loads(str(jvalue(jvm.io.kstate.ReplicaStatus.json(str(query.id)))))
