import random
import threading
import time
from dataclasses import replace

import msgpack
import pytest

from fe.client_errors import catalog_error
from image.images import ImageStore, load_image
from metadata import codec
from metadata.catalog import (
    INITIAL_NEXT_ID,
    MAX_REMEMBERED_REQUESTS,
    ApplyError,
    Catalog,
    initial_ops,
)
from metadata.codec import CodecError, encode_ops
from metadata.ops import (
    AddBackend,
    AddFrontend,
    ClientRequest,
    CreateDatabase,
    CreateTable,
    CreateUser,
    DropBackend,
    DropDatabase,
    DropFrontend,
    DropTable,
    DropUser,
    EraseRecycled,
    GrantPrivileges,
    NextId,
    OpCode,
    RecoverDatabase,
    RecoverPartition,
    RecoverTable,
    RecycleDatabase,
    RecyclePartition,
    RecycleTable,
    ReplaceTable,
    RevokePrivileges,
    SetGlobalVariable,
    SetPassword,
    Timestamp,
    TruncateTable,
    UpdateFrontend,
)
from metadata.records import (
    Backend,
    Column,
    Database,
    Frontend,
    Grant,
    KeyModel,
    Partition,
    RecycledKind,
    Rollup,
    Table,
    User,
)

COLUMNS = (Column("k", "INT", nullable=False, is_key=True), Column("v", "VARCHAR(20)"))


def make_table(table_id, db_id, name, tablet_start, partitions=1, buckets=4):
    return Table(
        id=table_id,
        db_id=db_id,
        name=name,
        columns=COLUMNS,
        key_columns=("k",),
        distribution_columns=("k",),
        buckets=buckets,
        partitions=tuple(
            Partition(table_id * 100 + i, f"p{i}", (), (), tablet_start + i * buckets, buckets)
            for i in range(partitions)
        ),
    )


def apply_all(catalog, ops):
    return [catalog.apply(op) for op in ops]


def error_of(catalog, op):
    """The catalog's rejection of op as the client sees it."""
    with pytest.raises(ApplyError) as caught:
        catalog.apply(op)
    assert caught.value.op is op
    return catalog_error(caught.value)


@pytest.fixture
def catalog():
    catalog = Catalog()
    apply_all(catalog, [CreateDatabase(Database(1, "db1")), CreateDatabase(Database(2, "db2"))])
    return catalog


def test_new_catalog_is_empty_and_initial_ops_create_root_and_admin():
    catalog = Catalog()
    assert catalog.journal_id == 0 and not catalog.users and not catalog.dbs
    assert catalog.next_id == INITIAL_NEXT_ID
    apply_all(catalog, initial_ops())
    for name in ("root", "admin"):
        user = catalog.users[(name, "%")]
        assert user.password_hash == ""
        assert user.grants == (Grant("*", "*", frozenset({"ALL"})),)
    assert catalog.journal_id == len(initial_ops())


def test_databases_are_created_found_by_case_sensitive_name_and_dropped(catalog):
    assert catalog.database("db1").id == 1
    assert catalog.database("DB1") is None
    catalog.apply(CreateDatabase(Database(3, "DB1")))
    assert catalog.database("DB1").id == 3
    assert error_of(catalog, CreateDatabase(Database(4, "db1"))).code == 1007
    catalog.apply(DropDatabase(1))
    assert catalog.database("db1") is None
    assert error_of(catalog, DropDatabase(1)).code == 1008


def test_dropping_a_database_drops_its_tables_and_tablets(catalog):
    apply_all(
        catalog,
        [
            CreateTable(make_table(10, 1, "a", 1000)),
            CreateTable(make_table(11, 1, "b", 2000, partitions=3)),
            CreateTable(make_table(12, 2, "a", 3000)),
        ],
    )
    assert catalog.tablet_count() == 4 + 12 + 4
    catalog.apply(DropDatabase(1))
    assert set(catalog.tables) == {12}
    assert catalog.tablet(1001) is None and catalog.tablet(2005) is None
    assert catalog.tablet(3002)[0].id == 12
    assert catalog.tablet_count() == 4
    catalog.apply(CreateDatabase(Database(5, "db1")))
    assert catalog.tables_of(5) == []


