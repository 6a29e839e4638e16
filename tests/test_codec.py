from dataclasses import replace

import msgpack
import pytest

from metadata import codec
from metadata.codec import CodecError, decode_ops, decode_record, encode_ops, encode_record
from metadata.ops import (
    AddBackend,
    AddFrontend,
    ClientRequest,
    CreateAlterJob,
    CreateDatabase,
    CreateRole,
    CreateTable,
    CreateUser,
    DropBackend,
    DropDatabase,
    DropFrontend,
    DropRole,
    DropTable,
    DropTableStats,
    DropUser,
    EraseRecycled,
    GrantPrivileges,
    GrantRole,
    GrantToRole,
    NextId,
    OpCode,
    RecoverDatabase,
    RecoverPartition,
    RecoverTable,
    RecycleDatabase,
    RecyclePartition,
    RecycleTable,
    RemoveAlterJobs,
    ReplaceTable,
    RevokeFromRole,
    RevokePrivileges,
    RevokeRole,
    SetGlobalVariable,
    SetLabelledJob,
    SetLockoutPolicy,
    SetPassword,
    SetTableStats,
    SetUserProperties,
    SwapTables,
    Timestamp,
    TruncateTable,
    UpdateAlterJob,
    UpdateFrontend,
)
from metadata.records import (
    AlterJob,
    AlterJobState,
    AlterJobType,
    Backend,
    Column,
    ColumnStats,
    Database,
    Frontend,
    FrontendRole,
    Grant,
    KeyModel,
    LabelledJobRecord,
    Partition,
    PartitionKind,
    Role,
    Rollup,
    Table,
    TableStats,
    User,
)

FULL_TABLE = Table(
    id=10_001,
    db_id=10_000,
    name="commandes_été_订单",
    columns=(
        Column("id", "BIGINT", nullable=False, is_key=True, comment="clé"),
        Column("amount", "DECIMAL(10,2)", default="0", aggregation="SUM"),
        Column("note", "VARCHAR(20)", default="'ß'", auto_increment=False),
        Column("seq", "BIGINT", nullable=False, auto_increment=True),
    ),
    key_model=KeyModel.AGGREGATE,
    key_columns=("id",),
    distribution_columns=("id",),
    buckets=16,
    partition_columns=("id",),
    partitions=(
        Partition(
            10_002,
            "p_low",
            (),
            ("100",),
            tablet_start=20_000,
            buckets=16,
            properties=(("replication_num", "1"),),
            rollup_tablets=((10_005, 20_048),),
        ),
        Partition(10_003, "p_high", ("100",), (), tablet_start=20_016, buckets=16),
    ),
    properties=(("replication_num", "3"), ("storage_medium", "SSD")),
    comment="table des commandes",
    engine="olap",
    temporary_partitions=(Partition(10_004, "tp", ("100",), ("200",), 20_032, 16),),
    rollups=(Rollup(10_005, "r_amount", ("id", "amount"), ("id",), schema_version=2),),
)
LIST_TABLE = Table(
    id=11,
    db_id=4,
    name="by_city",
    columns=(Column("city", "VARCHAR(20)", nullable=False, is_key=True), Column("n", "INT")),
    key_columns=("city",),
    partition_columns=("city", "n"),
    partition_kind=PartitionKind.LIST,
    partitions=(Partition(12, "p_north", values=(("'Oslo'", "1"), ("'Bergen'", "2"))),),
)
MINIMAL_TABLE = Table(id=5, db_id=4, name="t", columns=())

