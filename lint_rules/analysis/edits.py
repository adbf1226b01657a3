"""Small LibCST rewrites that fixes share, keeping the call's own layout."""

from __future__ import annotations

import libcst as cst


def append_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``name=value`` added after its last argument, in the call's layout: on one
    line, or on a line of its own with the indentation of the others (a trailing comma kept)."""
    args = list(call.args)
    new = cst.Arg(value=value, keyword=cst.Name(name), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):
            # f(a, b,) or one argument a line: the new argument takes the trailing comma and
            # what follows it; the old last one gets a comma followed like the first argument.
            after: cst.BaseParenthesizableWhitespace = cst.SimpleWhitespace(" ")
            first = call.whitespace_before_args
            if isinstance(last.comma.whitespace_after, cst.ParenthesizedWhitespace) \
                    and isinstance(first, cst.ParenthesizedWhitespace):
                # A line break and the first argument's indentation (not a comment after the "(").
                after = cst.ParenthesizedWhitespace(indent=first.indent, last_line=first.last_line)
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_before=last.comma.whitespace_before,
                                                         whitespace_after=after))
            new = new.with_changes(comma=last.comma)
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=args + [new])
