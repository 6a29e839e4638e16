"""The web console on the FE's HTTP port (http://fe:8030/): pages for the cluster, the catalog,
a SQL editor, sessions, loads, charts and config, for a user logged in with a MySQL account.

Every page is the answer of SQL statements run as the logged-in user (SHOW FRONTENDS, SHOW
TABLES, SHOW PROCESSLIST, ...), so a user sees here exactly what it may see over MySQL. Pages are
Jinja2 templates; htmx refreshes and pages them; uPlot draws the charts; Pico styles them. The
libraries are vendored under static/vendor (no CDN, no build step)."""