ONE_OP_PER_CODE = {
    OpCode.CREATE_DATABASE: CreateDatabase(Database(10_000, "база", (("k", "v"),))),
    OpCode.DROP_DATABASE: DropDatabase(10_000),
    OpCode.CREATE_TABLE: CreateTable(FULL_TABLE),
    OpCode.DROP_TABLE: DropTable(10_001),
    OpCode.REPLACE_TABLE: ReplaceTable(MINIMAL_TABLE),
    OpCode.CREATE_USER: CreateUser(
        User(
            "jürgen",
            "192.168.%",
            "*0D3CED9BEC10A777AEC23CCC353A8C08A633045E",
            (Grant("*", "*", frozenset({"SELECT", "INSERT"})), Grant("db", "t", frozenset())),
            failed_login_attempts=3,
            password_lock_seconds=-1,
            lockout_epoch=10_077,
            roles=("analyst", "loader"),
            properties=(("query_timeout", "60"),),
        )
    ),
    OpCode.DROP_USER: DropUser("jürgen", "%"),
    OpCode.SET_PASSWORD: SetPassword("root", "%", ""),
    OpCode.GRANT: GrantPrivileges("u", "%", Grant("db1", "*", frozenset({"ALTER", "DROP"}))),
    OpCode.REVOKE: RevokePrivileges("u", "%", Grant("db1", "t1", frozenset({"DROP"}))),
    OpCode.SET_LOCKOUT_POLICY: SetLockoutPolicy("u", "10.0.0.%", 5, 86_400, 10_078),
    OpCode.CREATE_ROLE: CreateRole(
        Role("analyst", "reads", (Grant("db1", "*", frozenset({"SELECT_PRIV"})),))
    ),
    OpCode.DROP_ROLE: DropRole("analyst"),
    OpCode.GRANT_TO_ROLE: GrantToRole("analyst", Grant("*", "*", frozenset({"LOAD_PRIV"}))),
    OpCode.REVOKE_FROM_ROLE: RevokeFromRole("analyst", Grant("db1", "t", frozenset({"DROP"}))),
    OpCode.GRANT_ROLE: GrantRole("jürgen", "%", "analyst"),
    OpCode.REVOKE_ROLE: RevokeRole("jürgen", "%", "analyst"),
    OpCode.SET_USER_PROPERTIES: SetUserProperties(
        "jürgen", (("max_user_connections", "10"), ("query_timeout", "60"))
    ),
    OpCode.ADD_FRONTEND: AddFrontend(
        Frontend("fe_1", "127.0.0.1", 9010, 8030, 9030, FrontendRole.OBSERVER)
    ),
    OpCode.DROP_FRONTEND: DropFrontend("fe_1"),
    OpCode.UPDATE_FRONTEND: UpdateFrontend(
        Frontend("fe_1", "127.0.0.1", 9010, 8031, 9031, FrontendRole.OBSERVER)
    ),
    OpCode.ADD_BACKEND: AddBackend(Backend(10_050, "127.0.0.2", 9050, (("tag", "hot"),))),
    OpCode.DROP_BACKEND: DropBackend(10_050),
    OpCode.TIMESTAMP: Timestamp(1_767_225_600_123),
    OpCode.NEXT_ID: NextId(2**40),
    OpCode.SET_GLOBAL_VARIABLE: SetGlobalVariable("time_zone", "Asia/Shanghai"),
    OpCode.CLIENT_REQUEST: ClientRequest("9f86d081884c7d659a2feaa0c55ad015"),
    OpCode.RECYCLE_DATABASE: RecycleDatabase(10_000, 1_767_225_600_123),
    OpCode.RECYCLE_TABLE: RecycleTable(10_001, 1_767_225_600_124),
    OpCode.RECYCLE_PARTITION: RecyclePartition(10_001, 10_002, 1_767_225_600_125),
    OpCode.RECOVER_DATABASE: RecoverDatabase(10_000, "база_2"),
    OpCode.RECOVER_TABLE: RecoverTable(10_001, "t2"),
    OpCode.RECOVER_PARTITION: RecoverPartition(10_002, "p_low2"),
    OpCode.ERASE_RECYCLED: EraseRecycled(((10_000, 1_767_225_600_123), (10_002, 1))),
    OpCode.TRUNCATE_TABLE: TruncateTable(10_001, FULL_TABLE.partitions),
    OpCode.SWAP_TABLES: SwapTables(10_001, 10_002),
    OpCode.CREATE_ALTER_JOB: CreateAlterJob(
        AlterJob(
            20_000, AlterJobType.SCHEMA_CHANGE, 1, 10_001, "t", "t", 20_001, "t", 10_001,
            1_767_225_600_123, 86_400_000, table=FULL_TABLE,
        )
    ),
    OpCode.UPDATE_ALTER_JOB: UpdateAlterJob(20_000, AlterJobState.CANCELLED, 5, "user cancelled"),
    OpCode.REMOVE_ALTER_JOBS: RemoveAlterJobs((20_000, 20_002)),
    OpCode.SET_TABLE_STATS: SetTableStats(TableStats(10_001, 3, 1_767_225_600_123, (
        ColumnStats("k", 3, 3, 0, 12, "1", "3"), ColumnStats("v", 3, 0, 3, 0, None, None),
    ))),
    OpCode.DROP_TABLE_STATS: DropTableStats(10_001, ("k",)),
    OpCode.SET_LABELLED_JOB: SetLabelledJob(LabelledJobRecord(
        "LOAD", "db", "l1", 1_767_225_600_001, "root", ("t",), 3600, 1_767_225_600_001,
        "CANCELLED", 1_767_225_600_002, 1_767_225_600_003, "user cancel", "127.0.0.1:9010",
        (("max_filter_ratio", "0.1"),),
    )),
}  # fmt: skip


