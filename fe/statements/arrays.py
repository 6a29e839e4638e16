"""Doris's arrays in queries: the functions that make and read them, as DuckDB lists, and an
array's text in an answer, as Doris's MySQL result writer gives it (`[1, 2]`, `["a", null]`:
elements apart by ", ", texts in double quotes, NULL as null, booleans as 1 and 0).

The array functions come whole from sqlglot where it models them as DuckDB means them
(ARRAY_AGG, ARRAY_CONTAINS, ARRAY_SIZE, ARRAY_JOIN, ARRAY_MAX / MIN / SUM, SPLIT_BY_STRING, the
ARRAY(...) and [...] constructors); the rest are rewritten here. Indexes are Doris's: 1 is the
first element, -1 the last."""

from __future__ import annotations

import datetime
import decimal
import functools

from sqlglot import exp

from fe.mysql.errors import ErrorCode, QueryError

NULL_ELEMENT = "null"
SEPARATOR = ", "
ELEMENT_BYTES = 16  # what DuckDB keeps of a list's element at least (a text's header)


def is_array(duck_type: str) -> bool:
    """Whether a DuckDB result type is a list (`INTEGER[]`, `DECIMAL(10,2)[]`, `VARCHAR[][]`),
    a map or a struct (a column of those types): answered as their text."""
    return duck_type.endswith("]") or duck_type.startswith(("MAP(", "STRUCT("))


def text(value: list | dict | None) -> str | None:
    """An array's (map's, struct's) text in an answer; NULL stays NULL."""
    return None if value is None else _element(value)


def _array(values: list) -> str:
    if values and all(type(value) is tuple for value in values):  # a map, as Arrow gives it
        return _members(values)
    return "[" + SEPARATOR.join(map(_element, values)) + "]"


def _members(pairs) -> str:
    """A map's or struct's text as Doris writes it: `{"a":1, "b":null}`."""
    return "{" + SEPARATOR.join(f"{_element(k)}:{_element(v)}" for k, v in pairs) + "}"


