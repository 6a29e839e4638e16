"""Doris's secondary indexes: CREATE TABLE's INDEX clauses, CREATE INDEX, ALTER TABLE ADD / DROP
INDEX and DROP INDEX keep or drop them with their table; SHOW INDEX lists them with Doris's
columns and SHOW CREATE TABLE writes them back (its text makes the same table again); a column
renamed or dropped takes its indexes along; they survive a restart; Doris's refusals are 1105
with Doris's words; ALTER is needed to make one. Through PyMySQL and the mariadb CLI."""

import pytest

from tests.harness import error_of, mariadb, run

SHOW_INDEX_TITLES = [
    "Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation",
    "Cardinality", "Sub_part", "Packed", "Null", "Index_type", "Comment", "Properties",
]  # fmt: skip


@pytest.fixture(scope="module")
def database(root):
    run(root, "CREATE DATABASE searching")


@pytest.fixture
def db(quire, database):
    """A connection of the test's own (the first test restarts the node)."""
    connection = quire.connect(database="searching")
    yield connection
    connection.close()


def shown(connection, table: str) -> list[tuple]:
    """(Key_name, Column_name, Index_type, Comment, Properties) of each index SHOW INDEX lists."""
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW INDEX FROM {table}")
        assert [column[0] for column in cursor.description] == SHOW_INDEX_TITLES
        return [(r[2], r[4], r[10], r[11], r[12]) for r in cursor.fetchall()]


def test_indexes_are_kept_shown_and_written_back(quire, db):
    run(
        db,
        "CREATE TABLE docs (id INT, title VARCHAR(100), body STRING, n INT, "
        "INDEX idx_body (body) USING INVERTED PROPERTIES('parser' = 'english') COMMENT 'words', "
        "KEY k_n (n)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2",
    )  # a MySQL KEY: accepted, not kept
    run(db, "CREATE INDEX idx_n ON docs (n)")  # Doris's default kind: INVERTED
    run(
        db,
        "ALTER TABLE docs ADD INDEX idx_title (title) USING NGRAM_BF "
        "PROPERTIES('gram_size' = '3', 'bf_size' = '1024') COMMENT 'grams'",
    )
    expected = [
        ("idx_body", "body", "INVERTED", "words", '("parser" = "english", "lower_case" = "true")'),
        ("idx_n", "n", "INVERTED", "", ""),
        ("idx_title", "title", "NGRAM_BF", "grams", '("gram_size" = "3", "bf_size" = "1024")'),
    ]
    assert shown(db, "docs") == expected
    text = run(db, "SHOW CREATE TABLE docs")[0][1]
    assert (
        '  INDEX idx_body (`body`) USING INVERTED PROPERTIES("parser" = "english", '
        '"lower_case" = "true") COMMENT \'words\',\n'
        "  INDEX idx_n (`n`) USING INVERTED,\n"
        '  INDEX idx_title (`title`) USING NGRAM_BF PROPERTIES("gram_size" = "3", '
        '"bf_size" = "1024") COMMENT \'grams\'\n) ENGINE=OLAP'
    ) in text, text
    assert "quire." not in text
    run(db, text.replace("CREATE TABLE `docs`", "CREATE TABLE `docs_again`"))
    assert shown(db, "docs_again") == expected
    run(db, "CREATE TABLE docs_copy LIKE docs")
    assert shown(db, "docs_copy") == expected

    run(db, "INSERT INTO docs VALUES (1, 'disk report', 'The disk is full', 7), "
            "(2, 'net report', 'Network down', 8)")  # fmt: skip
    assert run(db, "SELECT id FROM docs WHERE body MATCH_ANY 'disk network' ORDER BY id") == (
        (1,), (2,),
    )  # fmt: skip

    run(db, "ALTER TABLE docs RENAME COLUMN body text_body")
    run(db, "ALTER TABLE docs DROP COLUMN n")
    run(db, "DROP INDEX idx_title ON docs")
    after = [("idx_body", "text_body", "INVERTED", "words", expected[0][4])]
    assert shown(db, "docs") == after
    quire.restart()
    connection = quire.connect(database="searching")
    try:
        assert shown(connection, "docs") == after
        assert shown(connection, "docs_again") == expected
    finally:
        connection.close()
    done = mariadb(quire, "--batch", "searching", "-e", "SHOW INDEX FROM docs")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "\t".join(SHOW_INDEX_TITLES),
        'docs\t\tidx_body\t\ttext_body\t\t\t\t\t\tINVERTED\twords\t("parser" = "english", '
        '"lower_case" = "true")',
    ]