def test_tables_are_created_listed_by_name_and_rejected_with_mysql_codes(catalog):
    apply_all(
        catalog,
        [
            CreateTable(make_table(10, 1, "zeta", 1000)),
            CreateTable(make_table(11, 1, "alpha", 2000)),
            CreateTable(make_table(12, 1, "Alpha", 3000)),
        ],
    )
    assert [t.name for t in catalog.tables_of(1)] == ["Alpha", "alpha", "zeta"]
    assert catalog.table(1, "zeta").id == 10
    assert catalog.table(2, "zeta") is None
    assert error_of(catalog, CreateTable(make_table(13, 1, "zeta", 4000))).code == 1050
    assert error_of(catalog, CreateTable(make_table(13, 99, "x", 4000))).code == 1049
    assert error_of(catalog, DropTable(999)).code == 1051
    catalog.apply(DropTable(10))
    assert catalog.table(1, "zeta") is None
    assert catalog.tablet(1000) is None


def test_overlapping_tablet_ranges_are_rejected(catalog):
    catalog.apply(CreateTable(make_table(10, 1, "a", 1000, partitions=2)))  # tablets 1000..1007
    for start in (997, 1000, 1004, 1007):
        error = error_of(catalog, CreateTable(make_table(11, 1, "b", start)))
        assert error.code == 1105 and "overlap" in error.message
    catalog.apply(CreateTable(make_table(11, 1, "b", 1008)))
    catalog.apply(CreateTable(make_table(12, 1, "c", 996)))
    assert catalog.tablet(999)[0].name == "c"
    assert catalog.tablet(1008)[0].name == "b"


def test_replace_table_renames_and_changes_partitions_keeping_the_id(catalog):
    original = make_table(10, 1, "orders", 1000, partitions=3)
    catalog.apply(CreateTable(original))
    catalog.apply(CreateTable(make_table(11, 1, "other", 5000)))
    altered = replace(
        original,
        name="orders_v2",
        columns=(*COLUMNS, Column("added", "DATE")),
        partitions=(
            original.partitions[0],
            original.partitions[2],
            Partition(777, "p_new", (), (), 6000, 2),
        ),
    )
    catalog.apply(ReplaceTable(altered))
    assert catalog.table(1, "orders") is None
    assert catalog.table(1, "orders_v2") == replace(altered, schema_version=2)
    assert catalog.tablet(1005) is None  # the dropped middle partition
    table, partition, bucket = catalog.tablet(1009)
    assert (table.name, partition.name, bucket) == ("orders_v2", "p2", 1)
    assert catalog.tablet(6001)[1].name == "p_new"
    assert catalog.tablet_count() == 4 + 4 + 2 + 4
    clash = replace(altered, name="other")
    assert error_of(catalog, ReplaceTable(clash)).code == 1050
    assert error_of(catalog, ReplaceTable(replace(altered, id=999))).code == 1051
    assert catalog.table(1, "orders_v2") == replace(altered, schema_version=2)


def test_replace_table_can_move_a_table_to_another_database(catalog):
    table = make_table(10, 1, "t", 1000)
    catalog.apply(CreateTable(table))
    catalog.apply(ReplaceTable(replace(table, db_id=2)))
    assert catalog.tables_of(1) == [] and catalog.table(2, "t").id == 10
    assert error_of(catalog, ReplaceTable(replace(table, db_id=42))).code == 1049


@pytest.mark.parametrize(
    ("change", "bumps"),
    [
        (lambda t: replace(t, columns=(*t.columns, Column("added", "DATE"))), True),
        (lambda t: replace(t, columns=t.columns[:1]), True),
        (lambda t: replace(t, columns=(t.columns[0], replace(t.columns[1], type="STRING"))), True),
        (lambda t: replace(t, columns=(t.columns[0], replace(t.columns[1], name="w"))), True),
        (lambda t: replace(t, columns=(t.columns[0], replace(t.columns[1], default="'x'"))), True),
        (lambda t: replace(t, key_model=KeyModel.UNIQUE), True),
        (lambda t: replace(t, key_columns=("k", "v")), True),
        (lambda t: replace(t, name="renamed"), False),
        (lambda t: replace(t, comment="a comment"), False),
        (lambda t: replace(t, properties=(("replication_num", "1"),)), False),
        (lambda t: replace(t, partitions=t.partitions[:1]), True),  # rows placed elsewhere now
        (lambda t: replace(t, partitions=t.partitions[::-1]), True),
        (lambda t: t, False),
    ],
)
def test_schema_version_starts_at_1_and_apply_raises_it_when_columns_keys_or_partitions_change(
    catalog, change, bumps
):
    created = replace(make_table(10, 1, "t", 1000, partitions=2), schema_version=7)
    catalog.apply(CreateTable(created))
    assert catalog.tables[10].schema_version == 1
    changed = change(catalog.tables[10])
    catalog.apply(ReplaceTable(replace(changed, schema_version=99)))
    version = 2 if bumps else 1
    assert catalog.tables[10] == replace(changed, schema_version=version)
    catalog.apply(ReplaceTable(replace(changed, comment="only the comment")))
    assert catalog.tables[10].schema_version == version


