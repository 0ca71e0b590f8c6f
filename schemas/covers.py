"""bronze/covers — each log's minimum I/O covering set, computed by ingest where it decodes the log.

The rows and columns of silver/covering_sets (see its doc), for the logs ingest covered: the
covering stage copies them into silver/covering_sets and runs its own Spark pass only for the
logs ingest did not cover. A log ingest covered has `covers` in its ledger row's `row_counts`
(0 when it has no interval, hence no row); one it did not cover (a huge DXT log whose segments
were streamed to disk, a lake ingested before this table, `ingest.covers: false`) has not.
"""

from dataclasses import replace

from schemas.covering_sets import SPEC as SILVER_SPEC

SPEC = replace(SILVER_SPEC, name="covers", layer="bronze", doc=__doc__)
