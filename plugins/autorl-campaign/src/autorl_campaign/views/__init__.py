"""The views of a campaign comparison: terminal tables, figures, HTML page, CSV/Parquet files."""
