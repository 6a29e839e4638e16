"""What reads and writes take from a DataFrame's options: the FE and account, positive integers,
limits made of them, and the s3_* options of the store."""

from __future__ import annotations

from be.spark.errors import BadOption
from be.storage.limits import COMPRESSIONS
from be.storage.objects import S3Options


def lowered(options) -> dict[str, str]:
    return {key.lower(): value for key, value in dict(options).items()}


def require_fe_user_table(options: dict[str, str], what: str) -> None:
    missing = [key for key in ("fe", "user", "table") if not options.get(key)]
    if missing:
        raise BadOption(f"{what} needs the option {missing[0]}")


def positive_integer(options: dict[str, str], key: str) -> int | None:
    text = options.get(key)
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise BadOption(f"the option {key} is an integer, not {text!r}") from None
    if value <= 0:
        raise BadOption(f"the option {key} is positive, not {value}")
    return value


def limits(kind, options: dict[str, str], keys: tuple[str, ...]):
    """kind (a limits dataclass) with the keys the options give; BadOption if they break it."""
    sizes = {key: positive_integer(options, key) for key in keys}
    try:
        return kind(**{key: n for key, n in sizes.items() if n})
    except ValueError as error:
        raise BadOption(str(error)) from None


def s3_options(options: dict[str, str]) -> S3Options:
    return S3Options(
        endpoint=options.get("s3_endpoint", ""),
        region=options.get("s3_region", ""),
        access_key=options.get("s3_access_key", ""),
        secret_key=options.get("s3_secret_key", ""),
    )


def compression(options: dict[str, str], default: str) -> str:
    """The block compression the option names (ZSTD, LZ4, SNAPPY or NONE), else default."""
    text = options.get("compression", "").strip().upper() or default
    if text not in COMPRESSIONS:
        raise BadOption(f"the option compression is one of {', '.join(COMPRESSIONS)}, not {text!r}")
    return text
