"""Content-based routing at scale: one predicate index over a channel's filters.

``terms`` says what a constraint needs to be TRUE (index terms, grammar
neutral); ``index`` looks events up in those terms; ``router`` turns matched
filters into the proxy suppliers that receive an event (section 2.3's
AND/OR InterFilterGroupOperator semantics). docs/routing.md is the guide.
"""
