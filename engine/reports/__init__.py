"""What leaves the program: the export formats (``export.FORMATS``: CSV or Parquet tables,
the run card, GraphML per round), runs as DataFrames (``analysis``) and self-contained HTML
reports of a run or a trial (``html``)."""
