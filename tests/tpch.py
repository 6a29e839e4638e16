"""TPC-H for tests/test_tpch.py and tests/bench/bench_tpch.py: the data (tpchgen-cli's Parquet),
the eight tables as Doris DDL, a parallel load through the MySQL front, the 22 queries in MySQL's
dialect with the specification's default substitution parameters, and the comparison of answers.
"""

from __future__ import annotations

import datetime
import decimal
import math
import multiprocessing
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pymysql

TABLES = {
    "region": (
        "r_regionkey BIGINT NOT NULL, r_name CHAR(25) NOT NULL, r_comment VARCHAR(152) NOT NULL",
        "r_regionkey",
        1,
    ),
    "nation": (
        "n_nationkey BIGINT NOT NULL, n_name CHAR(25) NOT NULL, n_regionkey BIGINT NOT NULL, "
        "n_comment VARCHAR(152) NOT NULL",
        "n_nationkey",
        1,
    ),
    "supplier": (
        "s_suppkey BIGINT NOT NULL, s_name CHAR(25) NOT NULL, s_address VARCHAR(40) NOT NULL, "
        "s_nationkey BIGINT NOT NULL, s_phone CHAR(15) NOT NULL, s_acctbal DECIMAL(15,2) NOT NULL, "
        "s_comment VARCHAR(101) NOT NULL",
        "s_suppkey",
        2,
    ),
    "customer": (
        "c_custkey BIGINT NOT NULL, c_name VARCHAR(25) NOT NULL, c_address VARCHAR(40) NOT NULL, "
        "c_nationkey BIGINT NOT NULL, c_phone CHAR(15) NOT NULL, c_acctbal DECIMAL(15,2) NOT NULL, "
        "c_mktsegment CHAR(10) NOT NULL, c_comment VARCHAR(117) NOT NULL",
        "c_custkey",
        4,
    ),
    "part": (
        "p_partkey BIGINT NOT NULL, p_name VARCHAR(55) NOT NULL, p_mfgr CHAR(25) NOT NULL, "
        "p_brand CHAR(10) NOT NULL, p_type VARCHAR(25) NOT NULL, p_size INT NOT NULL, "
        "p_container CHAR(10) NOT NULL, p_retailprice DECIMAL(15,2) NOT NULL, "
        "p_comment VARCHAR(23) NOT NULL",
        "p_partkey",
        4,
    ),
    "partsupp": (
        "ps_partkey BIGINT NOT NULL, ps_suppkey BIGINT NOT NULL, ps_availqty INT NOT NULL, "
        "ps_supplycost DECIMAL(15,2) NOT NULL, ps_comment VARCHAR(199) NOT NULL",
        "ps_partkey, ps_suppkey",
        4,
    ),
    "orders": (
        "o_orderkey BIGINT NOT NULL, o_custkey BIGINT NOT NULL, o_orderstatus CHAR(1) NOT NULL, "
        "o_totalprice DECIMAL(15,2) NOT NULL, o_orderdate DATE NOT NULL, "
        "o_orderpriority CHAR(15) NOT NULL, o_clerk CHAR(15) NOT NULL, "
        "o_shippriority INT NOT NULL, o_comment VARCHAR(79) NOT NULL",
        "o_orderkey",
        8,
    ),
    "lineitem": (
        "l_orderkey BIGINT NOT NULL, l_partkey BIGINT NOT NULL, l_suppkey BIGINT NOT NULL, "
        "l_linenumber INT NOT NULL, l_quantity DECIMAL(15,2) NOT NULL, "
        "l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL, "
        "l_tax DECIMAL(15,2) NOT NULL, l_returnflag CHAR(1) NOT NULL, "
        "l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, "
        "l_receiptdate DATE NOT NULL, l_shipinstruct CHAR(25) NOT NULL, "
        "l_shipmode CHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL",
        "l_orderkey, l_partkey, l_suppkey, l_linenumber",
        8,
    ),
}

