"""The Qt user interface. Only this package imports PySide6 and pyqtgraph."""
