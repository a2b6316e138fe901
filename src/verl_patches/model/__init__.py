"""Data model of the series: pure parsing and formatting, no I/O."""