def test_doris_refusals(quire, db):
    run(db, "CREATE TABLE refusing (k INT, v STRING, j JSON, INDEX idx_v (v) USING INVERTED) "
            "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")  # fmt: skip
    refusals = {
        "CREATE INDEX idx_v ON refusing (k)": "index `idx_v` already exist.",
        "CREATE INDEX other ON refusing (v) USING INVERTED": "index for columns (v ) already exist.",
        "CREATE INDEX i ON refusing (k) USING INVERTED PROPERTIES('parser' = 'english')":
            "INVERTED index with parser: english is not supported for column: k of type INT",
        "CREATE INDEX i ON refusing (v) USING INVERTED PROPERTIES('parser' = 'klingon')":
            "Invalid inverted index 'parser' value: klingon",
        "CREATE INDEX i ON refusing (v) USING INVERTED PROPERTIES('colour' = 'red')":
            "Invalid inverted index property key: colour",
        "CREATE INDEX i ON refusing (k) USING NGRAM_BF": "INT is not supported in ngram_bf index",
        "CREATE INDEX i ON refusing (j) USING INVERTED": "JSON is not supported in INVERTED index",
        "CREATE INDEX i ON refusing (k) USING FANCY": "unknown index type FANCY",
        "ALTER TABLE refusing ADD INDEX i (k, v) USING INVERTED":
            "INVERTED index can only apply to a single column.",
        "ALTER TABLE refusing DROP INDEX nope": "index nope does not exist",
        "CREATE TABLE agg (k INT, v INT SUM, INDEX iv (v) USING INVERTED) AGGREGATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 1": "or key columns of AGG_KEYS table. invalid index: iv",
    }  # fmt: skip
    for statement, words in refusals.items():
        code, message = error_of(db, statement)
        assert code == 1105 and words in message, (statement, message)
    assert error_of(db, "CREATE INDEX i ON refusing (nope) USING INVERTED") == (
        1072, "Key column 'nope' doesn't exist in table",
    )  # fmt: skip
    done = mariadb(quire, "--batch", "searching", "-e", "CREATE INDEX idx_v ON refusing (k)")
    assert "ERROR 1105 (HY000)" in done.stderr and "already exist" in done.stderr, done.stderr
    run(db, "CREATE INDEX IF NOT EXISTS idx_v ON refusing (k)")
    run(db, "ALTER TABLE refusing DROP INDEX IF EXISTS nope")
    run(db, "CREATE INDEX kc USING BTREE ON refusing (k, v(4) DESC)")  # MySQL's: not kept
    assert [name for name, *_ in shown(db, "refusing")] == ["idx_v"]


def test_making_an_index_needs_alter(quire, db):
    run(db, "CREATE TABLE guarded (k INT, v STRING) DUPLICATE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 1")  # fmt: skip
    run(db, "CREATE USER IF NOT EXISTS 'reader'@'%' IDENTIFIED BY 'pw'")
    run(db, "GRANT SELECT_PRIV ON searching.guarded TO 'reader'@'%'")
    reader = quire.connect(user="reader", password="pw", database="searching")
    try:
        assert error_of(reader, "CREATE INDEX i ON guarded (v)")[0] == 1142
        assert error_of(reader, "ALTER TABLE guarded ADD INDEX i (v) USING INVERTED")[0] == 1142
        assert shown(reader, "guarded") == []
        assert error_of(reader, "SHOW INDEX FROM docs_again")[0] == 1142
    finally:
        reader.close()


