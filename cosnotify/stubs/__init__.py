"""Generated IDL modules (committed). Regenerate with `python -m cosnotify.idl --regen`."""
