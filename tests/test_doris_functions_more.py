"""Doris's functions Quire answered with ERROR 1305 before (BITAND and the other bitwise ones,
REGEXP_EXTRACT_ALL, STR_TO_MAP, MAP, MASK_FIRST_N, MASK_LAST_N, URL_ENCODE, URL_DECODE,
UUID_NUMERIC, MURMUR_HASH3_64), answered as Doris's documentation and regression tests show them,
through PyMySQL and the mariadb CLI against a real `quire up`, of constants and of a table's
columns."""

import decimal

import pytest

from tests.harness import assert_unknown_function, cli_answers, error_of, mariadb, run

BACKSLASH = "\\"
PUNCTUATION = "~!@#%^&*()<>?,./:{}|[]" + BACKSLASH + "_+-="  # Doris's test_url_encode row 3
PUNCTUATION_SQL = PUNCTUATION.replace(BACKSLASH, BACKSLASH * 2)
PUNCTUATION_ENCODED = "%7E%21%40%23%25%5E%26*%28%29%3C%3E%3F%2C.%2F%3A%7B%7D%7C%5B%5D%5C_%2B-%3D"

ANSWERS = [
    # bitwise, on integers
    ("BITAND(3, 5)", 1),
    ("BITAND(4, 7)", 4),
    ("BITAND(-1, 6)", 6),
    ("BITAND(NULL, 1)", None),
    ("BITOR(3, 5)", 7),
    ("BITOR(4, 7)", 7),
    ("BITOR(1, NULL)", None),
    ("BITXOR(3, 5)", 6),
    ("BITXOR(1, 7)", 6),
    ("BITXOR(NULL, 1)", None),
    ("BITNOT(7)", -8),
    ("BITNOT(-127)", 126),
    ("BITNOT(NULL)", None),
    # a BIGINT's 64 bits shifted as unsigned: 0 for a shift below 0 or past 63
    ("BIT_SHIFT_LEFT(5, 2)", 20),
    ("BIT_SHIFT_LEFT(-5, 2)", -20),
    ("BIT_SHIFT_LEFT(9223372036854775807, 1)", -2),
    ("BIT_SHIFT_LEFT(1, 63)", -9223372036854775808),
    ("BIT_SHIFT_LEFT(1, 64)", 0),
    ("BIT_SHIFT_LEFT(1, -1)", 0),
    ("BIT_SHIFT_LEFT(NULL, 70)", None),
    ("BIT_SHIFT_RIGHT(1024, 3)", 128),
    ("BIT_SHIFT_RIGHT(-1, 1)", 9223372036854775807),
    ("BIT_SHIFT_RIGHT(100, -1)", 0),
    ("BIT_SHIFT_RIGHT(1024, NULL)", None),
    ("BIT_SHIFT_RIGHT(NULL, 3)", None),
    ("BIT_SHIFT_RIGHT(NULL, NULL)", None),
    # the first group of every match, as a text; '' for none or a pattern of no group
    ("REGEXP_EXTRACT_ALL('AbCdE', '([[:lower:]]+)C([[:lower:]]+)')", "['b']"),
    ("REGEXP_EXTRACT_ALL('AbCdEfCg', '([[:lower:]]+)C([[:lower:]]+)')", "['b','f']"),
    (
        'REGEXP_EXTRACT_ALL(\'abc=111, def=222, ghi=333\', \'("[^"]+"|\\\\w+)=("[^"]+"|\\\\w+)\')',
        "['abc','def','ghi']",
    ),
    (
        "REGEXP_EXTRACT_ALL('这是一段中文 This is a passage in English 1234567', "
        "'(\\\\p{Han}+)(.+)')",
        "['这是一段中文']",
    ),
    ("REGEXP_EXTRACT_ALL('ABC', '(\\\\d+)')", ""),
    ("REGEXP_EXTRACT_ALL('abc', 'b')", ""),
    ("REGEXP_EXTRACT_ALL('bab', '(a*)')", "['a']"),  # empty matches are skipped
    ("REGEXP_EXTRACT_ALL(NULL, '([a-z]+)')", None),
    ("REGEXP_EXTRACT_ALL('Hello World', NULL)", None),
    ("REGEXP_EXTRACT_ALL(NULL, NULL)", None),
    # maps, answered as Doris writes them
    ("STR_TO_MAP('a:1,b:2,c:3', ',', ':')", '{"a":"1", "b":"2", "c":"3"}'),
    ("STR_TO_MAP('key1=val1;key2=val2', ';', '=')", '{"key1":"val1", "key2":"val2"}'),
    ("STR_TO_MAP('a=1&b=2&c=3', '&', '=')", '{"a":"1", "b":"2", "c":"3"}'),
    ("STR_TO_MAP('x:10|y:20|z:30', '|', ':')", '{"x":"10", "y":"20", "z":"30"}'),
    ("STR_TO_MAP('a:1,b:2,c:3')", '{"a":"1", "b":"2", "c":"3"}'),
    ("STR_TO_MAP('x:1,y:2,z:')", '{"x":"1", "y":"2", "z":""}'),
    ("STR_TO_MAP('a:1;b:2;c:3', ';')", '{"a":"1", "b":"2", "c":"3"}'),
    ("STR_TO_MAP('a:1...b:2...c:3', '...')", '{"a":"1", "b":"2", "c":"3"}'),
    ("STR_TO_MAP('a::1,b::2', ',', '::')", '{"a":"1", "b":"2"}'),
    ("STR_TO_MAP('')", '{"":null}'),
    ("STR_TO_MAP('a:1,,b:2')", '{"a":"1", "":null, "b":"2"}'),
    ("STR_TO_MAP(',,,')", '{"":null}'),
    ("STR_TO_MAP('a,b:2,c')", '{"a":null, "b":"2", "c":null}'),
    ("STR_TO_MAP('a : 1, b : 2')", '{"a ":" 1", " b ":" 2"}'),
    ("STR_TO_MAP('键1:值1,键2:值2')", '{"键1":"值1", "键2":"值2"}'),
    ("STR_TO_MAP('a:1,b:2,a:3')", '{"b":"2", "a":"3"}'),
    ("STR_TO_MAP('a:1,a:,a:3')", '{"a":"3"}'),
    ("STR_TO_MAP('a:1:2,b:3:4')", '{"a":"1:2", "b":"3:4"}'),
    ("STR_TO_MAP(':::')", '{"":"::"}'),
    ("STR_TO_MAP('key::value')", '{"key":":value"}'),
    ("STR_TO_MAP(':')", '{"":""}'),
    ("STR_TO_MAP(REPEAT('a:1,', 1000))", '{"a":"1"}'),
    ("STR_TO_MAP(NULL)", None),
    ("STR_TO_MAP('a:1', NULL)", None),
    ("STR_TO_MAP('a:1', ',', NULL)", None),
    ("STR_TO_MAP('a:1,b:2')['b']", "2"),
    ("MAP(1, '100', 0.1, 2)", '{1.0:"100", 0.1:"2"}'),
    ("MAP(1, '100', 0.1, 2)[1]", "100"),
    ("MAP()", "{}"),
    ("MAP(1, 2, 2, 11, 1, 3)", "{2:11, 1:3}"),
    ("MAP('a', 1, 'b', 2)", '{"a":1, "b":2}'),
    ("MAP('a', NULL)", '{"a":null}'),
    ("MAP('a', 1, 'b', 2)['b']", 2),
    ("MAP_KEYS(MAP('a', 1, 'b', 2))", '["a", "b"]'),
    # MASK's letters and digits, of the first or last n bytes
    ("MASK_FIRST_N('1234-5678', 4)", "nnnn-5678"),
    ("MASK_FIRST_N('abc123')", "xxxnnn"),
    ("MASK_FIRST_N('Hello', 100)", "Xxxxx"),
    ("MASK_FIRST_N('Hello123', 0)", "Hello123"),
    ("MASK_FIRST_N('user@example.com', 6)", "xxxx@xxample.com"),
    ("MASK_FIRST_N('13812345678', 3)", "nnn12345678"),
    ("MASK_FIRST_N('Abc-123-XYZ', 7)", "Xxx-nnn-XYZ"),
    ("MASK_FIRST_N('ṭṛWorld123', 7)", "ṭṛXorld123"),
    ("MASK_FIRST_N('eeeéèêëìí1234')", "xxxéèêëìínnnn"),
    ("MASK_FIRST_N(NULL, 5)", None),
    ("MASK_LAST_N('1234-5678-8765-4321', 4)", "1234-5678-8765-nnnn"),
    ("MASK_LAST_N('1234-5678-8765-4321', NULL)", None),
    ("MASK_LAST_N('Ab1ṭ', 4)", "Abnṭ"),
    ("MASK_LAST_N('ab', 10)", "xx"),
    ("MASK_LAST_N('Ab-1')", "Xx-n"),
    ("MASK_LAST_N(NULL)", None),
    # Java's URLEncoder and URLDecoder
    ("URL_ENCODE('Doris Q&A')", "Doris+Q%26A"),
    (f"URL_ENCODE('{PUNCTUATION_SQL}')", PUNCTUATION_ENCODED),
    ("URL_ENCODE('/home/doris/directory/')", "%2Fhome%2Fdoris%2Fdirectory%2F"),
    ("URL_ENCODE('ABCDEFGHIJKLMNOPQRSTUWXYZ1234567890')", "ABCDEFGHIJKLMNOPQRSTUWXYZ1234567890"),
    ("URL_ENCODE('中')", "%E4%B8%AD"),
    ("URL_ENCODE('')", ""),
    ("URL_ENCODE(NULL)", None),
    (
        "URL_DECODE('https%3A%2F%2Fdoris.apache.org%2Fzh-CN%2Fdocs%2Fsql-manual"
        "%2Fsql-functions%2Fstring-functions')",
        "https://doris.apache.org/zh-CN/docs/sql-manual/sql-functions/string-functions",
    ),
    (
        "URL_DECODE('~%21%40%23%25%5E%26%2A%28%29%3C%3E%3F%2C.%2F%3A%7B%7D%7C%5B%5D%5C_%2B-%3D')",
        PUNCTUATION,
    ),
    ("URL_DECODE('Doris+Q%26A')", "Doris Q&A"),
    ("URL_DECODE('%E4%B8%AD')", "中"),
    ("URL_DECODE(NULL)", None),
    # Doris's own murmur_hash3_x64_64, each text's seed the hash before it (0 first)
    ("MURMUR_HASH3_64('hello')", -3215607508166160593),
    ("MURMUR_HASH3_64('hello', 'world')", 3583109472027628045),
    ("MURMUR_HASH3_64('hello', 'world', '!')", 1887828212617890932),
    ("MURMUR_HASH3_64('')", 0),
    ("MURMUR_HASH3_64(NULL)", None),
    ("MURMUR_HASH3_64('hello', NULL)", None),
    # longer than a block of 8 bytes: as the same algorithm works it out
    ("MURMUR_HASH3_64('hello world, a text of many blocks')", 1538560526306523617),
]


