"""History: events a channel keeps after delivering them, and queries over them
(issue 21; docs/history.md). This layer is pure: the query and its semantics."""
