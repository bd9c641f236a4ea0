"""What leaves the program: CSV and Parquet tables, GraphML per round and the run card."""