@pytest.mark.parametrize(("expression", "answer"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_function_answers(root, expression, answer):
    assert run(root, f"SELECT {expression}") == ((answer,),)


def test_answers_through_the_mariadb_cli(quire):
    expressions = [expression for expression, _ in ANSWERS]
    assert cli_answers(quire, expressions) == [_text(answer) for _, answer in ANSWERS]


def _text(answer) -> str:
    return "NULL" if answer is None else str(answer)


WRONG_COUNTS = [
    "BITAND(1)",
    "BITOR(1, 2, 3)",
    "BITXOR(1)",
    "BITNOT()",
    "BIT_SHIFT_LEFT(1)",
    "BIT_SHIFT_RIGHT(1, 2, 3)",
    "MASK_FIRST_N('a', 1, 2)",
    "MASK_LAST_N()",
    "URL_ENCODE('a', 'b')",
    "URL_DECODE()",
    "UUID_NUMERIC(1)",
    "MURMUR_HASH3_64()",
    "REGEXP_EXTRACT_ALL('a', '(a)', 1)",
    "STR_TO_MAP('a', ',', ':', 'x')",
    "MAP('a')",
]


@pytest.mark.parametrize("call", WRONG_COUNTS)
def test_a_wrong_count_of_arguments_is_an_unknown_function(quire, root, call):
    """As for Doris's functions before (PMOD(1)): 1305, the function named in lower case."""
    assert_unknown_function(quire, root, call)


def test_refusals_say_why(quire, root):
    """A negative count of bytes to mask and a % without two hex digits fail, as in Doris;
    a NULL key, which Doris's maps hold and DuckDB's cannot, is refused rather than dropped."""
    _, message = error_of(root, "SELECT MASK_FIRST_N('abc', -1)")
    assert "mask_first_n only accept non-negative input for 2nd argument but got -1" in message
    _, message = error_of(root, "SELECT MASK_LAST_N('abc', -2)")
    assert "mask_last_n only accept non-negative input for 2nd argument but got -2" in message
    _, message = error_of(root, "SELECT URL_DECODE('100%')")
    assert "Illegal hex characters in escape (%) pattern" in message
    assert error_of(root, "SELECT MAP(NULL, 2, 3, NULL)") == (1235, "MAP keys can not be NULL")
    done = mariadb(quire, "--batch", "-e", "SELECT URL_DECODE('%zz')")
    assert done.returncode == 1 and "Illegal hex characters" in done.stderr


def test_uuid_numeric_is_a_new_largeint_each_time(quire, root):
    ((first, second, same),) = run(root, "SELECT UUID_NUMERIC(), UUID_NUMERIC(), 1")
    assert isinstance(first, decimal.Decimal) and first == int(first)
    assert -(2**127) <= first < 2**127 and first != second and same == 1
    done = mariadb(quire, "--batch", "--skip-column-names", "-e", "SELECT UUID_NUMERIC()")
    assert done.returncode == 0, done.stderr
    assert -(2**127) <= int(done.stdout.strip()) < 2**127


def test_functions_of_a_tables_columns(quire, root):
    """Column values go through the engine's own path: each row answered as a constant is, the
    NULL row NULL, UUID_NUMERIC new for each row."""
    run(root, "CREATE DATABASE IF NOT EXISTS more_functions")
    run(
        root,
        "CREATE TABLE more_functions.t (k INT, s STRING, n INT, b BIGINT, p STRING) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    run(
        root,
        "INSERT INTO more_functions.t VALUES "
        "(1, 'a:1,b:2,a:3', 2, 5, '([a-z])'), (2, NULL, NULL, NULL, NULL), "
        "(3, 'Doris Q&A', 0, -1, '(\\\\d)'), (4, 'ṭṛWorld123', 7, 9223372036854775807, 'z(.)')",
    )
    query = (
        "SELECT k, BITAND(b, 3), BITOR(b, n), BITXOR(b, 1), BITNOT(n), BIT_SHIFT_LEFT(b, n), "
        "BIT_SHIFT_RIGHT(b, n), REGEXP_EXTRACT_ALL(s, p), REGEXP_EXTRACT_ALL(s, '([a-z])'), "
        "STR_TO_MAP(s), STR_TO_MAP(s, ',', ':')['a'], MAP(k, s), MAP('k', s, 'n', n), "
        "MASK_FIRST_N(s, n), MASK_LAST_N(s, n), URL_ENCODE(s), URL_DECODE(URL_ENCODE(s)), "
        "MURMUR_HASH3_64(s), MURMUR_HASH3_64(s, p) FROM more_functions.t ORDER BY k"
    )
    rows = [
        (1, 1, 7, 4, -3, 20, 1, "['a','b','a']", "['a','b','a']", '{"b":"2", "a":"3"}', "3",
         '{1:"a:1,b:2,a:3"}', '{"k":"a:1,b:2,a:3", "n":"2"}', "x:1,b:2,a:3", "a:1,b:2,a:n",
         "a%3A1%2Cb%3A2%2Ca%3A3", "a:1,b:2,a:3", 3205249608821943633, -842763382514578516),
        (2, None, None, None, None, None, None, None, None, None, None, "{2:null}",
         '{"k":null, "n":null}', None, None, None, None, None, None),
        (3, 3, -1, -2, -1, -1, -1, "", "['o','r','i','s']", '{"Doris Q&A":null}', None,
         '{3:"Doris Q&A"}', '{"k":"Doris Q&A", "n":"0"}', "Doris Q&A", "Doris Q&A",
         "Doris+Q%26A", "Doris Q&A", 4748748501084280113, 1098846140238030787),
        (4, 3, 9223372036854775807, 9223372036854775806, -8, -128, 72057594037927935, "",
         "['o','r','l','d']", '{"ṭṛWorld123":null}', None, '{4:"ṭṛWorld123"}',
         '{"k":"ṭṛWorld123", "n":"7"}', "ṭṛXorld123", "ṭṛWxxxxnnn", "%E1%B9%AD%E1%B9%9BWorld123",
         "ṭṛWorld123", 5868531726974319243, 188315027007186149),
    ]  # fmt: skip
    assert [list(row) for row in run(root, query)] == [list(row) for row in rows]
    done = mariadb(quire, "--batch", "--raw", "--skip-column-names", "-e", query)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["\t".join(map(_text, row)) for row in rows]
    made = run(root, "SELECT k, UUID_NUMERIC() FROM more_functions.t ORDER BY k")
    assert [k for k, _ in made] == [1, 2, 3, 4] and len({u for _, u in made}) == 4
