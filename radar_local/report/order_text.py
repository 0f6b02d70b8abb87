"""`radar order`'s text: each criterion's score shown first minus shown later (stats/order.py)."""

from __future__ import annotations

from radar_local.report.markdown import md_table
from radar_local.report.text import ORDER_HEAD, order_line, order_rows
from radar_local.stats.order import OrderEffects


def order_lines(o: OrderEffects) -> list[str]:
    return [str(order_line(o)), "", *md_table(ORDER_HEAD, order_rows(o))]