ROWS_PER_INSERT = 2000  # rows of one multi-row INSERT statement
ROWS_PER_TASK = 40_000  # rows a loading process reads from Parquet and sends in one go


def create_table(name: str) -> str:
    columns, key, buckets = TABLES[name]
    first = key.split(",")[0]
    return (
        f"CREATE TABLE {name} ({columns}) DUPLICATE KEY({key}) "
        f"DISTRIBUTED BY HASH({first}) BUCKETS {buckets}"
    )


def generate(folder: Path, scale: float) -> Path:
    """The eight tables as <folder>/<table>.parquet (kept when already there)."""
    folder.mkdir(parents=True, exist_ok=True)
    if all((folder / f"{name}.parquet").exists() for name in TABLES):
        return folder
    command = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    subprocess.run(
        [command, "parquet", "-s", str(scale), "-o", str(folder), "--overwrite"],
        check=True,
        capture_output=True,
    )
    return folder


# Loading -------------------------------------------------------------------------------------


def _literal(value) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, datetime.date):
        return f"'{value.isoformat()}'"
    return str(value)


def insert_statements(table: str, path: Path, group: int, start: int, stop: int) -> list[str]:
    """INSERTs of rows start..stop of one row group of the table's Parquet file."""
    rows = pq.ParquetFile(path).read_row_group(group).slice(start, stop - start)
    columns = [column.to_pylist() for column in rows.columns]
    statements = []
    for begin in range(0, rows.num_rows, ROWS_PER_INSERT):
        end = min(begin + ROWS_PER_INSERT, rows.num_rows)
        values = [
            "(" + ", ".join([_literal(column[index]) for column in columns]) + ")"
            for index in range(begin, end)
        ]
        statements.append(f"INSERT INTO {table} VALUES " + ", ".join(values))
    return statements


def _tasks(path: Path) -> list[tuple[int, int, int]]:
    """(row group, start, stop) pieces of at most ROWS_PER_TASK rows."""
    metadata = pq.ParquetFile(path).metadata
    tasks = []
    for group in range(metadata.num_row_groups):
        rows = metadata.row_group(group).num_rows
        tasks += [
            (group, start, min(start + ROWS_PER_TASK, rows))
            for start in range(0, rows, ROWS_PER_TASK)
        ]
    return tasks


_connection = None


def _load_task(task: tuple) -> int:
    global _connection
    port, database, table, path, group, start, stop = task
    if _connection is None:
        _connection = pymysql.connect(
            host="127.0.0.1", port=port, user="root", database=database, autocommit=True
        )
    with _connection.cursor() as cursor:
        for statement in insert_statements(table, Path(path), group, start, stop):
            cursor.execute(statement)
    return stop - start


def load(
    port: int,
    database: str,
    folder: Path,
    connections: int,
    progress: Callable[[str, int, int, float], None] | None = None,
) -> dict[str, int]:
    """CREATE DATABASE and the tables, then every table's rows through batched multi-row
    INSERTs from `connections` processes at once. progress(table, done, total, seconds)."""
    connection = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS {database}")
        cursor.execute(f"USE {database}")
        for name in TABLES:
            cursor.execute(create_table(name))
    connection.close()
    counts = {}
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    with context.Pool(connections) as pool:
        for name in TABLES:
            path = folder / f"{name}.parquet"
            total = pq.ParquetFile(path).metadata.num_rows
            tasks = [(port, database, name, str(path), *piece) for piece in _tasks(path)]
            done = 0
            for rows in pool.imap_unordered(_load_task, tasks):
                done += rows
                if progress is not None:
                    progress(name, done, total, time.monotonic() - started)
            counts[name] = total
    return counts


# Queries -------------------------------------------------------------------------------------


