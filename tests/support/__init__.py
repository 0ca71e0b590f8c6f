"""Code the tests share, and the only part of tests/ that bench/ and native/fuzz may import.

- data.py: the project root, ../shared/data, and the skip-or-fail rule (`need`, `shared_path`);
- frames.py: Spark frames of a declared table's schema from literal rows;
- lakes.py: lakes built once per session from real logs (`first_run_lake`, `report_lake`);
- ground_truth.py: the IOR-sweep oracle (extracted features against IOR's own parameters);
- covering.py: interval unions and pydarshan's DXT ops (the covering-set oracle);
- viewcheck.py: the PrismIO SQL views against `IOFrame`, log by log;
- tags_lab.py: one job per bottleneck rule's case and near miss;
- darshan_writer.py: small and huge DXT logs of format 3.41, written byte by byte;
- synthetic_darshan.py: logs of every format, version, byte order and compression, and the
  reference decode (libdarshan-util).
"""
