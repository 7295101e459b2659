"""Output: the report model shared by the PDF, the CSV and `size` text output."""