def test_labelled_jobs_are_refused_by_the_codec_version_before_them():
    batch = encode_ops([ONE_OP_PER_CODE[OpCode.SET_LABELLED_JOB]])
    with pytest.raises(CodecError):
        decode_ops(bytes([7]) + batch[1:])


def test_statistics_are_refused_by_the_codec_version_before_them():
    batch = encode_ops([DropTableStats(10_001, ())])
    with pytest.raises(CodecError):
        decode_ops(bytes([6]) + batch[1:])


def test_a_rollup_job_round_trips_as_a_record():
    job = AlterJob(
        20_002, AlterJobType.ROLLUP, 1, 10_001, "t", "r", 20_003, "t", 10_001, 7, 1000,
        state=AlterJobState.FINISHED, finish_time_ms=9, rollup=Rollup(20_003, "r", ("k",), ("k",)),
        rollup_tablets=((10_002, 20_004),),
    )  # fmt: skip
    assert decode_record(AlterJob, encode_record(job)) == job


def test_every_op_code_has_codec_support_and_a_round_trip_sample():
    assert set(OpCode) == codec.supported_op_codes()
    assert set(OpCode) == set(ONE_OP_PER_CODE)
    for code, op in ONE_OP_PER_CODE.items():
        assert op.CODE == code


@pytest.mark.parametrize("code", list(OpCode), ids=lambda code: code.name)
def test_each_op_round_trips_alone(code):
    op = ONE_OP_PER_CODE[code]
    assert decode_ops(encode_ops([op])) == [op]


def test_a_batch_round_trips_in_order_with_equal_types():
    ops = list(ONE_OP_PER_CODE.values()) * 3
    decoded = decode_ops(encode_ops(ops))
    assert decoded == ops
    assert [type(op) for op in decoded] == [type(op) for op in ops]
    table = decoded[2].table
    assert table.key_model is KeyModel.AGGREGATE
    assert isinstance(table.partitions[0].upper, tuple)
    assert table.partitions[0].lower == ()
    assert table.columns[0].default is None
    assert decoded[list(ONE_OP_PER_CODE).index(OpCode.ADD_FRONTEND)].frontend.role is (
        FrontendRole.OBSERVER
    )


