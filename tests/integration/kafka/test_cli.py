"""`medallion kafka start|topic|produce|status|stop`: a local broker for development, its folder kept across a stop."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.cli import main
from framework.testing.kafka import KafkaBroker, configured_ports, libs_dir
from framework.testing.postgres import free_port


def test_local_broker_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, port = tmp_path / "kafka", free_port()
    common = ["--dir", str(folder), "--port", str(port)]
    try:
        assert main(["kafka", "start", *common]) == 0
        assert f"127.0.0.1:{port}" in capsys.readouterr().out
        assert main(["kafka", "status", *common]) == 0
        assert main(["kafka", "topic", "orders", *common]) == 0
        records = tmp_path / "records.jsonl"
        records.write_text('{"order_id": 1}\n\n{"order_id": 2}\n')
        assert main(["kafka", "produce", "orders", str(records), *common]) == 0
        assert "2 records to orders" in capsys.readouterr().out
        ports = configured_ports(folder)
        assert ports is not None and ports[0] == port
        broker = KafkaBroker(folder, ports[0], ports[1], libs_dir())
        assert [v for _, v in broker.consume("orders", idle_ms=1500)] == [b'{"order_id": 1}', b'{"order_id": 2}']
    finally:
        assert main(["kafka", "stop", *common]) == 0
    assert main(["kafka", "status", *common]) == 1
    assert (folder / "data" / "meta.properties").exists()  # kept for the next start
