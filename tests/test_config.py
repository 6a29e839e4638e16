import re

import pytest

from be.config import BE_KEYS, DEFAULT_BE_CONF, ConfigError, read_conf_file
from fe.config import DEFAULT_FE_CONF, FE_KEYS, load_config
from tests.harness import mariadb, run, run_quire


@pytest.mark.parametrize(
    ("path", "keys"),
    [(DEFAULT_FE_CONF, FE_KEYS), (DEFAULT_BE_CONF, BE_KEYS)],
    ids=["fe.conf", "be.conf"],
)
def test_conf_files_list_every_key_with_its_default(path, keys):
    values = read_conf_file(path)
    assert set(values) == {key.name for key in keys}, path
    for key in keys:
        assert key.parse(values[key.name]) == key.default, key.name
    lines = path.read_text().splitlines()
    for key in keys:
        index = next(i for i, line in enumerate(lines) if line.startswith(f"{key.name} ="))
        assert lines[index - 1].startswith("#"), f"{key.name} has no comment line"
        comment = []
        while lines[index - 1].startswith("#"):
            index -= 1
            comment.insert(0, lines[index].removeprefix("#").strip())
        assert key.comment == " ".join(comment), f"{key.name}: the code's comment is not the file's"


def test_override_and_unknown_key():
    config = load_config(overrides=["query_port=9131", "meta_delay_toleration_second=10"])
    assert config["query_port"] == 9131
    with pytest.raises(ConfigError, match="unknown configuration key 'no_such_key'"):
        load_config(overrides=["no_such_key=1"])
    with pytest.raises(ConfigError, match="must be an integer"):
        load_config(overrides=["query_port=abc"])


def test_runtime_changes_only_for_mutable_keys():
    config = load_config()
    config.set("edit_log_roll_num", "10")
    assert config["edit_log_roll_num"] == 10
    with pytest.raises(ConfigError, match="cannot be changed at run time"):
        config.set("query_port", "1")


@pytest.mark.parametrize(
    "args",
    [["--help"], ["up", "--help"], ["fe", "--help"], ["stop", "--help"]],
    ids=["quire", "up", "fe", "stop"],
)
def test_cli_help(args):
    result = run_quire(*args)
    assert result.returncode == 0 and "usage: quire" in result.stdout


def test_cli_bad_override():
    result = run_quire("up", "--override", "bogus=1")
    assert result.returncode == 2
    assert "unknown configuration key 'bogus'" in result.stderr


LOGGED_IN = re.compile(r"DEBUG .*connection \d+: root@\S+ logged in")


def logins_logged_after_a_new_connection(node) -> int:
    """A new connection's login is logged (at DEBUG) before its first statement runs."""
    connection = node.connect()
    assert run(connection, "SELECT 1") == ((1,),)
    connection.close()
    return len(LOGGED_IN.findall(node.log_file.read_text()))


def test_sys_log_level_changes_the_process_log_level_at_run_time(fresh_quire):
    node = fresh_quire.start()
    root = node.connect()
    assert logins_logged_after_a_new_connection(node) == 0
    done = mariadb(node, "--batch", "-e", "ADMIN SET FRONTEND CONFIG ('sys_log_level' = 'debug')")
    assert done.returncode == 0, done.stderr
    assert logins_logged_after_a_new_connection(node) == 1
    assert run(root, "ADMIN SHOW FRONTEND CONFIG LIKE 'sys_log_level'")[0][:2] == (
        "sys_log_level",
        "DEBUG",
    )
    run(root, "ADMIN SET FRONTEND CONFIG ('sys_log_level' = 'WARN')")
    assert logins_logged_after_a_new_connection(node) == 1
    done = mariadb(node, "--batch", "-e", "ADMIN SET FRONTEND CONFIG ('sys_log_level' = 'LOUD')")
    assert done.returncode == 1
    assert "ERROR 1105 (HY000)" in done.stderr and "sys_log_level must be one of" in done.stderr
    root.close()