def test_schema_version_survives_snapshot_image_and_replay_and_old_entries_start_at_1(tmp_path):
    ops = [
        CreateDatabase(Database(1, "db1")),
        CreateTable(make_table(10, 1, "t", 1000)),
        ReplaceTable(replace(make_table(10, 1, "t", 1000), columns=COLUMNS[:1])),
        ReplaceTable(replace(make_table(10, 1, "t", 1000), columns=COLUMNS)),
    ]
    live = Catalog()
    apply_all(live, ops)
    assert live.tables[10].schema_version == 3
    assert Catalog.from_snapshot(live.snapshot()).tables[10].schema_version == 3
    info = ImageStore(tmp_path).write(live.snapshot())
    assert load_image(info.path).tables[10].schema_version == 3
    replayed = Catalog()
    for raft_index, op in enumerate(ops, start=1):
        replayed.apply_entry(raft_index, encode_ops([op]))
    assert replayed.tables == live.tables
    version_5_table = codec.encode_op(ops[1])[1]
    version_4_columns = tuple(column[:8] for column in version_5_table[3])  # no column ids
    version_4_table = (*version_5_table[:3], version_4_columns, *version_5_table[4:])
    version_2_table = (
        *version_4_table[:9],
        tuple(partition[:6] for partition in version_4_table[9]),
        *version_4_table[10:13],
    )
    old_entry = bytes([2]) + msgpack.packb([[int(OpCode.CREATE_TABLE), version_2_table]])
    old_table = codec.decode_ops(old_entry)[0].table
    assert old_table.schema_version == 1
    assert [column.id >> 16 for column in old_table.columns] == [1] * len(old_table.columns)
    assert len({column.id for column in old_table.columns}) == len(old_table.columns)


def test_users_passwords_and_grants():
    catalog = Catalog()
    catalog.apply(CreateUser(User("alice", "%")))
    assert error_of(catalog, CreateUser(User("alice", "%"))).code == 1396
    catalog.apply(CreateUser(User("alice", "10.%")))
    catalog.apply(SetPassword("alice", "%", "*ABC"))
    assert catalog.users[("alice", "%")].password_hash == "*ABC"
    assert catalog.users[("alice", "10.%")].password_hash == ""
    assert error_of(catalog, SetPassword("bob", "%", "*ABC")).code == 1133

    catalog.apply(GrantPrivileges("alice", "%", Grant("db1", "*", frozenset({"SELECT"}))))
    catalog.apply(GrantPrivileges("alice", "%", Grant("db1", "*", frozenset({"INSERT"}))))
    catalog.apply(GrantPrivileges("alice", "%", Grant("db1", "t", frozenset({"DROP"}))))
    assert catalog.users[("alice", "%")].grants == (
        Grant("db1", "*", frozenset({"SELECT", "INSERT"})),
        Grant("db1", "t", frozenset({"DROP"})),
    )
    catalog.apply(RevokePrivileges("alice", "%", Grant("db1", "t", frozenset({"DROP"}))))
    catalog.apply(RevokePrivileges("alice", "%", Grant("db1", "*", frozenset({"SELECT"}))))
    assert catalog.users[("alice", "%")].grants == (Grant("db1", "*", frozenset({"INSERT"})),)
    revoke_missing = RevokePrivileges("alice", "%", Grant("db9", "*", frozenset({"SELECT"})))
    assert error_of(catalog, revoke_missing).code == 1141

    catalog.apply(DropUser("alice", "%"))
    assert ("alice", "%") not in catalog.users
    assert error_of(catalog, DropUser("alice", "%")).code == 1396


def test_a_frontend_keeps_its_connection_prefix_while_others_come_and_go(tmp_path):
    catalog = Catalog()
    for port in (9010, 9011, 9012):
        catalog.apply(AddFrontend(Frontend(f"fe_{port}", "127.0.0.1", port)))
    catalog.apply(DropFrontend("fe_9011"))
    catalog.apply(UpdateFrontend(Frontend("fe_9012", "127.0.0.1", 9012, 8030, 9030)))
    catalog.apply(AddFrontend(Frontend("fe_9013", "127.0.0.1", 9013)))
    prefixes = {name: f.connection_prefix for name, f in catalog.frontends.items()}
    assert prefixes == {"fe_9010": 0, "fe_9012": 2, "fe_9013": 1}
    assert catalog.frontends["fe_9012"].query_port == 9030
    taken = AddFrontend(Frontend("fe_9014", "127.0.0.1", 9014, connection_prefix=2))
    assert "connection prefix 2 is already in use" in str(error_of(catalog, taken))
    info = ImageStore(tmp_path).write(catalog.snapshot())
    assert load_image(info.path).frontends == catalog.frontends
    replayed = Catalog()
    for raft_index, op in enumerate(codec.decode_ops(encode_ops(list(_frontend_ops()))), 1):
        replayed.apply_entry(raft_index, encode_ops([op]))
    assert {n: f.connection_prefix for n, f in replayed.frontends.items()} == prefixes


