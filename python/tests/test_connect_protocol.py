"""kstate's Spark Connect protocol on the client: the committed Python module is what protoc
generates from the schema the server is compiled from, and every kstate call the Python API can
make has its typed message (docs/connect.md)."""

from __future__ import annotations

import os
import subprocess

import pytest
from kstate.proto import connect_pb2 as pb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO = os.path.join(ROOT, "jvm", "src", "main", "protobuf", "kstate", "proto", "connect.proto")
PROTOC_PATH = os.path.join(ROOT, "jvm", "target", "protoc-path")


def test_the_committed_python_module_is_generated_from_the_schema(tmp_path) -> None:
    if not os.path.isfile(PROTOC_PATH):
        pytest.fail(f"{PROTOC_PATH} not found: run `make proto-python` (or `bin/sbt protocPath`)")
    with open(PROTOC_PATH) as f:
        protoc = f.read().strip()
    subprocess.run(
        [protoc, f"-I{os.path.dirname(os.path.dirname(os.path.dirname(PROTO)))}", f"--python_out={tmp_path}", PROTO],
        check=True,
    )
    with open(tmp_path / "kstate" / "proto" / "connect_pb2.py") as f:
        fresh = f.read()
    with open(pb.__file__) as f:
        committed = f.read()
    assert committed == fresh, "python/kstate/proto/connect_pb2.py is stale: run `make proto-python`"


def test_one_message_per_operation_and_the_type_url_the_server_expects() -> None:
    import kstate._connect as c

    assert c.TYPE_URL == "type.googleapis.com/" + pb.KStateRelation.DESCRIPTOR.full_name
    stream_ops = {f.name for f in pb.Stream.DESCRIPTOR.oneofs_by_name["op"].fields}
    assert stream_ops == {
        "deduplicate_by_key",
        "deduplicate_by_key_value",
        "deduplicate",
        "suppress",
        "join",
        "windowed",
        "to_stream",
        "table_suppress",
    }
    table_ops = {f.name for f in pb.Table.DESCRIPTOR.oneofs_by_name["op"].fields}
    assert table_ops == {"to_table", "filter", "filter_not", "map_values", "join", "foreign_key_join", "aggregation"}
