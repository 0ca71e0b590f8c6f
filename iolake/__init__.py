"""iolake: Spark batch analytics for HPC I/O traces (Darshan, Recorder) into Delta tables."""

__version__ = "0.1.0"