def test_match_on_an_index_without_parser_compares_the_whole_value(quire, db):
    """Doris keeps a whole value as the one term of an INVERTED index with no parser: MATCH_*
    compares it whole there (case and all), and tokenises words elsewhere."""
    run(db, "CREATE TABLE tagged (id INT, tag VARCHAR(30), msg STRING, plain STRING, "
            "INDEX it (tag) USING INVERTED, "
            "INDEX im (msg) USING INVERTED PROPERTIES ('parser' = 'english')) "
            "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")  # fmt: skip
    run(db, "INSERT INTO tagged VALUES (1, 'disk error', 'The Disk is full', 'disk error'), "
            "(2, 'disk', 'network down', 'disk'), (3, 'Disk Error', 'disk error again', 'x')")  # fmt: skip
    answers = {
        "tag MATCH_ANY 'disk error'": [1],
        "tag MATCH_ALL 'disk'": [2],
        "t.tag MATCH_PHRASE 'Disk Error'": [3],
        "tag MATCH_PHRASE_PREFIX 'disk'": [1, 2],
        "msg MATCH_ANY 'disk'": [1, 3],
        "msg MATCH_PHRASE 'disk error'": [3],
        "plain MATCH_ANY 'error'": [1],
    }
    for condition, expected in answers.items():
        sql = f"SELECT t.id FROM tagged t WHERE {condition} ORDER BY t.id"
        assert [row[0] for row in run(db, sql)] == expected, condition
        done = mariadb(quire, "--batch", "--skip-column-names", "searching", "-e", sql)
        assert done.stdout.split() == [str(key) for key in expected], (condition, done.stderr)


def test_mysql_indexes_are_known_by_name_to_drop_index(quire, db):
    run(
        db,
        "CREATE TABLE dumped (id INT NOT NULL, a INT, b VARCHAR(10), PRIMARY KEY (id), "
        "KEY ka (a), KEY (b), KEY (b, a), UNIQUE KEY ub (b), CONSTRAINT cu UNIQUE (a), "
        "KEY ((a + 1)), INDEX iv (b) USING INVERTED)",
    )  # as mysqldump writes a table: MySQL's keys named as MySQL names them (b, b_2, ...)
    assert [name for name, *_ in shown(db, "dumped")] == ["iv"]  # only Doris's are indexes
    assert "ka" not in run(db, "SHOW CREATE TABLE dumped")[0][1]
    run(db, "CREATE INDEX kab USING BTREE ON dumped (a, b)")
    run(db, "ALTER TABLE dumped ADD INDEX kba (b, a)")
    assert error_of(db, "CREATE INDEX kab ON dumped (a, b)") == (1061, "Duplicate key name 'kab'")
    run(db, "CREATE INDEX IF NOT EXISTS kab ON dumped (a, b)")
    for name in ("ka", "b", "ub"):
        run(db, f"DROP INDEX {name} ON dumped")
    run(db, "ALTER TABLE dumped DROP INDEX cu")
    for statement in ("DROP INDEX ka ON dumped", "DROP INDEX nope ON dumped"):
        assert error_of(db, statement)[0] == 1105, statement
    run(db, "DROP INDEX IF EXISTS ka ON dumped")
    done = mariadb(quire, "--batch", "searching", "-e", "DROP INDEX nope ON dumped")
    assert "ERROR 1105 (HY000)" in done.stderr and "nope does not exist" in done.stderr
    assert error_of(
        db, "CREATE TABLE twice (id INT, a INT, KEY k (a), KEY k (id)) DISTRIBUTED BY HASH(id)"
    ) == (1061, "Duplicate key name 'k'")
    quire.restart()
    connection = quire.connect(database="searching")
    try:
        for name in ("b_2", "functional_index", "kab", "kba", "iv"):
            run(connection, f"DROP INDEX {name} ON dumped")
        assert error_of(connection, "DROP INDEX b_2 ON dumped")[0] == 1105
        assert shown(connection, "dumped") == []
    finally:
        connection.close()
