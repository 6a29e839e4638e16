import logging
import threading
import time

import pytest

from image.identity import (
    ClusterIdentity,
    IdentityError,
    NodeRole,
    new_identity,
    read_role,
    read_version,
    write_role,
    write_version,
)
from image.images import ImageError, ImageStore, load_image, verify
from metadata import codec
from metadata.catalog import ApplyError, Catalog, initial_ops
from metadata.codec import encode_ops
from metadata.ops import (
    AddBackend,
    AddFrontend,
    CreateDatabase,
    CreateRole,
    CreateTable,
    CreateUser,
    DropTable,
    GrantPrivileges,
    GrantRole,
    ReplaceTable,
    SetGlobalVariable,
    SetLockoutPolicy,
    SetUserProperties,
    Timestamp,
)
from metadata.records import (
    Backend,
    Column,
    Database,
    Frontend,
    FrontendRole,
    Grant,
    KeyModel,
    Partition,
    Role,
    Table,
    User,
)


def ddl_ops(count, first_id=20_000):
    """Creates, renames and drops of tables spread over a few databases, in a fixed order."""
    ops = [CreateDatabase(Database(first_id + i, f"db_{i}")) for i in range(3)]
    next_id = first_id + 10
    live = []
    for i in range(count):
        if i % 7 == 6 and live:
            ops.append(DropTable(live.pop(0).id))
            continue
        if i % 5 == 4 and live:
            table = live.pop()
            renamed = Table(
                table.id,
                table.db_id,
                table.name + "_r",
                (*table.columns, Column(f"c{i}", "INT")),
                partitions=table.partitions,
            )
            live.append(renamed)
            ops.append(ReplaceTable(renamed))
            continue
        table = Table(
            next_id,
            first_id + i % 3,
            f"tbl_{i}",
            (Column("id", "BIGINT", nullable=False, is_key=True), Column("名前", "VARCHAR(9)")),
            key_model=KeyModel.UNIQUE,
            key_columns=("id",),
            partitions=(Partition(next_id + 1, "p", (), (), next_id + 2, 8),),
            buckets=8,
        )
        next_id += 10
        live.append(table)
        ops.append(CreateTable(table))
        if i % 50 == 0:
            ops.append(Timestamp(1_700_000_000_000 + i))
    return ops


def full_catalog():
    catalog = Catalog()
    for op in [
        *initial_ops(),
        *ddl_ops(300),
        GrantPrivileges("admin", "%", Grant("db_1", "*", frozenset({"SELECT"}))),
        CreateUser(User("guarded", "10.%", "", (), 3, 86_400, 80_000)),
        SetLockoutPolicy("admin", "%", 5, -1, 80_001),
        CreateRole(Role("readers", "reads db_1", (Grant("db_1", "*", frozenset({"SELECT"})),))),
        GrantRole("guarded", "10.%", "readers"),
        SetUserProperties("guarded", (("max_user_connections", "5"),)),
        AddFrontend(Frontend("fe_a", "127.0.0.1", 9010, 8030, 9030)),
        AddFrontend(Frontend("fe_b", "127.0.0.2", 9010, role=FrontendRole.OBSERVER)),
        AddBackend(Backend(90_000, "127.0.0.3", 9050, (("tag", "x"),))),
        SetGlobalVariable("time_zone", "Europe/Paris"),
    ]:
        catalog.apply(op)
    return catalog


def flip_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_image_round_trip_preserves_the_whole_catalog(tmp_path):
    catalog = full_catalog()
    store = ImageStore(tmp_path / "image")
    info = store.write(catalog.snapshot())
    assert info.journal_id == catalog.journal_id
    assert info.path.name == f"image.{catalog.journal_id}"
    assert info.size == info.path.stat().st_size
    assert not (tmp_path / "image" / "image.ckpt").exists()

    loaded, loaded_info = store.load_newest()
    assert loaded_info == info
    assert loaded.canonical_dump() == catalog.canonical_dump()
    guarded = loaded.users[("guarded", "10.%")]
    assert loaded.roles == catalog.roles and guarded.roles == ("readers",)
    assert guarded.properties == (("max_user_connections", "5"),)
    assert loaded.tablet_count() == catalog.tablet_count() > 0
    some_table = next(iter(catalog.tables.values()))
    tablet_id = some_table.partitions[0].tablet_start + 3
    assert loaded.tablet(tablet_id) == (some_table, some_table.partitions[0], 3)
    assert verify(info.path) == info
    with store.stream(info.journal_id) as file:
        assert file.read() == info.path.read_bytes()


