"""Source offsets of streaming flows (the event log's ``flow_progress.sources``), from Spark's progress reports."""

from __future__ import annotations

from types import SimpleNamespace

from framework.runner.results import FlowResult, add_sources, source_offsets


def _progress(rows: int, start: str | None, end: str) -> SimpleNamespace:
    source = SimpleNamespace(description="PythonMicroBatchStream@1", startOffset=start, endOffset=end,
                             numInputRows=rows)
    return SimpleNamespace(numInputRows=rows, sources=[source])


def test_offsets_run_from_the_first_batch_with_data_to_the_last() -> None:
    progresses = [_progress(3, None, '{"watermark": "a", "nullRows": 0}'),
                  _progress(0, '{"watermark": "a", "nullRows": 0}', '{"watermark": "a", "nullRows": 0}'),
                  _progress(2, '{"watermark": "a", "nullRows": 0}', '{"watermark": "b", "nullRows": 4}')]
    assert source_offsets(progresses) == [{"description": "PythonMicroBatchStream@1", "start_offset": None,
                                           "end_offset": {"watermark": "b", "nullRows": 4}, "num_input_rows": 5}]


def test_a_run_that_read_nothing_reports_no_source() -> None:
    assert source_offsets([_progress(0, '{"x": 1}', '{"x": 1}')]) == []


def test_two_runs_of_a_flow_keep_the_first_start_and_the_last_end() -> None:
    first = source_offsets([_progress(1, "0", "1")])
    second = source_offsets([_progress(4, "1", "7")])
    second[0]["description"] = "PythonMicroBatchStream@2"  # another query object: merged by position
    assert add_sources(first, second) == [{"description": "PythonMicroBatchStream@1", "start_offset": 0,
                                           "end_offset": 7, "num_input_rows": 5}]
    result = FlowResult("f", "t", "stream", sources=first)
    result.add(FlowResult("f", "t", "stream", sources=second))
    assert result.sources[0]["end_offset"] == 7
    assert first[0]["end_offset"] == 1  # the parts are not changed
