"""The one byte formatter (features/units.py) on hand-worked amounts."""

from features.units import human_bytes


def test_human_bytes_binary_units_two_decimals():
    assert human_bytes(0) == "0 B"
    assert human_bytes(1023) == "1,023 B"
    assert human_bytes(1024) == "1.00 KiB"
    assert human_bytes(1536) == "1.50 KiB"
    assert human_bytes(1 << 20) == "1.00 MiB"  # exactly a MiB, not 1,024.00 KiB
    assert human_bytes(3 * (1 << 30) // 2) == "1.50 GiB"
    assert human_bytes(582 * 10**12) == "529.33 TiB"  # 582e12 / 2**40
    assert human_bytes(2**50) == "1.00 PiB"
    assert human_bytes(None) == "—" and human_bytes(float("nan")) == "—"


def test_human_bytes_exact_adds_the_count_the_unit_hides():
    assert human_bytes(1_572_864, exact=True) == "1.50 MiB (1,572,864 bytes)"
    assert human_bytes(512, exact=True) == "512 bytes"
    assert human_bytes(None, exact=True) == "—"
