"""Placeholder: the oes grammar package (issue 19); registers itself on import when built."""