def test_equal_ops_encode_to_equal_bytes_whatever_the_set_order():
    a = GrantPrivileges("u", "%", Grant("*", "*", frozenset(["a", "b", "c", "d", "e"])))
    b = GrantPrivileges("u", "%", Grant("*", "*", frozenset(["e", "d", "c", "b", "a"])))
    assert encode_ops([a]) == encode_ops([b])


def test_encoding_is_compact():
    data = encode_ops([CreateTable(FULL_TABLE)])
    assert len(data) < 400
    assert len(encode_ops([DropTable(10_001)])) <= 8


@pytest.mark.parametrize(
    "record",
    [
        FULL_TABLE,
        MINIMAL_TABLE,
        LIST_TABLE,
        FULL_TABLE.rollups[0],
        FULL_TABLE.columns[1],
        FULL_TABLE.partitions[1],
        Database(1, "d"),
        User("root"),
        User("u", "h", "", (), failed_login_attempts=2, password_lock_seconds=3, lockout_epoch=4),
        User("u", roles=("r",)),
        Role("r"),
        Role("r", "a comment", (Grant("d", "*", frozenset({"LOAD"})),)),
        Frontend("fe", "::1", 1),
        Backend(7, "h", 2),
        Grant("d", "*", frozenset({"LOAD"})),
    ],
    ids=lambda record: type(record).__name__,
)
def test_records_round_trip_through_msgpack(record):
    packed = msgpack.packb(encode_record(record))
    assert decode_record(type(record), msgpack.unpackb(packed, use_list=False)) == record


def test_unknown_version_is_rejected():
    data = encode_ops([Timestamp(1)])
    with pytest.raises(CodecError, match="unknown journal format version 99"):
        decode_ops(bytes([99]) + data[1:])


def test_unknown_op_code_is_rejected():
    data = bytes([codec.FORMAT_VERSION]) + msgpack.packb([[250, 1]])
    with pytest.raises(CodecError, match="unknown op code 250"):
        decode_ops(data)


@pytest.mark.parametrize(
    "items, message",
    [
        ([[int(OpCode.DROP_TABLE)]], "DROP_TABLE.*0 fields, expected 1"),
        ([[int(OpCode.DROP_USER), "a", "b", "c"]], "DROP_USER.*3 fields, expected 2"),
        ([[int(OpCode.CREATE_DATABASE), [1, "d"]]], "Database: expected 3 fields"),
        (
            [
                [
                    int(OpCode.CREATE_TABLE),
                    [1, 2, "t", [], "NOPE", [], [], 1, [], [], [], "", "olap"],
                ]
            ],
            "CREATE_TABLE.*malformed",
        ),
        ([[int(OpCode.ADD_FRONTEND), ["f", "h", 1, 2, 3, "LEADER"]]], "ADD_FRONTEND"),
        ([5], "operation 0 is not an array"),
        ([[{"x": 1}, 1]], "unknown op code"),
        ([[True, [1, "d", []]]], "unknown op code True"),
        ({"a": 1}, "batch must be an array"),
        ([], "batch must be an array of 1"),
    ],
)
def test_bad_shapes_raise_a_clear_codec_error(items, message):
    with pytest.raises(CodecError, match=message):
        decode_ops(bytes([codec.FORMAT_VERSION]) + msgpack.packb(items))


def test_garbage_and_empty_input_raise_codec_error():
    with pytest.raises(CodecError, match="empty batch"):
        decode_ops(b"")
    with pytest.raises(CodecError, match="not valid msgpack"):
        decode_ops(bytes([codec.FORMAT_VERSION]) + b"\xc1\xc1")
    with pytest.raises(CodecError, match="not valid msgpack"):
        decode_ops(encode_ops([Timestamp(1)])[:-1])


def test_batch_limits_are_enforced():
    with pytest.raises(CodecError, match="1 to"):
        encode_ops([])
    with pytest.raises(CodecError, match="1 to"):
        encode_ops([Timestamp(1)] * (codec.MAX_OPS_PER_BATCH + 1))
    assert len(decode_ops(encode_ops([Timestamp(1)] * codec.MAX_OPS_PER_BATCH))) == (
        codec.MAX_OPS_PER_BATCH
    )