def _frontend_ops():
    yield from (AddFrontend(Frontend(f"fe_{port}", "127.0.0.1", port)) for port in (9010, 9011))
    yield AddFrontend(Frontend("fe_9012", "127.0.0.1", 9012))
    yield DropFrontend("fe_9011")
    yield UpdateFrontend(Frontend("fe_9012", "127.0.0.1", 9012, 8030, 9030))
    yield AddFrontend(Frontend("fe_9013", "127.0.0.1", 9013))


def test_frontends_backends_variables_timestamps_and_next_id():
    catalog = Catalog()
    catalog.apply(AddFrontend(Frontend("fe1", "127.0.0.1", 9010)))
    assert error_of(catalog, AddFrontend(Frontend("fe1", "127.0.0.2", 9010))).code == 1105
    assert error_of(catalog, AddFrontend(Frontend("fe2", "127.0.0.1", 9010))).code == 1105
    catalog.apply(DropFrontend("fe1"))
    assert error_of(catalog, DropFrontend("fe1")).code == 1105
    catalog.apply(AddBackend(Backend(20_000, "127.0.0.1", 9050)))
    assert error_of(catalog, AddBackend(Backend(20_000, "127.0.0.9", 9050))).code == 1105
    assert catalog.next_id == 20_001
    catalog.apply(DropBackend(20_000))
    assert error_of(catalog, DropBackend(20_000)).code == 1105
    catalog.apply(SetGlobalVariable("time_zone", "UTC"))
    catalog.apply(Timestamp(1234))
    catalog.apply(NextId(50_000))
    catalog.apply(NextId(40_000))
    assert catalog.global_variables == {"time_zone": "UTC"}
    assert catalog.last_timestamp_ms == 1234
    assert catalog.next_id == 50_000


def test_next_id_is_raised_past_every_id_an_op_uses(catalog):
    catalog.apply(CreateTable(make_table(300, 1, "t", 90_000, partitions=2, buckets=10)))
    assert catalog.next_id == 90_020  # past the last tablet, 90_019
    catalog.apply(CreateDatabase(Database(100_000, "big")))
    assert catalog.next_id == 100_001


def test_rejected_op_takes_a_journal_id_and_changes_nothing(catalog):
    catalog.apply(CreateTable(make_table(10, 1, "t", 1000)))
    before = catalog.canonical_dump().split("\n", 1)[1]
    journal_id = catalog.journal_id
    rejected = [
        CreateDatabase(Database(7, "db1")),
        CreateTable(make_table(11, 1, "t", 2000)),
        CreateTable(make_table(11, 1, "u", 1002)),
        ReplaceTable(make_table(10, 1, "t", 1000, buckets=0)),
        DropTable(11),
    ]
    for op in rejected:
        error_of(catalog, op)
    assert catalog.journal_id == journal_id + len(rejected)
    assert catalog.canonical_dump().split("\n", 1)[1] == before
    assert catalog.tablet(1000)[0].id == 10


def test_apply_entry_returns_results_and_errors_and_tracks_the_raft_index(catalog):
    ops = [
        CreateTable(make_table(10, 1, "t", 1000)),
        CreateTable(make_table(11, 1, "t", 2000)),
        DropTable(10),
    ]
    results = catalog.apply_entry(7, encode_ops(ops))
    assert results[0].name == "t"
    assert isinstance(results[1], ApplyError) and catalog_error(results[1]).code == 1050
    assert results[2].id == 10
    assert catalog.raft_index == 7 and catalog.journal_id == 2 + 3
    assert catalog.apply_entry(7, encode_ops([DropDatabase(1)])) == []
    assert catalog.database("db1") is not None
    before = catalog.canonical_dump().split("\n", 2)[2]
    with pytest.raises(CodecError):
        catalog.apply_entry(8, b"\x01garbage")
    assert catalog.raft_index == 8 and catalog.journal_id == 5
    assert catalog.canonical_dump().split("\n", 2)[2] == before


