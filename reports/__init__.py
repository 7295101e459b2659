"""Report renderers that need Qt's painting (PDF); the report model and CSV live in core/."""
