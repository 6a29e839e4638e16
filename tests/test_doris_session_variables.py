"""Doris's session variables: accepted by SET (session and global), shown by SHOW VARIABLES."""

import pytest

from tests.harness import mariadb, run


@pytest.mark.parametrize(
    "name, value, shown",
    [
        ("enable_nereids_planner", "false", "false"),
        ("enable_fallback_to_original_planner", "ON", "true"),
        ("show_hidden_columns", "1", "true"),
        ("parallel_pipeline_task_num", "4", "4"),
        ("batch_size", "1024", "1024"),
        ("runtime_filter_mode", "'LOCAL'", "LOCAL"),
        ("insert_max_filter_ratio", "0.5", "0.5"),
    ],
)
def test_set_and_show_a_doris_session_variable(quire, root, name, value, shown):
    run(root, f"SET {name} = {value}")
    assert run(root, f"SHOW VARIABLES LIKE '{name}'") == ((name, shown),)
    done = mariadb(quire, "--batch", "-e", f"SET {name} = {value}; SHOW VARIABLES LIKE '{name}'")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [f"{name}\t{shown}"]


def test_doris_defaults_and_set_global(quire, root):
    assert run(root, "SHOW VARIABLES LIKE 'enable_insert_strict'") == (
        ("enable_insert_strict", "true"),
    )
    assert run(root, "SHOW VARIABLES LIKE 'parallel_fragment_exec_instance_num'") == (
        ("parallel_fragment_exec_instance_num", "8"),
    )
    run(root, "SET GLOBAL enable_profile = true")
    assert run(root, "SHOW GLOBAL VARIABLES LIKE 'enable_profile'") == (("enable_profile", "true"),)
    run(root, "SET GLOBAL enable_profile = false")
