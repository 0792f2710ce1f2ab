"""The CDC reference model (tests/integration/cdc/reference_model.py) gives Databricks' documented worked examples
exactly (reference/SEMANTICS.md §3), so the property test compares the framework with the documentation."""

from __future__ import annotations

from tests.integration.cdc import reference_model as model

# Databricks' CDC example (userId, name, city, operation, sequenceNum), in arrival order
USERS = [
    (124, "Raul", "Oaxaca", "INSERT", 1),
    (123, "Isabel", "Monterrey", "INSERT", 1),
    (125, "Mercedes", "Tijuana", "INSERT", 2),
    (126, "Lily", "Cancun", "INSERT", 2),
    (123, None, None, "DELETE", 6),
    (125, "Mercedes", "Guadalajara", "UPDATE", 6),
    (125, "Mercedes", "Mexicali", "UPDATE", 5),
    (123, "Isabel", "Chihuahua", "UPDATE", 5),
]


def events(rows: list[tuple]) -> list[model.Event]:  # type: ignore[type-arg]
    ops = {"INSERT": model.UPSERT, "UPDATE": model.UPSERT, "DELETE": model.DELETE, "TRUNCATE": model.TRUNCATE}
    return [model.Event(key, seq, ops[op], (name, city)) for key, name, city, op, seq in rows]


def test_scd1_example_and_truncate() -> None:
    assert sorted(r[:-1] for r in model.scd1(events(USERS))) == [
        (124, "Raul", "Oaxaca"),
        (125, "Mercedes", "Guadalajara"),
        (126, "Lily", "Cancun"),
    ]
    truncated = events([*USERS, (None, None, None, "TRUNCATE", 3)])
    assert [r[:-1] for r in model.scd1(truncated)] == [(125, "Mercedes", "Guadalajara")]


def test_scd2_example() -> None:
    assert sorted(model.scd2(events(USERS), tracked=(0, 1)), key=repr) == sorted(
        [
            (123, "Isabel", "Monterrey", 1, 5),
            (123, "Isabel", "Chihuahua", 5, 6),
            (124, "Raul", "Oaxaca", 1, None),
            (125, "Mercedes", "Tijuana", 2, 5),
            (125, "Mercedes", "Mexicali", 5, 6),
            (125, "Mercedes", "Guadalajara", 6, None),
            (126, "Lily", "Cancun", 2, None),
        ],
        key=repr,
    )


def test_scd2_example_with_city_untracked_and_issue_39s_late_event() -> None:
    documented = sorted(
        [
            (123, "Isabel", "Chihuahua", 1, 6),
            (124, "Raul", "Oaxaca", 1, None),
            (125, "Mercedes", "Guadalajara", 2, None),
            (126, "Lily", "Cancun", 2, None),
        ],
        key=repr,
    )
    assert sorted(model.scd2(events(USERS), tracked=(0,)), key=repr) == documented
    # a late event (sequence 3 < 6) that changes only the untracked city: the newest city stays
    late = events([*USERS, (125, "Mercedes", "Merida", "UPDATE", 3)])
    assert sorted(model.scd2(late, tracked=(0,)), key=repr) == documented
