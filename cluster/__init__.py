"""Cluster tooling: the spark-submit entry (`pipeline_main.py`) and a real standalone cluster on
one machine (`standalone.py`, `standalone.sh`)."""
