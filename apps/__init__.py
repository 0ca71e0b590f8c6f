"""What users call on the lake: job reports, the PrismIO analysis API, SQL views, table
maintenance and one-off predictions. Everything here reads or writes the lake through the
platform in `iolake/` (config, Spark session, lake access, gates, stage runner, CLI)."""
