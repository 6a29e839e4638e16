"""Prepared statements against a real `quire up`: typed parameters are bound into the query parsed
at prepare time, so a huge parameter is never written into SQL text and tokenized again."""

import threading
from decimal import Decimal

import mysql.connector

from tests.harness import run, wait_until

HUGE_DIGITS = 4_000_000  # a DECIMAL parameter of 4 MB, within max_allowed_packet (16 MB)
OTHER_QUERIES = 20


def connector(quire):
    return mysql.connector.connect(
        host="127.0.0.1", port=quire.query_port, user="root", password="", use_pure=True
    )


def test_huge_decimal_and_string_parameters_answer_without_holding_up_others(quire, root):
    huge = Decimal("9" * HUGE_DIGITS + ".5")
    text = "é" * HUGE_DIGITS
    answers = []
    failures = []

    def execute_huge():
        connection = connector(quire)
        try:
            cursor = connection.cursor(prepared=True)
            cursor.execute("SELECT ?", (huge,))
            answers.append(cursor.fetchall())
            cursor.execute("SELECT CHAR_LENGTH(?), ?", (text, text))
            answers.append(cursor.fetchall())
        except Exception as error:  # reported by the assertions below
            failures.append(error)
        finally:
            connection.close()

    worker = threading.Thread(target=execute_huge)
    worker.start()
    for _ in range(OTHER_QUERIES):
        assert run(root, "SELECT 1") == ((1,),)
    wait_until(lambda: not worker.is_alive(), 120, "the huge prepared statements to finish")
    assert not failures, failures
    assert answers == [[(huge,)], [(HUGE_DIGITS, text)]]


def test_decimal_parameter_written_out_past_max_allowed_packet_is_refused(quire):
    connection = connector(quire)
    try:
        cursor = connection.cursor(prepared=True)
        try:
            cursor.execute("SELECT ?", (Decimal("1E+100000000"),))
            cursor.fetchall()
            raise AssertionError("a decimal of 100,000,001 digits was accepted")
        except mysql.connector.Error as error:
            assert (error.errno, error.sqlstate) == (1153, "08S01"), error
    finally:
        connection.close()


def test_prepared_queries_bind_every_parameter_type(quire):
    connection = connector(quire)
    try:
        cursor = connection.cursor(prepared=True)
        cursor.execute("SELECT ? - ?, ?, ?, ? IS NULL", (5, -3, -1.5, "it's", None))
        assert cursor.fetchall() == [(8, -1.5, "it's", 1)]
        cursor.execute("SELECT ? IN (?, ?, ?)", (2, 1, 2, 3))
        assert cursor.fetchall() == [(1,)]
    finally:
        connection.close()