def test_a_retried_request_changes_nothing_and_gets_the_first_outcome(tmp_path):
    catalog = Catalog()
    create = [ClientRequest("r1"), CreateDatabase(Database(1, "db1"))]
    first = catalog.apply_entry(1, encode_ops(create))
    assert first[1].name == "db1"
    outcome = catalog.request_outcome("r1")
    assert outcome is not None and outcome.journal_id == 2 and outcome.refusal == ""
    # The retry's entry (built again, with a new id, after a failover) is applied as nothing.
    retry = [ClientRequest("r1"), CreateDatabase(Database(2, "db1"))]
    assert catalog.apply_entry(2, encode_ops(retry)) == [outcome]
    assert sorted(catalog.dbs) == [1] and catalog.raft_index == 2 and catalog.journal_id == 4

    # A request the catalog refused is told as refused again, with the same error.
    refused = [ClientRequest("r2"), CreateDatabase(Database(3, "db1"))]
    assert isinstance(catalog.apply_entry(3, encode_ops(refused))[1], ApplyError)
    again = catalog.apply_entry(4, encode_ops(refused))
    assert len(again) == 1 and catalog_error(again[0]).code == 1007

    # What is remembered goes into images, so a node restarted from one answers the same.
    info = ImageStore(tmp_path).write(catalog.snapshot())
    loaded = load_image(info.path)
    assert loaded.requests == catalog.requests
    assert loaded.canonical_dump() == catalog.canonical_dump()
    assert loaded.apply_entry(5, encode_ops(retry)) == [outcome]


def test_only_the_newest_requests_are_remembered():
    catalog = Catalog()
    for n in range(MAX_REMEMBERED_REQUESTS + 10):
        catalog.apply_entry(n + 1, encode_ops([ClientRequest(f"r{n}"), Timestamp(n)]))
    assert len(catalog.requests) == MAX_REMEMBERED_REQUESTS
    assert catalog.request_outcome("r9") is None
    assert catalog.request_outcome(f"r{MAX_REMEMBERED_REQUESTS + 9}") is not None


class Workload:
    """A seeded stream of valid and invalid DDL, deterministic for a given seed."""

    def __init__(self, seed):
        self.random = random.Random(seed)
        self.next_id = INITIAL_NEXT_ID
        self.dbs = {}
        self.tables = {}

    def allocate(self, count=1):
        first = self.next_id
        self.next_id += count
        return first

    def table(self, db_id, name, partitions):
        table_id = self.allocate()
        parts = []
        for i in range(partitions):
            parts.append(
                Partition(self.allocate(), f"p{i}", (str(i),), (str(i + 1),), self.allocate(3), 3)
            )
        return Table(table_id, db_id, name, COLUMNS, partitions=tuple(parts), buckets=3)

    def ops(self, count):
        for _ in range(count):
            yield self.op()

    def op(self):
        roll = self.random.random()
        if roll < 0.1 or not self.dbs:
            db = Database(self.allocate(), f"db{self.random.randrange(30)}")
            self.dbs[db.id] = db
            return CreateDatabase(db)
        if roll < 0.45:
            db_id = self.random.choice(list(self.dbs))
            table = self.table(db_id, f"t{self.random.randrange(50)}", self.random.randint(0, 4))
            self.tables[table.id] = table
            return CreateTable(table)
        if roll < 0.65 and self.tables:
            table = self.tables[self.random.choice(list(self.tables))]
            new_part = Partition(self.allocate(), "px", (), (), self.allocate(2), 2)
            altered = replace(
                table,
                name=f"t{self.random.randrange(50)}",
                columns=(*table.columns, Column(f"c{len(table.columns)}", "INT")),
                partitions=table.partitions[1:] + (new_part,),
            )
            self.tables[table.id] = altered
            return ReplaceTable(altered)
        if roll < 0.8 and self.tables:
            return DropTable(self.tables.pop(self.random.choice(list(self.tables))).id)
        if roll < 0.85:
            return DropDatabase(self.dbs.pop(self.random.choice(list(self.dbs))).id)
        if roll < 0.9:
            name = f"u{self.random.randrange(10)}"
            if self.random.random() < 0.5:
                return CreateUser(User(name, "%"))
            return GrantPrivileges(name, "%", Grant("*", "*", frozenset({"SELECT"})))
        if roll < 0.95:
            return Timestamp(self.random.randrange(10**12))
        return SetGlobalVariable(f"v{self.random.randrange(5)}", str(self.random.random()))


