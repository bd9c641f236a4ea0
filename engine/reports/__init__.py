"""What leaves the program: the export formats (``export.FORMATS``: CSV or Parquet tables,
the run card, GraphML per round)."""