def test_damaged_batches_decode_or_raise_codec_error_never_anything_else():
    import random

    rng = random.Random(3)
    data = encode_ops(list(ONE_OP_PER_CODE.values()))
    outcomes = {"decoded": 0, "rejected": 0}
    for _ in range(3000):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        if rng.random() < 0.2:
            damaged = damaged[: rng.randrange(len(damaged))]
        try:
            decode_ops(bytes(damaged))
            outcomes["decoded"] += 1
        except CodecError:
            outcomes["rejected"] += 1
    assert outcomes["rejected"] > 0 and outcomes["decoded"] > 0


# A batch version 1 wrote (a user with a grant, then a password change), kept byte for byte.
VERSION_1_BATCH = bytes.fromhex(
    "0192921494a76ac3bc7267656ea831302e302e302e25d9292a3044334345443942454331304137373741"
    "45433233434343333533413843303841363333303435459193a3646231a12a92a94c4f41445f50524956"
    "ab53454c4543545f505249569416a76ac3bc7267656ea831302e302e302e25a0"
)


def test_version_1_batches_still_decode_with_no_lockout_policy():
    create, set_password = decode_ops(VERSION_1_BATCH)
    assert create == CreateUser(
        User(
            "jürgen",
            "10.0.0.%",
            "*0D3CED9BEC10A777AEC23CCC353A8C08A633045E",
            (Grant("db1", "*", frozenset({"SELECT_PRIV", "LOAD_PRIV"})),),
        )
    )
    assert (create.user.failed_login_attempts, create.user.password_lock_seconds) == (0, 0)
    assert not create.user.tracks_failed_logins
    assert set_password == SetPassword("jürgen", "10.0.0.%", "")


def test_version_2_writes_the_lockout_policy_and_version_1_shapes_are_refused_in_it():
    assert codec.FORMAT_VERSION >= 2 and {1, 2} <= codec.SUPPORTED_VERSIONS
    user = ONE_OP_PER_CODE[OpCode.CREATE_USER].user
    assert encode_ops([CreateUser(user)])[0] == codec.FORMAT_VERSION
    assert decode_ops(encode_ops([CreateUser(user)]))[0].user.password_lock_seconds == -1
    with pytest.raises(CodecError, match="User: expected 7 fields"):
        decode_ops(bytes([2]) + VERSION_1_BATCH[1:])


def test_version_1_knows_neither_the_new_user_fields_nor_the_new_operation():
    version_2_user = encode_ops([ONE_OP_PER_CODE[OpCode.CREATE_USER]])
    with pytest.raises(CodecError, match="User: expected 4 fields"):
        decode_ops(bytes([1]) + version_2_user[1:])
    version_2_policy = encode_ops([ONE_OP_PER_CODE[OpCode.SET_LOCKOUT_POLICY]])
    with pytest.raises(CodecError, match="unknown op code 25"):
        decode_ops(bytes([1]) + version_2_policy[1:])


# A batch version 3 wrote (a range-partitioned CREATE TABLE, then a TRUNCATE), kept byte for byte.
VERSION_3_BATCH = bytes.fromhex(
    "0392920a9e0706a1749298a16ba3494e54c2c0a0c3c0c298a176aa56415243484152283829c3c0a0c2c0c2a944"
    "55504c494341544591a16b91a16b0291a16b919608a270319091a23130140290a0a46f6c617002933907919609"
    "a270319091a231301e02"
)


