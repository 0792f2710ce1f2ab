"""Deterministic sample data for the built-in pipeline (with some bad records), and the ``demo`` command."""

from __future__ import annotations

import json
import random
import shutil
import sys
from datetime import datetime, timedelta
from pathlib import Path

from framework.errors import ObjectStoreError
from framework.settings import project_root

CURRENCIES = ("EUR", "USD", "GBP")
STATUSES = ("completed", "completed", "completed", "cancelled", "pending")
COUNTRIES = ("DE", "FR", "US", "GB", "ES", "NL")
START = datetime(2026, 1, 1)


def write_orders(folder: Path, batch: int, files: int = 4, rows_per_file: int = 250, seed: int = 7) -> int:
    """Write ``files`` JSON-lines files of orders for ``batch``; returns the number of records written.

    Every file carries a few bad records: a negative amount, an unknown status, a NULL order id, a
    non-numeric amount (rescued), and in batch 2+ an unexpected ``coupon`` column; the last file of each
    batch also has a broken JSON line (kept as a corrupt record in ``_rescued_data``).
    """
    rng = random.Random(seed * 1000 + batch)
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for f in range(files):
        lines = []
        for r in range(rows_per_file):
            order_id = (batch - 1) * files * rows_per_file + f * rows_per_file + r + 1
            record: dict[str, object] = {
                "order_id": order_id,
                "customer_id": rng.randint(1, 40),
                "amount": round(rng.uniform(5, 500), 2),
                "currency": rng.choice(CURRENCIES),
                "order_ts": (START + timedelta(days=batch - 1, minutes=order_id % 1440)).isoformat(),
                "status": rng.choice(STATUSES),
            }
            if r == 3:
                record["amount"] = -10.0
            elif r == 5:
                record["status"] = "unknown"
            elif r == 7:
                record["order_id"] = None
            elif r == 9:
                record["amount"] = "twelve"
            elif r == 11:
                record["currency"] = "JPY"
            if batch >= 2 and r % 50 == 13:
                record["coupon"] = f"SAVE{r}"
            lines.append(json.dumps(record))
        if f == files - 1:
            lines.append('{"order_id": 999999, "amount": 12.5, "status": "completed"')  # broken JSON
        (folder / f"orders-b{batch:03d}-{f:03d}.json").write_text("\n".join(lines) + "\n")
        written += len(lines)
    return written


def write_customer_changes(folder: Path, batch: int, seed: int = 11) -> int:
    """Customer CDC events: inserts in batch 1, then updates (some out of order) and deletes."""
    rng = random.Random(seed * 1000 + batch)
    folder.mkdir(parents=True, exist_ok=True)
    events = []
    base = START + timedelta(days=batch - 1)
    if batch == 1:
        for cid in range(1, 41):
            events.append(_customer(cid, rng, base + timedelta(minutes=cid), "INSERT"))
    else:
        for cid in rng.sample(range(1, 41), 10):
            events.append(_customer(cid, rng, base + timedelta(hours=2, minutes=cid), "UPDATE"))
        for cid in (batch, batch + 20):
            events.append({"customer_id": cid, "name": None, "email": None, "country": None,
                           "updated_at": (base + timedelta(hours=3)).isoformat(), "operation": "DELETE"})
        late = _customer(39, rng, base - timedelta(days=1), "UPDATE")  # arrives late: older than what we have
        events.append(late)
    rng.shuffle(events)
    (folder / f"customers-b{batch:03d}.json").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    return len(events)


def _customer(cid: int, rng: random.Random, when: datetime, op: str) -> dict[str, object]:
    return {"customer_id": cid, "name": f"Customer {cid}", "email": f"c{cid}.{rng.randint(1, 9)}@example.com",
            "country": rng.choice(COUNTRIES), "updated_at": when.isoformat(), "operation": op}


def run_demo(spec_path: Path | None = None) -> int:
    """Generate batch 1, run an update, land batch 2, run again (incremental), then show the results."""
    from framework.runner.update import UpdateOptions, run_update
    from framework.spec import load_spec

    spec = load_spec(spec_path or project_root() / "conf" / "sample.yaml")
    if not isinstance(spec.storage, Path):
        raise ObjectStoreError(f"the demo writes its sample files next to a local storage root, not {spec.storage}",
                               code="OBJECT_STORE_UNSUPPORTED", path=str(spec.storage))
    landing = Path(spec.paths.get("dbfs:/mnt/landing", str(spec.storage.parent / "landing")))
    if not landing.is_absolute():
        landing = spec.root / landing
    for folder in (landing, spec.storage):
        if folder.exists():
            shutil.rmtree(folder)
    ok = True
    for batch in (1, 2):
        orders = write_orders(landing / "orders", batch)
        customers = write_customer_changes(landing / "customers", batch)
        print(f"\n== landed batch {batch}: {orders} order records, {customers} customer changes in {landing}",
              file=sys.stderr)
        result = run_update(spec, UpdateOptions(write_report=True))
        ok = ok and result.succeeded
    from framework.runner.session import get_or_create_session

    spark = get_or_create_session()
    print(f"\nGold table {spec.schema}.daily_revenue_by_country (first rows):")
    spark.read.table(f"{spec.schema}.daily_revenue_by_country").orderBy("order_date", "country").show(8)
    print(f"Query the tables with spark.read.table('{spec.schema}.<name>') or delta.`{spec.tables_dir}/<name>`")
    return 0 if ok else 1