def test_an_image_written_by_codec_version_1_still_loads(tmp_path, monkeypatch):
    catalog = Catalog()
    # Version 1 stores no schema versions: a catalog whose tables never changed columns, all at 1.
    for op in [*initial_ops(), *(op for op in ddl_ops(20) if not isinstance(op, ReplaceTable))]:
        catalog.apply(op)
    for port in (9010, 9011):  # given connection prefixes 0 and 1, which version 1 does not store
        catalog.apply(AddFrontend(Frontend(f"fe_{port}", "127.0.0.1", port)))
    version_1_user = (
        lambda user: (
            user.name,
            user.host,
            user.password_hash,
            tuple(map(codec._encode_grant, user.grants)),
        ),
        codec._decode_user,
    )
    with monkeypatch.context() as version_1:
        version_1.setattr(codec, "FORMAT_VERSION", 1)
        version_1.setitem(codec._RECORD_CODECS, User, version_1_user)
        version_1_table = (
            lambda table: (
                *(fields := codec._encode_table(table))[:3],
                tuple(column[:8] for column in fields[3]),  # no column ids
                *fields[4:9],
                tuple(partition[:6] for partition in fields[9]),
                *fields[10:13],
            ),
            codec._decode_table,
        )
        version_1.setitem(codec._RECORD_CODECS, Table, version_1_table)
        version_1_frontend = (lambda f: codec._encode_frontend(f)[:-1], codec._decode_frontend)
        version_1.setitem(codec._RECORD_CODECS, Frontend, version_1_frontend)
        info = ImageStore(tmp_path).write(catalog.snapshot())
    loaded = load_image(info.path)
    assert loaded.canonical_dump() == catalog.canonical_dump()
    assert loaded.users[("root", "%")].failed_login_attempts == 0
    assert [f.connection_prefix for f in loaded.frontends.values()] == [0, 1]


def test_empty_catalog_and_missing_directory(tmp_path):
    store = ImageStore(tmp_path / "nothing_yet")
    assert store.images() == []
    assert store.load_newest() is None
    info = store.write(Catalog().snapshot())
    assert info.journal_id == 0
    loaded, _ = store.load_newest()
    assert loaded.canonical_dump() == Catalog().canonical_dump()
    with pytest.raises(ImageError, match="no image image.5"):
        store.stream(5)


def test_retention_keeps_the_newest_images(tmp_path):
    store = ImageStore(tmp_path, keep=2)
    catalog = Catalog()
    written = []
    for op in ddl_ops(20)[:4]:
        catalog.apply(op)
        written.append(store.write(catalog.snapshot()).journal_id)
    assert [info.journal_id for info in store.images()] == written[::-1][:2]
    (tmp_path / "image.ckpt").write_bytes(b"half written")
    (tmp_path / "ROLE").write_text("role=FOLLOWER\nname=x\n")
    assert [info.journal_id for info in store.images()] == written[::-1][:2]


def two_images(tmp_path):
    store = ImageStore(tmp_path)
    catalog = Catalog()
    ops = ddl_ops(100)
    for op in ops[:50]:
        catalog.apply(op)
    older = store.write(catalog.snapshot())
    older_dump = catalog.canonical_dump()
    for op in ops[50:]:
        catalog.apply(op)
    newer = store.write(catalog.snapshot())
    return store, older, older_dump, newer