def test_apply_is_deterministic_and_a_snapshot_resumes_exactly():
    ops = list(Workload(seed=7).ops(3000))
    first, second = Catalog(), Catalog()
    errors = 0
    for op in ops:
        try:
            first.apply(op)
        except ApplyError:
            errors += 1
    assert 0 < errors < len(ops)  # the workload exercises both paths

    resumed = None
    for position, op in enumerate(ops):
        if position == len(ops) // 2:
            resumed = Catalog.from_snapshot(second.snapshot())
        for target in (second, resumed):
            if target is None:
                continue
            try:
                target.apply(op)
            except ApplyError:
                pass
    assert first.canonical_dump() == second.canonical_dump() == resumed.canonical_dump()
    assert first.journal_id == len(ops)
    live_tablets = sum(p.buckets for t in first.tables.values() for p in t.partitions)
    assert first.tablet_count() == live_tablets == resumed.tablet_count()
    for table in first.tables.values():
        for partition in table.partitions:
            for bucket, tablet_id in enumerate(partition.tablet_ids):
                assert resumed.tablet(tablet_id) == (table, partition, bucket)


def test_snapshot_stays_consistent_while_another_thread_applies():
    ops = list(Workload(seed=11).ops(4000))
    catalog = Catalog()
    started = threading.Event()

    def writer():
        for position, op in enumerate(ops):
            if position == 500:
                started.set()
            try:
                catalog.apply(op)
            except ApplyError:
                pass

    thread = threading.Thread(target=writer)
    thread.start()
    assert started.wait(timeout=30)
    snapshot = catalog.snapshot()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert 500 <= snapshot.journal_id < len(ops) or snapshot.journal_id == len(ops)

    expected = Catalog()
    for op in ops[: snapshot.journal_id]:
        try:
            expected.apply(op)
        except ApplyError:
            pass
    assert Catalog.from_snapshot(snapshot).canonical_dump() == expected.canonical_dump()
    assert catalog.canonical_dump() != expected.canonical_dump() or snapshot.journal_id == len(ops)


