"""Every conformance scenario through Python's `wasmtime`: one test per scenario file."""

import pytest

import runner


@pytest.mark.parametrize("path", runner.scenario_files(), ids=lambda p: p.stem)
def test_scenario(path):
    failure = None
    try:
        runner.run_scenario(path)
    except runner.StepFailed as e:
        failure = str(e)
    if failure:
        pytest.fail(failure, pytrace=False)


def test_there_are_scenarios():
    assert runner.scenario_files(), f"no scenarios in {runner.SCENARIOS}"