@pytest.mark.parametrize(
    "damage, cause",
    [
        (lambda path: flip_byte(path, path.stat().st_size // 2), "checksum mismatch|damaged"),
        (lambda path: flip_byte(path, 20), "damaged header|checksum mismatch"),
        (lambda path: flip_byte(path, 0), "not an image file"),
        (lambda path: flip_byte(path, path.stat().st_size - 3), "checksum mismatch"),
        (lambda path: path.write_bytes(path.read_bytes()[:-100]), "truncated"),
        (lambda path: path.write_bytes(path.read_bytes()[:10]), "truncated"),
        (lambda path: path.write_bytes(b""), "truncated"),
    ],
    ids=["body", "header", "magic", "trailer", "truncated", "prefix_only", "empty"],
)
def test_damaged_newest_image_falls_back_to_the_older_one(tmp_path, caplog, damage, cause):
    store, older, older_dump, newer = two_images(tmp_path)
    damage(newer.path)
    with pytest.raises(ImageError, match=cause):
        verify(newer.path)
    assert [info.journal_id for info in store.images()] == [newer.journal_id, older.journal_id]
    with caplog.at_level(logging.ERROR, logger="image.images"):
        loaded, info = store.load_newest()
    assert info == older
    assert loaded.canonical_dump() == older_dump
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert newer.path.name in errors[0].getMessage()
    assert "falling back" in errors[0].getMessage()


def test_images_report_the_raft_index_their_header_holds(tmp_path):
    store, older, _, newer = two_images(tmp_path)
    catalog = Catalog()
    catalog.apply_entry(41, encode_ops(ddl_ops(200)))
    newest = store.write(catalog.snapshot())
    assert newest.raft_index == 41
    flip_byte(newer.path, 0)
    assert [(i.journal_id, i.raft_index) for i in store.images()] == [
        (newest.journal_id, 41),
        (newer.journal_id, -1),
        (older.journal_id, 0),
    ]


def test_all_images_damaged_is_an_error_naming_each(tmp_path):
    store, older, _, newer = two_images(tmp_path)
    flip_byte(older.path, older.path.stat().st_size // 2)
    newer.path.write_bytes(newer.path.read_bytes()[:-1])
    with pytest.raises(ImageError) as caught:
        store.load_newest()
    message = str(caught.value)
    assert "none of the 2 images" in message
    assert older.path.name in message and newer.path.name in message


def test_image_named_for_another_journal_id_is_rejected(tmp_path):
    store, older, _, newer = two_images(tmp_path)
    wrong = tmp_path / f"image.{newer.journal_id + 1}"
    wrong.write_bytes(newer.path.read_bytes())
    with pytest.raises(ImageError, match="file name says journal id"):
        load_image(wrong)
    assert store.load_newest()[1] == newer


def test_image_from_a_snapshot_is_the_state_at_snapshot_time_despite_later_writes(tmp_path):
    ops = ddl_ops(6000)
    catalog = Catalog()
    reached = threading.Event()

    def writer():
        for position, op in enumerate(ops):
            if position == 1000:
                reached.set()
            if position % 100 == 0:
                time.sleep(0)  # let the snapshotting thread in while writes go on
            catalog.apply(op)

    thread = threading.Thread(target=writer)
    thread.start()
    assert reached.wait(timeout=30)
    snapshot = catalog.snapshot()
    info = ImageStore(tmp_path).write(snapshot)
    thread.join(timeout=60)
    assert not thread.is_alive()

    expected = Catalog()
    for op in ops[: snapshot.journal_id]:
        expected.apply(op)
    assert info.journal_id == snapshot.journal_id
    assert 1000 <= snapshot.journal_id < catalog.journal_id
    assert load_image(info.path).canonical_dump() == expected.canonical_dump()


def test_replaying_the_journal_onto_an_image_matches_the_live_catalog(tmp_path):
    ops = [*initial_ops(), *ddl_ops(1500)]
    ops.insert(100, CreateDatabase(Database(20_000, "db_0")))  # rejected: name exists
    batches = [encode_ops(ops[i : i + 7]) for i in range(0, len(ops), 7)]
    live = Catalog()
    store = ImageStore(tmp_path)
    rejected = 0
    for raft_index, batch in enumerate(batches, start=1):
        rejected += sum(isinstance(r, ApplyError) for r in live.apply_entry(raft_index, batch))
        if raft_index == len(batches) // 3:
            store.write(live.snapshot())
    assert rejected == 1

    restarted, info = store.load_newest()
    assert 0 < info.journal_id < live.journal_id
    assert info.raft_index == restarted.raft_index == len(batches) // 3
    for raft_index, batch in enumerate(batches, start=1):
        restarted.apply_entry(raft_index, batch)  # entries already in the image are skipped
    assert restarted.canonical_dump() == live.canonical_dump()
    assert restarted.journal_id == len(ops)


def test_version_file_round_trip_and_doris_style_content(tmp_path):
    assert read_version(tmp_path) is None
    identity = new_identity()
    assert 0 < identity.cluster_id < 2**31 and len(identity.token) >= 32
    assert new_identity().token != identity.token
    write_version(tmp_path, identity)
    assert read_version(tmp_path) == identity
    assert (tmp_path / "VERSION").read_text() == (
        f"clusterId={identity.cluster_id}\ntoken={identity.token}\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["VERSION"]
    (tmp_path / "VERSION").write_text("#Mon Jan 01 CST 2024\nclusterId=1234\ntoken=abc-def\n")
    assert read_version(tmp_path) == ClusterIdentity(1234, "abc-def")
    assert new_identity(77).cluster_id == 77


@pytest.mark.parametrize(
    "content, message",
    [
        ("clusterId=12\n", "missing token="),
        ("token=x\n", "missing clusterId="),
        ("clusterId=abc\ntoken=x\n", "bad clusterId 'abc'"),
        ("clusterId=-5\ntoken=x\n", "bad clusterId"),
        ("clusterId 12\ntoken=x\n", "line 1 is not key=value"),
    ],
)
def test_malformed_version_file_is_a_clear_error(tmp_path, content, message):
    (tmp_path / "VERSION").write_text(content)
    with pytest.raises(IdentityError, match=message) as caught:
        read_version(tmp_path)
    assert "VERSION" in str(caught.value)


def test_role_file_round_trip_and_errors(tmp_path):
    assert read_role(tmp_path) is None
    write_role(tmp_path, NodeRole("OBSERVER", "fe_127.0.0.1_9010_1700000000"))
    assert read_role(tmp_path) == NodeRole("OBSERVER", "fe_127.0.0.1_9010_1700000000")
    assert (tmp_path / "ROLE").read_text() == "role=OBSERVER\nname=fe_127.0.0.1_9010_1700000000\n"
    (tmp_path / "ROLE").write_text("role=LEADER\nname=x\n")
    with pytest.raises(IdentityError, match="role must be one of FOLLOWER, OBSERVER"):
        read_role(tmp_path)
    with pytest.raises(ValueError):
        write_role(tmp_path, NodeRole("MASTER", "x"))
    with pytest.raises(ValueError):
        write_version(tmp_path, ClusterIdentity(0, "t"))