def _element(value) -> str:
    if value is None:
        return NULL_ELEMENT
    kind = type(value)
    if kind is str:
        return f'"{value}"'
    if kind is bool:
        return "1" if value else "0"
    if kind is list:
        return _array(value)
    if kind is dict:
        return _members(value.items())
    if kind is float:
        return repr(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
    if kind is datetime.datetime:
        return value.isoformat(" ")
    if kind is bytes:
        return f'"{value.decode(errors="replace")}"'
    if kind in (int, decimal.Decimal, datetime.date):
        return str(value)
    return f'"{value}"'


def rows_with_text(
    rows: list[tuple], positions: frozenset[int], hidden: frozenset[int] = frozenset()
) -> list[tuple]:
    """rows with the arrays at positions as their text, those at hidden as NULL (BITMAP and HLL
    values: Doris answers them so)."""
    return [
        tuple(
            (None if at in hidden else text(value)) if at in positions else value
            for at, value in enumerate(row)
        )
        for row in rows
    ]


def hidden_at(duck_types) -> frozenset[int]:
    """The positions of BITMAP and HLL values among a result's engine types."""
    return frozenset(at for at, duck_type in enumerate(duck_types) if duck_type == BITMAP_TYPE)


BITMAP_TYPE = "UBIGINT[]"  # a BITMAP's or an HLL's engine type (Doris has no unsigned types)


def _collected(distinct: bool):
    """Doris's COLLECT_LIST / COLLECT_SET(x [, most]): x's values but NULLs, [] for none (in a
    window too: _empty_window_collected)."""

    def rewrite(node: exp.Anonymous, time) -> exp.Expression:
        if len(node.expressions) not in (1, 2):
            return node
        value = node.expressions[0]
        gathered = exp.Distinct(expressions=[value]) if distinct else value
        kept = exp.Filter(
            this=exp.ArrayAgg(this=gathered),
            expression=exp.Where(this=exp.not_(exp.Is(this=value.copy(), expression=exp.Null()))),
        )
        most = node.expressions[1] if len(node.expressions) == 2 else None
        if isinstance(node.parent, exp.Window):  # OVER (...) takes the aggregate itself
            kept.meta[COLLECTED] = most or True
            return kept
        return _at_most(exp.Coalesce(this=kept, expressions=[exp.Array(expressions=[])]), most)

    return rewrite


COLLECTED = "quire_collected"  # meta of a COLLECT_LIST / COLLECT_SET made a window's aggregate


def _at_most(array: exp.Expression, most: exp.Expression | None) -> exp.Expression:
    return array if most is None else _function("list_slice", array, exp.Literal.number(1), most)


def _empty_window_collected(window: exp.Window, time) -> exp.Expression:
    """A window's COLLECT_LIST / COLLECT_SET: [] where its frame holds no value, not NULL; at
    most its most elements."""
    collected = window.this.meta.get(COLLECTED)
    if not collected:
        return window
    # a copy: the window is replaced by what holds it
    array = exp.Coalesce(this=window.copy(), expressions=[exp.Array(expressions=[])])
    return _at_most(array, None if collected is True else collected)


def _bracket(node: exp.Bracket, time) -> exp.Expression:
    """a[i] as Doris reads it (sqlglot takes MySQL's brackets as 0-based)."""
    if len(node.expressions) != 1 or node.args.get("offset") == 1:
        return node
    return _item(node.this, node.expressions[0])


def _element_at(node: exp.Anonymous, time) -> exp.Expression:
    """Doris's ELEMENT_AT(a, i), as a[i]."""
    return _item(*node.expressions) if len(node.expressions) == 2 else node


def _item(container: exp.Expression, index: exp.Expression) -> exp.Expression:
    """An array's element (1 the first, -1 the last), or a MAP column's value of a key (NULL if
    it has none)."""
    if container.is_type(exp.DataType.Type.MAP):
        return _function("map_extract_value", container, index)
    text_types = (*exp.DataType.TEXT_TYPES, exp.DataType.Type.JSON, exp.DataType.Type.VARIANT)
    if container.is_type(*text_types) and isinstance(index, exp.Literal) and index.is_string:
        # a VARIANT's (or JSON text's) member, as JSON: v['a'], v['a']['b']
        key = index.this.replace("\\", "\\\\").replace('"', '\\"')
        found = _function("json_extract", container, exp.Literal.string(f'$."{key}"'))
        found.type = exp.DataType.build("JSON")
        return found
    return _function("list_extract", container, index)


def _function(name: str, *arguments: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(arguments))


def _sorted(node: exp.ArraySort, time) -> exp.Expression:
    """Doris's ARRAY_SORT: ascending, NULLs first."""
    if node.expression is not None:
        return node
    first = exp.Literal.string("NULLS FIRST")
    return _function("list_sort", node.this, exp.Literal.string("ASC"), first)


def _lateral_views(select: exp.Select, time) -> exp.Expression:
    """Doris's `FROM t LATERAL VIEW [OUTER] explode(a) v AS c`: t joined to the unnested
    array, a row per element (the OUTER forms keep a row of an empty or NULL array, with NULL)."""
    laterals = select.args.get("laterals")
    if not laterals or not all(lateral.args.get("view") for lateral in laterals):
        return select
    joins = []
    for lateral in laterals:
        unnested = _unnested(lateral.this)
        if unnested is None:
            return select
        array, outer = unnested
        alias = lateral.args.get("alias")
        unnest = exp.Unnest(expressions=[array], alias=alias.copy() if alias else None)
        outer = outer or bool(lateral.args.get("outer"))
        if outer:
            joins.append(exp.Join(this=unnest, side="LEFT", on=exp.true()))
        else:
            joins.append(exp.Join(this=unnest, kind="CROSS"))
    select.set("laterals", None)
    select.set("joins", [*(select.args.get("joins") or []), *joins])
    return select


def _unnested(function: exp.Expression) -> tuple[exp.Expression, bool] | None:
    """The array a table function unnests, and whether it keeps a row without elements (the
    _OUTER forms); EXPLODE_SPLIT and EXPLODE_NUMBERS are EXPLODE's by now (mysql_functions)."""
    if isinstance(function, exp.ExplodeOuter | exp.Explode):
        outer = isinstance(function, exp.ExplodeOuter) or function.meta.get(OUTER, False)
        return function.this, outer
    return None


OUTER = "quire_outer"  # meta of an EXPLODE made for an _OUTER table function


def exploded(array: exp.Expression, outer: bool) -> exp.Expression:
    explode = exp.Explode(this=array)
    explode.meta[OUTER] = outer
    return explode


def _named_struct(node: exp.Anonymous, time) -> exp.Expression:
    """Doris's NAMED_STRUCT('a', x, 'b', y): a struct of fields a and b."""
    arguments = node.expressions
    names = arguments[::2]
    if len(arguments) % 2 or not arguments:
        raise QueryError(1105, "named_struct requires an even number of arguments")
    if not all(isinstance(name, exp.Literal) and name.is_string for name in names):
        raise QueryError(1105, "named_struct's field names must be string literals")
    if len({name.this.lower() for name in names}) != len(names):
        raise QueryError(1105, "named_struct's field names must be unique")
    return _struct([(name.this, value) for name, value in zip(names, arguments[1::2], strict=True)])


def _positional_struct(node: exp.Struct, time) -> exp.Expression:
    """Doris's STRUCT(x, y) and {x, y}: fields named col1, col2, ... (a struct of named fields,
    as the FE's rewrites make, stays as it is)."""
    if not node.expressions or any(isinstance(e, exp.PropertyEQ) for e in node.expressions):
        return node
    return _struct([(f"col{i}", value) for i, value in enumerate(node.expressions, 1)])


def _struct(fields: list[tuple[str, exp.Expression]]) -> exp.Struct:
    return exp.Struct(
        expressions=[
            exp.PropertyEQ(this=exp.to_identifier(name), expression=value) for name, value in fields
        ]
    )


REWRITES = {
    "NAMED_STRUCT": _named_struct,
    "STRUCT": _positional_struct,
    "COLLECT_LIST": _collected(distinct=False),
    "GROUP_ARRAY": _collected(distinct=False),
    "COLLECT_SET": _collected(distinct=True),
    "GROUP_UNIQ_ARRAY": _collected(distinct=True),
    "ARRAY_SORT": _sorted,
    "ELEMENT_AT": _element_at,
    # sqlglot writes DuckDB's as ARRAY_CONTAINS(MAP_KEYS(key), map)
    "MAP_CONTAINS_KEY": lambda node, time: _function("map_contains", node.this, node.args["key"]),
}
# Doris's array, map and struct functions that are DuckDB's of the same arguments: its name,
# how many
LIST_FUNCTIONS = {
    "SIZE": ("len", 1),
    "CARDINALITY": ("len", 1),
    "ARRAY_AVG": ("list_avg", 1),
    "MAP_VALUES": ("map_values", 1),
    "STRUCT_ELEMENT": ("struct_extract", 2),
}
OPERATOR_REWRITES = {
    exp.Bracket: _bracket,
    exp.Select: _lateral_views,
    exp.Window: _empty_window_collected,
}


def _unknown(node: exp.Expression) -> QueryError:
    """A Doris function given arguments it does not take: unknown, as Doris's FE answers."""
    return QueryError(ErrorCode.SP_DOES_NOT_EXIST, f"FUNCTION {node.name.lower()} does not exist")


def _lambda_call(node: exp.Anonymous, most_arrays: int = 0) -> tuple[exp.Lambda, list]:
    """The lambda and the arrays of Doris's FN(x -> f, a [, b ...]): a parameter an array."""
    if not node.expressions:
        raise _unknown(node)
    lambda_, *arrays = node.expressions
    fits = isinstance(lambda_, exp.Lambda) and len(lambda_.expressions) == len(arrays) >= 1
    if not fits or (most_arrays and len(arrays) > most_arrays):
        raise _unknown(node)
    return lambda_, arrays


def _names(inside: list[exp.Expression]) -> tuple[str, str]:
    """The names the arrays and an element's index go by: not those of a lambda around or
    within (the lambdas already within tell the depth)."""
    depth = sum(1 for part in inside for _ in part.find_all(exp.Lambda))
    return f"quire_arrays_{depth}", f"quire_i_{depth}"


def _each(lambda_: exp.Lambda, arrays: str, index: str, truth: bool = False) -> exp.Lambda:
    """The user's lambda as DuckDB's over the first array's elements and their index, its other
    parameters the other arrays' elements at that index; truth: its value as a BOOLEAN (Doris's:
    not 0)."""
    first, *others = (parameter.name for parameter in lambda_.expressions)
    body = lambda_.this.copy()
    for at, name in enumerate(others, 2):
        for use in _parameter_uses(body, name):
            element = _element_of(_bound_array(arrays, at), index)
            body = element if use is body else body
            use.replace(element)
    if truth:
        body = exp.cast(body, exp.DataType.Type.BOOLEAN)
    return exp.Lambda(this=body, expressions=[exp.to_identifier(first), exp.to_identifier(index)])


def _parameter_uses(body: exp.Expression, name: str) -> list[exp.Expression]:
    return [
        part
        for part in body.walk()
        if (isinstance(part, exp.Identifier) and not isinstance(part.parent, exp.Column))
        and part.name == name
        or (isinstance(part, exp.Column) and not part.table and part.name == name)
    ]


def _bound_array(arrays: str, at: int) -> exp.Column:
    return exp.column(f"a{at}", table=arrays)


def _element_of(array: exp.Expression, index: str) -> exp.Expression:
    return _function("list_extract", array, exp.column(index))


def _with_arrays(arrays: list, names: tuple[str, str], make, nullable: int = 0) -> exp.Expression:
    """make(the arrays, each worked out once): NULL if one of the first nullable (all, if 0) is
    NULL, Doris's error if their lengths differ."""
    bound, _ = names
    fields = [
        exp.PropertyEQ(this=exp.to_identifier(f"a{at}"), expression=array)
        for at, array in enumerate(arrays, 1)
    ]
    read = [_bound_array(bound, at) for at in range(1, len(arrays) + 1)]
    null = exp.or_(
        *(exp.Is(this=a.copy(), expression=exp.null()) for a in read[: nullable or None])
    )
    case = exp.Case().when(null, exp.null())
    if len(read) > 1 and not nullable:
        lengths = [_function("len", array.copy()) for array in read]
        differ = exp.or_(*(exp.NEQ(this=lengths[0].copy(), expression=n) for n in lengths[1:]))
        message = exp.Literal.string("lambda argument must have same length")
        case = case.when(differ, _function("error", message))
    made = exp.Lambda(this=case.else_(make(*read)), expressions=[exp.to_identifier(bound)])
    once = _function(
        "list_transform", exp.Array(expressions=[exp.Struct(expressions=fields)]), made
    )
    return _function("list_extract", once, exp.Literal.number(1))


def _elementwise(make_from, most_arrays: int = 0, truth: bool = False):
    """Doris's FN(x -> f, a [, b ...]): make_from(the first array, the lambda over its elements)."""

    def rewrite(node: exp.Anonymous, time) -> exp.Expression:
        lambda_, arrays = _lambda_call(node, most_arrays)
        names = _names([lambda_, *arrays])
        each = _each(lambda_, names[0], names[1], truth)
        return _with_arrays(arrays, names, lambda first, *_: make_from(first, each))

    return rewrite


def _counted(first: exp.Expression, each: exp.Lambda) -> exp.Expression:
    return _function("len", _function("list_filter", first, each))


def _first_index(first: exp.Expression, each: exp.Lambda) -> exp.Expression:
    found = _function("list_position", _function("list_transform", first, each), exp.true())
    return exp.Coalesce(this=found, expressions=[exp.Literal.number(0)])


def _last_index(first: exp.Expression, each: exp.Lambda) -> exp.Expression:
    index = each.expressions[1].name
    each.set("this", exp.If(this=each.this, true=exp.column(index), false=exp.Literal.number(0)))
    found = _function("list_max", _function("list_transform", first, each))
    return exp.Coalesce(this=found, expressions=[exp.Literal.number(0)])


def _sorted_by(array: exp.Expression, keys: exp.Expression, index: str) -> exp.Expression:
    """array's elements in the order of their keys (ascending, NULL first; equal ones as they
    come)."""
    key = _element_of(keys, index)
    order = exp.Struct(
        expressions=[
            exp.PropertyEQ(
                this=exp.to_identifier("n"),
                expression=exp.not_(exp.Is(this=key.copy(), expression=exp.null())),
            ),
            exp.PropertyEQ(this=exp.to_identifier("k"), expression=key),
            exp.PropertyEQ(this=exp.to_identifier("i"), expression=exp.column(index)),
        ]
    )
    element = exp.to_identifier("quire_element")
    keyed = _function(
        "list_transform",
        array,
        exp.Lambda(this=order, expressions=[element, exp.to_identifier(index)]),
    )
    back = exp.Lambda(
        this=_function("list_extract", array.copy(), exp.column("i", table=index)),
        expressions=[exp.to_identifier(index)],
    )
    return _function("list_transform", _function("list_sort", keyed), back)


def _array_sortby(node: exp.Anonymous, time) -> exp.Expression:
    """Doris's ARRAY_SORTBY(a, keys), ARRAY_SORTBY(x -> key, a): a's elements by their keys; a
    NULL a is NULL, NULL keys leave a as it is."""
    arguments = node.expressions
    if arguments and isinstance(arguments[0], exp.Lambda):
        lambda_, arrays = _lambda_call(node)
        names = _names([lambda_, *arrays])
        each = _each(lambda_, *names)

        def by_lambda(first, *_):
            return _sorted_by(first, _function("list_transform", first.copy(), each), names[1])

        return _with_arrays(arrays, names, by_lambda)
    if len(arguments) != 2:
        raise _unknown(node)
    names = _names(arguments)

    def by_keys(array, keys):
        kept = exp.Is(this=keys.copy(), expression=exp.null())
        return exp.If(this=kept, true=array.copy(), false=_sorted_by(array, keys, names[1]))

    return _with_arrays(arguments, names, by_keys, nullable=1)


def _array_filter(node: exp.Anonymous, time) -> exp.Expression:
    """Doris's ARRAY_FILTER(x -> cond, a [, b ...]) and ARRAY_FILTER(a, booleans): the elements
    whose condition (or boolean at their place) is true."""
    arguments = node.expressions
    if arguments and isinstance(arguments[0], exp.Lambda):
        return _elementwise(functools.partial(_function, "list_filter"), truth=True)(node, time)
    if len(arguments) != 2:
        raise _unknown(node)
    names = _names(arguments)

    def by_booleans(array, booleans):
        kept = exp.cast(_element_of(booleans, names[1]), exp.DataType.Type.BOOLEAN)
        each = exp.Lambda(
            this=kept, expressions=[exp.to_identifier("quire_element"), exp.to_identifier(names[1])]
        )
        return _function("list_filter", array, each)

    return _with_arrays(arguments, names, by_booleans, nullable=1)


def _without_lambda(rewrite):
    """Doris's ARRAY_COUNT(a) and ARRAY_EXISTS(a): as of the lambda x -> x."""

    def either(node: exp.Anonymous, time) -> exp.Expression:
        if len(node.expressions) == 1 and not isinstance(node.expressions[0], exp.Lambda):
            x = exp.to_identifier("x")
            node = exp.Anonymous(
                this=node.name,
                expressions=[exp.Lambda(this=x.copy(), expressions=[x]), node.expressions[0]],
            )
        return rewrite(node, time)

    return either


LAMBDA_FUNCTIONS = {
    "ARRAY_MAP": _elementwise(functools.partial(_function, "list_transform")),
    "ARRAY_FILTER": _array_filter,
    "ARRAY_EXISTS": _without_lambda(
        _elementwise(functools.partial(_function, "list_transform"), truth=True)
    ),
    "ARRAY_COUNT": _without_lambda(_elementwise(_counted, truth=True)),
    "ARRAY_FIRST": _elementwise(
        lambda first, each: _function(
            "list_extract", _function("list_filter", first, each), exp.Literal.number(1)
        ),
        most_arrays=1,
        truth=True,
    ),
    "ARRAY_LAST": _elementwise(
        lambda first, each: _function(
            "list_extract", _function("list_filter", first, each), exp.Literal.number(-1)
        ),
        most_arrays=1,
        truth=True,
    ),
    "ARRAY_FIRST_INDEX": _elementwise(_first_index, truth=True),
    "ARRAY_LAST_INDEX": _elementwise(_last_index, truth=True),
    "ARRAY_SORTBY": _array_sortby,
}
REWRITES.update(LAMBDA_FUNCTIONS)