def queries(scale: float) -> dict[int, str]:
    """The 22 queries, as a Doris user sends them (MySQL's dialect), with the specification's
    default substitution parameters (Q11's fraction is 0.0001 / scale)."""
    fraction = f"{0.0001 / scale:.10f}"
    return {
        1: """
select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
    avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
    count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus""",
        2: """
select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = 15
    and p_type like '%BRASS' and s_nationkey = n_nationkey and n_regionkey = r_regionkey
    and r_name = 'EUROPE'
    and ps_supplycost = (
        select min(ps_supplycost) from partsupp, supplier, nation, region
        where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
            and n_regionkey = r_regionkey and r_name = 'EUROPE')
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100""",
        3: """
select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate,
    o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
    and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10""",
        4: """
select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-07-01' + interval '3' month
    and exists (
        select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority""",
        5: """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
    and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
    and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
    and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc""",
        6: """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
    and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24""",
        7: """
select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
    select n1.n_name as supp_nation, n2.n_name as cust_nation,
        extract(year from l_shipdate) as l_year,
        l_extendedprice * (1 - l_discount) as volume
    from supplier, lineitem, orders, customer, nation n1, nation n2
    where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
        and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
        and ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY')
            or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
        and l_shipdate between date '1995-01-01' and date '1996-12-31'
) as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year""",
        8: """
select o_year,
    sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (
    select extract(year from o_orderdate) as o_year,
        l_extendedprice * (1 - l_discount) as volume, n2.n_name as nation
    from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
    where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey
        and o_custkey = c_custkey and c_nationkey = n1.n_nationkey
        and n1.n_regionkey = r_regionkey and r_name = 'AMERICA'
        and s_nationkey = n2.n_nationkey
        and o_orderdate between date '1995-01-01' and date '1996-12-31'
        and p_type = 'ECONOMY ANODIZED STEEL'
) as all_nations
group by o_year
order by o_year""",
        9: """
select nation, o_year, sum(amount) as sum_profit
from (
    select n_name as nation, extract(year from o_orderdate) as o_year,
        l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
    from part, supplier, lineitem, partsupp, orders, nation
    where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey
        and p_partkey = l_partkey and o_orderkey = l_orderkey and s_nationkey = n_nationkey
        and p_name like '%green%'
) as profit
group by nation, o_year
order by nation, o_year desc""",
        10: """
select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal,
    n_name, c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01'
    and o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R'
    and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20""",
        11: f"""
select ps_partkey, sum(ps_supplycost * ps_availqty) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (
    select sum(ps_supplycost * ps_availqty) * {fraction}
    from partsupp, supplier, nation
    where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY')
order by value desc""",
        12: """
select l_shipmode,
    sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end)
        as high_line_count,
    sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end)
        as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP')
    and l_commitdate < l_receiptdate and l_shipdate < l_commitdate
    and l_receiptdate >= date '1994-01-01'
    and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode
order by l_shipmode""",
        13: """
select c_count, count(*) as custdist
from (
    select c_custkey, count(o_orderkey) as c_count
    from customer left outer join orders
        on c_custkey = o_custkey and o_comment not like '%special%requests%'
    group by c_custkey
) as c_orders
group by c_count
order by custdist desc, c_count desc""",
        14: """
select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount)
        else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
    and l_shipdate < date '1995-09-01' + interval '1' month""",
        15: """
with revenue0 as (
    select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue
    from lineitem
    where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-01-01' + interval '3' month
    group by l_suppkey)
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue0
where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) from revenue0)
order by s_suppkey""",
        16: """
select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey and p_brand <> 'Brand#45' and p_type not like 'MEDIUM POLISHED%'
    and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
    and ps_suppkey not in (
        select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size""",
        17: """
select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
    and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)""",
        18: """
select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (
        select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300)
    and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
limit 100""",
        19: """
select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem, part
where (p_partkey = l_partkey and p_brand = 'Brand#12'
        and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
        and l_quantity >= 1 and l_quantity <= 1 + 10 and p_size between 1 and 5
        and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
    or (p_partkey = l_partkey and p_brand = 'Brand#23'
        and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
        and l_quantity >= 10 and l_quantity <= 10 + 10 and p_size between 1 and 10
        and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
    or (p_partkey = l_partkey and p_brand = 'Brand#34'
        and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
        and l_quantity >= 20 and l_quantity <= 20 + 10 and p_size between 1 and 15
        and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')""",
        20: """
select s_name, s_address
from supplier, nation
where s_suppkey in (
        select ps_suppkey from partsupp
        where ps_partkey in (select p_partkey from part where p_name like 'forest%')
            and ps_availqty > (
                select 0.5 * sum(l_quantity) from lineitem
                where l_partkey = ps_partkey and l_suppkey = ps_suppkey
                    and l_shipdate >= date '1994-01-01'
                    and l_shipdate < date '1994-01-01' + interval '1' year))
    and s_nationkey = n_nationkey and n_name = 'CANADA'
order by s_name""",
        21: """
select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
    and l1.l_receiptdate > l1.l_commitdate
    and exists (
        select * from lineitem l2
        where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
    and not exists (
        select * from lineitem l3
        where l3.l_orderkey = l1.l_orderkey and l3.l_suppkey <> l1.l_suppkey
            and l3.l_receiptdate > l3.l_commitdate)
    and s_nationkey = n_nationkey and n_name = 'SAUDI ARABIA'
group by s_name
order by numwait desc, s_name
limit 100""",
        22: """
select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (
    select substring(c_phone from 1 for 2) as cntrycode, c_acctbal
    from customer
    where substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17')
        and c_acctbal > (
            select avg(c_acctbal) from customer
            where c_acctbal > 0.00
                and substring(c_phone, 1, 2) in ('13', '31', '23', '29', '30', '18', '17'))
        and not exists (select * from orders where o_custkey = c_custkey)
) as custsale
group by cntrycode
order by cntrycode""",
    }