def test_lookups_stay_fast_on_a_large_catalog():
    catalog = Catalog()
    catalog.apply(CreateDatabase(Database(1, "db")))
    for i in range(2000):
        catalog.apply(CreateTable(make_table(10 + i, 1, f"t{i}", 100_000 + i * 100, 10, 10)))
    assert catalog.tablet_count() == 200_000
    deadline = time.monotonic() + 5
    for i in range(0, 2000, 2):
        catalog.apply(DropTable(10 + i))
    probes = [100_000 + (i * 37) % 200_000 for i in range(20_000)]
    hits = sum(catalog.tablet(t) is not None for t in probes)
    assert time.monotonic() < deadline
    assert catalog.tablet_count() == 100_000
    assert hits == sum(1 for t in probes if ((t - 100_000) // 100) % 2 == 1)


def test_tablet_lookup_matches_a_brute_force_index_through_drops_and_reuse(catalog):
    """Ranges come and go (drops, partitions removed then restored with the same ids); every
    tablet id, live or dead, must resolve exactly as a per-tablet dict would say."""
    rng = random.Random(5)
    tables = {}
    for i in range(300):
        table = make_table(1000 + i, 1, f"t{i}", 10_000 + i * 12, partitions=3, buckets=4)
        catalog.apply(CreateTable(table))
        tables[table.id] = table
    removed_partitions = {}

    def check():
        expected = {}
        for table in catalog.tables.values():
            for partition in table.partitions:
                for bucket, tablet_id in enumerate(partition.tablet_ids):
                    expected[tablet_id] = (table.id, partition.id, bucket)
        for tablet_id in range(9_990, 10_000 + 300 * 12 + 10):
            found = catalog.tablet(tablet_id)
            got = None if found is None else (found[0].id, found[1].id, found[2])
            assert got == expected.get(tablet_id), tablet_id
        assert catalog.tablet_count() == len(expected)

    for step in range(600):
        table_id = rng.choice(list(tables))
        table = tables[table_id]
        action = rng.random()
        if action < 0.3:
            catalog.apply(DropTable(table_id))
            del tables[table_id]
            if len(tables) < 50:
                break
        elif action < 0.65 and len(table.partitions) > 1:
            gone = table.partitions[rng.randrange(len(table.partitions))]
            removed_partitions.setdefault(table_id, []).append(gone)
            table = replace(table, partitions=tuple(p for p in table.partitions if p != gone))
            catalog.apply(ReplaceTable(table))
            tables[table_id] = table
        elif removed_partitions.get(table_id):
            restored = removed_partitions[table_id].pop()
            table = replace(table, partitions=(restored, *table.partitions))
            catalog.apply(ReplaceTable(table))
            tables[table_id] = table
        if step % 50 == 0:
            check()
    check()


def test_damaged_entries_are_rejected_or_applied_never_crash_apply():
    """Random damage to valid entries: decoding either refuses the entry (CodecError) or yields
    well-typed operations that apply or are rejected with an ApplyError, as on every node."""
    rng = random.Random(9)
    base_ops = list(Workload(seed=3).ops(40))
    entries = [encode_ops(base_ops[i : i + 4]) for i in range(0, len(base_ops), 4)]
    catalog = Catalog()
    outcomes = {"refused": 0, "applied": 0, "rejected": 0}
    raft_index = 0
    for _ in range(2000):
        damaged = bytearray(rng.choice(entries))
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(1, len(damaged))] = rng.randrange(256)
        raft_index += 1
        try:
            results = catalog.apply_entry(raft_index, bytes(damaged))
        except CodecError:
            outcomes["refused"] += 1
            continue
        for result in results:
            outcomes["rejected" if isinstance(result, ApplyError) else "applied"] += 1
    assert all(outcomes.values()), outcomes
    rebuilt = Catalog.from_snapshot(catalog.snapshot())
    assert rebuilt.canonical_dump() == catalog.canonical_dump()


# The recycle bin.


def ranged_table(table_id, db_id, name, tablet_start, partitions=3, buckets=2):
    table = make_table(table_id, db_id, name, tablet_start, partitions, buckets)
    bounded = tuple(
        replace(p, lower=(str(i * 10),) if i else (), upper=(str(i * 10 + 10),))
        for i, p in enumerate(table.partitions)
    )
    return replace(table, partition_columns=("k",), partitions=bounded)


def test_recycled_tables_leave_the_catalog_and_recover_with_their_ids_and_tablets(catalog):
    table = make_table(10, 1, "a", 1000)
    apply_all(catalog, [CreateTable(table), RecycleTable(10, 5_000)])
    assert catalog.table(1, "a") is None and catalog.tablet(1001) is None
    recycled = catalog.recycled(RecycledKind.TABLE, "a", db_id=1)
    assert (recycled.id, recycled.drop_time_ms, recycled.tables) == (10, 5_000, (table,))
    assert catalog.recycled(RecycledKind.TABLE, "a", db_id=2) is None
    catalog.apply(RecoverTable(10, "a"))
    assert catalog.table(1, "a") == table and catalog.tablet(1001)[0] == table
    assert not catalog.recycle_bin
    with pytest.raises(ApplyError, match="no table with id 10 in the recycle bin"):
        catalog.apply(RecoverTable(10, "a"))


def test_recover_as_a_new_name_when_the_old_one_was_taken_again(catalog):
    apply_all(
        catalog,
        [CreateTable(make_table(10, 1, "a", 1000)), RecycleTable(10, 1)],
    )
    catalog.apply(CreateTable(make_table(11, 1, "a", 2000)))
    with pytest.raises(ApplyError, match="Table 'a' already exists"):
        catalog.apply(RecoverTable(10, "a"))
    recovered = catalog.apply(RecoverTable(10, "a_old"))
    assert recovered.id == 10 and recovered.partitions[0].name == "a_old"
    assert {t.name for t in catalog.tables_of(1)} == {"a", "a_old"}


def test_a_second_drop_of_the_same_name_replaces_the_first_in_the_bin(catalog):
    apply_all(
        catalog,
        [
            CreateTable(make_table(10, 1, "a", 1000)),
            RecycleTable(10, 1),
            CreateTable(make_table(11, 1, "a", 2000)),
            RecycleTable(11, 2),
        ],
    )
    assert list(catalog.recycle_bin) == [11]


def test_a_recycled_database_takes_its_tables_and_recovers_them(catalog):
    apply_all(
        catalog,
        [
            CreateTable(make_table(10, 1, "a", 1000)),
            CreateTable(make_table(11, 1, "b", 2000)),
            RecycleDatabase(1, 7),
        ],
    )
    assert catalog.database("db1") is None and not catalog.tables
    assert catalog.tablet_count() == 0
    catalog.apply(CreateDatabase(Database(3, "db1")))
    with pytest.raises(ApplyError, match=r"Database\[db1\] already exist"):
        catalog.apply(RecoverDatabase(1, "db1"))
    catalog.apply(RecoverDatabase(1, "db1_old"))
    assert [t.name for t in catalog.tables_of(1)] == ["a", "b"]
    assert catalog.database("db1_old").id == 1 and catalog.tablet(2001)[0].id == 11


def test_recycled_partitions_recover_into_their_table(catalog):
    table = ranged_table(10, 1, "r", 1000)
    apply_all(catalog, [CreateTable(table), RecyclePartition(10, 1001, 9)])
    assert [p.name for p in catalog.tables[10].partitions] == ["p0", "p2"]
    assert catalog.tablet(1002) is None
    recycled = catalog.recycled(RecycledKind.PARTITION, "p1", table_id=10)
    assert recycled.partition == table.partitions[1]
    catalog.apply(RecoverPartition(1001, "p1"))
    assert sorted(p.name for p in catalog.tables[10].partitions) == ["p0", "p1", "p2"]
    assert catalog.tablet(1002)[1].name == "p1"
    unpartitioned = make_table(11, 1, "u", 2000)
    catalog.apply(CreateTable(unpartitioned))
    with pytest.raises(ApplyError, match="not partitioned"):
        catalog.apply(RecyclePartition(11, 1100, 1))


def test_erase_takes_only_the_entries_it_names_at_their_drop_time(catalog):
    apply_all(
        catalog,
        [
            CreateTable(make_table(10, 1, "a", 1000)),
            CreateTable(make_table(11, 1, "b", 2000)),
            RecycleTable(10, 100),
            RecycleTable(11, 200),
        ],
    )
    catalog.apply(EraseRecycled(((10, 100), (11, 199), (99, 1))))
    assert list(catalog.recycle_bin) == [11]


def test_truncate_replaces_the_named_partitions_with_new_ids_and_tablets(catalog):
    table = ranged_table(10, 1, "r", 1000)
    catalog.apply(CreateTable(table))
    fresh = replace(table.partitions[1], id=5000, tablet_start=5001)
    truncated = catalog.apply(TruncateTable(10, (fresh,)))
    assert truncated.partitions == (table.partitions[0], fresh, table.partitions[2])
    assert catalog.tablet(1002) is None and catalog.tablet(5002)[1] == fresh
    assert catalog.next_id > 5002
    with pytest.raises(ApplyError, match="no partition 'nope'"):
        catalog.apply(TruncateTable(10, (replace(fresh, id=6000, name="nope"),)))
    with pytest.raises(ApplyError, match="overlap"):
        catalog.apply(TruncateTable(10, (replace(fresh, id=6000, tablet_start=1000),)))


def test_the_bin_is_in_snapshots_images_and_the_canonical_dump(tmp_path, catalog):
    apply_all(
        catalog,
        [
            CreateTable(make_table(10, 1, "a", 1000)),
            CreateTable(ranged_table(11, 2, "r", 2000)),
            RecycleTable(10, 100),
            RecyclePartition(11, 1100, 101),
            RecycleDatabase(2, 102),
        ],
    )
    assert "recycled" in catalog.canonical_dump()
    info = ImageStore(tmp_path).write(catalog.snapshot())
    loaded = load_image(info.path)
    assert loaded.canonical_dump() == catalog.canonical_dump()
    assert list(loaded.recycle_bin) == [10, 1100, 2]
    loaded.apply(RecoverDatabase(2, "db2"))
    assert loaded.tablet(2003)[0].name == "r" and loaded.tablet(2001) is None


def test_rollup_tablets_are_indexed_with_their_partition(catalog):
    table = make_table(10, 1, "rolled", 1000, partitions=2)  # base tablets 1000..1007
    rollup = Rollup(50, "r", ("k",), ("k",))
    with_rollup = replace(
        table,
        rollups=(rollup,),
        partitions=tuple(
            replace(p, rollup_tablets=((50, 2000 + i * 4),)) for i, p in enumerate(table.partitions)
        ),
    )
    catalog.apply(CreateTable(table))
    catalog.apply(ReplaceTable(with_rollup))
    assert catalog.tablet(2005)[1:] == (with_rollup.partitions[1], 1)
    assert catalog.tablet_count() == 16 == catalog.snapshot().tablet_count()
    error = error_of(catalog, CreateTable(make_table(11, 1, "b", 2002)))
    assert "overlap" in error.message
    dangling = replace(with_rollup, rollups=())
    assert "unknown rollups" in error_of(catalog, ReplaceTable(dangling)).message
    catalog.apply(ReplaceTable(table))  # the rollup dropped: its tablets leave the index
    assert catalog.tablet(2005) is None and catalog.tablet_count() == 8
    assert catalog.next_id > 2007
