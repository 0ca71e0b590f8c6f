"""How the report, its job-summary sections and the terminal summary print an amount of bytes: one
formatter, so a figure reads the same in every table, plot label and line. Pure Python."""

from __future__ import annotations

import math

UNITS = (
    "B",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "PiB",
    "EiB",
)  # binary, as Darshan's and pydarshan's sizes


def human_bytes(n, exact: bool = False) -> str:
    """`n` bytes in the largest binary unit under it, two decimals ("1.50 MiB"; under 1 KiB the
    count, "512 B"); "—" for null or NaN. `exact` adds the count in bytes when the unit hides it
    ("1.50 MiB (1,572,864 bytes)"; "512 bytes")."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "—"
    x = float(n)
    if abs(x) < 1024:
        return f"{int(x):,} bytes" if exact else f"{x:,.0f} B"
    k = 0
    while abs(x) >= 1024 ** (k + 1) and k < len(UNITS) - 1:
        k += 1
    text = f"{x / 1024**k:,.2f} {UNITS[k]}"
    return f"{text} ({int(x):,} bytes)" if exact else text