# DuckDB direct and the comparison ------------------------------------------------------------


def duckdb_over_parquet(folder: Path, threads: int | None = None):
    """A DuckDB connection with each table a view over its Parquet file."""
    import duckdb

    connection = duckdb.connect(":memory:")
    if threads is not None:
        connection.execute(f"SET threads = {threads}")
    for name in TABLES:
        path = str(folder / f"{name}.parquet").replace("'", "''")
        connection.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    return connection


RELATIVE_TOLERANCE = 1e-9


def same_value(ours, theirs) -> bool:
    if ours is None or theirs is None:
        return ours is theirs
    if isinstance(ours, float) or isinstance(theirs, float):
        return math.isclose(float(ours), float(theirs), rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)
    if isinstance(ours, decimal.Decimal) or isinstance(theirs, decimal.Decimal):
        return decimal.Decimal(ours) == decimal.Decimal(theirs)
    if isinstance(ours, str) and isinstance(theirs, str):
        return ours.rstrip() == theirs.rstrip()
    return ours == theirs


def _sort_key(row: tuple) -> tuple:
    return tuple(
        (2, 0.0, "")
        if value is None
        else (0, float(value), "")
        if isinstance(value, int | float | decimal.Decimal)
        else (1, 0.0, str(value).rstrip())
        for value in row
    )


def same_rows(ours: list[tuple], theirs: list[tuple]) -> bool:
    return len(ours) == len(theirs) and all(
        len(mine) == len(other) and all(map(same_value, mine, other))
        for mine, other in zip(ours, theirs, strict=True)
    )


def differences(ours: list[tuple], theirs: list[tuple], limit: int = 3) -> list[str]:
    """How two answers differ: empty when they are equal row by row in order, or equal once
    sorted (rows that tie on the ORDER BY terms may come in either order)."""
    if same_rows(ours, theirs) or same_rows(
        sorted(ours, key=_sort_key), sorted(theirs, key=_sort_key)
    ):
        return []
    found = []
    if len(ours) != len(theirs):
        found.append(f"{len(ours)} rows, DuckDB has {len(theirs)}")
    for number, (mine, other) in enumerate(zip(ours, theirs, strict=False)):
        if len(mine) != len(other) or not all(map(same_value, mine, other)):
            found.append(f"row {number}: {mine!r} != DuckDB's {other!r}")
            if len(found) >= limit:
                break
    return found
