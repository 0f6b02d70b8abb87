"""Renderings of an audit: one outline (outline.py) drawn by the console, Markdown and HTML, its rows and lines
(text.py), figures (plots.py), example probes from the audited set (examples.py), and the grid's report."""
