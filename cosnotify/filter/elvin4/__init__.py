"""Placeholder: the elvin4 grammar package (issue 19); registers itself on import when built."""
