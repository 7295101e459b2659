"""A small, safe expression language for rule conditions (no eval, no attribute access).

Supports numbers, strings, True/False/None, names from a context, arithmetic, comparisons
(chained too), ``and``/``or``/``not``, ``in`` with lists/tuples, conditional expressions and the
functions ``min``, ``max``, ``abs``, ``round``, ``len``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMP = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_FUNCS = {"min": min, "max": max, "abs": abs, "round": round, "len": len}


class ExpressionError(ValueError):
    pass


@lru_cache(maxsize=512)
def compile_expression(text: str) -> ast.Expression:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"{text!r} is not a valid condition: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(
            node,
            (
                ast.Attribute,
                ast.Subscript,
                ast.Lambda,
                ast.ListComp,
                ast.DictComp,
                ast.SetComp,
                ast.GeneratorExp,
                ast.Starred,
                ast.NamedExpr,
            ),
        ):
            raise ExpressionError(f"{text!r} uses {type(node).__name__}, which conditions do not allow")
    return tree


def evaluate(text: str, context: Mapping[str, Any]) -> Any:
    """Evaluate ``text`` with names from ``context``. A None operand in a comparison or an
    arithmetic operation makes that comparison False (an unknown figure never fires a rule)."""
    return _eval(compile_expression(text).body, context)


def names_in(text: str) -> set[str]:
    return {n.id for n in ast.walk(compile_expression(text)) if isinstance(n, ast.Name)} - set(_FUNCS)


def _eval(node: ast.AST, ctx: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ctx:
            return ctx[node.id]
        raise ExpressionError(f"unknown name {node.id!r}")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, ctx) for e in node.elts]
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_eval(v, ctx) for v in node.values)
        return any(_eval(v, ctx) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, ctx)
        if isinstance(node.op, ast.Not):
            return not v
        if v is None:
            return None
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, ctx), _eval(node.right, ctx)
        if a is None or b is None:
            return None
        return _BIN[type(node.op)](a, b)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, ctx)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, ctx)
            if (left is None or right is None) and not isinstance(
                op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)
            ):
                return False
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, ctx) if _eval(node.test, ctx) else _eval(node.orelse, ctx)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
        args = [_eval(a, ctx) for a in node.args]
        if any(a is None for a in args):
            return None
        return _FUNCS[node.func.id](*args)
    raise ExpressionError(f"{type(node).__name__} is not allowed in a condition")
