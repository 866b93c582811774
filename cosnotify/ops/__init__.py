"""Operations: counters read as a snapshot (``stats``) and a Prometheus endpoint.

Strategy: the core counts (cosnotify/channel, docs/operations.md); this
package only reads. ``stats`` is the plain snapshot; ``metrics`` turns it into
Prometheus families at scrape time and serves them for ``cosnotify serve
--metrics``. Importing this package does not import prometheus_client.
"""

from cosnotify.ops.stats import stats

__all__ = ["stats"]