def test_version_3_batches_decode_as_range_partitioned_without_rollups():
    create, truncate = decode_ops(VERSION_3_BATCH)
    table = create.table
    assert (table.name, table.schema_version, table.partition_kind) == ("t", 2, PartitionKind.RANGE)
    assert table.partitions == (Partition(8, "p1", (), ("10",), 20, 2),)
    assert (table.temporary_partitions, table.rollups) == ((), ())
    assert truncate == TruncateTable(7, (Partition(9, "p1", (), ("10",), 30, 2),))
    with pytest.raises(CodecError, match="expected 17 fields"):
        decode_ops(bytes([codec.FORMAT_VERSION]) + VERSION_3_BATCH[1:])
    assert decode_ops(encode_ops([create, truncate])) == [create, truncate]


def test_a_list_partitioned_table_round_trips():
    assert decode_ops(encode_ops([CreateTable(LIST_TABLE)]))[0].table == LIST_TABLE


def test_records_decode_as_the_version_that_wrote_them():
    version_1_user = ("u", "%", "", (("*", "*", ("SELECT_PRIV",)),))
    assert decode_record(User, version_1_user, version=1) == User(
        "u", "%", "", (Grant("*", "*", frozenset({"SELECT_PRIV"})),)
    )
    with pytest.raises(CodecError, match="expected 9 fields"):
        decode_record(User, version_1_user)
    version_5_user = encode_record(User("u", failed_login_attempts=1))[:7]
    assert decode_record(User, version_5_user, version=5) == User("u", failed_login_attempts=1)
    with pytest.raises(CodecError, match="expected 9 fields"):
        decode_record(User, version_5_user)
    with pytest.raises(CodecError, match="expected 4 fields"):
        decode_record(User, encode_record(User("u", failed_login_attempts=1)), version=1)
    assert decode_record(Database, (1, "d", ()), version=1) == Database(1, "d")


def test_version_5_columns_carry_their_ids_and_older_columns_get_theirs_in_order():
    table = decode_ops(encode_ops([CreateTable(FULL_TABLE)]))[0].table
    assert [column.id for column in table.columns] == [column.id for column in FULL_TABLE.columns]
    assert all(column.id >> 16 == 1 for column in table.columns), "a new table's columns"
    create, _ = decode_ops(VERSION_3_BATCH)  # written without ids: in order, generation 1
    assert [column.id for column in create.table.columns] == [(1 << 16) + 0, (1 << 16) + 1]
    fields = list(encode_record(FULL_TABLE))
    fields[3] = tuple(column[:8] for column in fields[3])
    old = decode_record(Table, tuple(fields), version=4)
    assert [column.id for column in old.columns] == [column.id for column in FULL_TABLE.columns]
    with pytest.raises(CodecError, match="expected 10 fields"):
        decode_record(Table, tuple(fields))
    negative = (*encode_record(FULL_TABLE.columns[0])[:8], -1, None)
    with pytest.raises(CodecError, match="id -1"):
        decode_record(Column, negative)


def test_a_column_id_is_kept_by_rename_and_never_reused():
    table = FULL_TABLE
    first = table.columns[1]
    renamed = replace(
        table, columns=(table.columns[0], replace(first, name="other"), *table.columns[2:])
    )
    assert renamed.columns[1].id == first.id
    again = replace(
        table,
        schema_version=3,
        columns=(*table.columns[:1], Column(first.name, first.type), *table.columns[2:]),
    )
    assert again.columns[1].id not in {column.id for column in table.columns}
    assert again.columns[1].id >> 16 == 4


def test_a_column_added_later_keeps_its_default_then_as_its_backfill():
    table = replace(FULL_TABLE, schema_version=5)
    added = replace(table, columns=(*table.columns, Column("extra", "INT", default="7")))
    extra = added.columns[-1]
    assert (extra.id >> 16, extra.backfill) == (6, "7")
    modified = replace(extra, type="BIGINT", default=None)  # MODIFY: the id and backfill stay
    again = decode_record(
        Table, encode_record(replace(added, columns=(*added.columns[:-1], modified)))
    )
    assert (again.columns[-1].id, again.columns[-1].backfill, again.columns[-1].default) == (
        extra.id,
        "7",
        None,
    )
