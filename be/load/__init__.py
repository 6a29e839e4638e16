"""Bulk loads into the data plane: Doris's Stream Load served on a backend HTTP port, its rows
converted to the table's types and written as block objects, then committed on the TN at once."""
