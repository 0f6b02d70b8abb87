"""Renderings of an audit result (the stats dict): console, Markdown."""
