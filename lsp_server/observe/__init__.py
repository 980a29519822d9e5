"""What the server tells about itself: counters, metrics, hints, SLOs, traces.

The request counters, the metrics registry and its Prometheus exposition,
the HTTP endpoint and dashboard (which read the server through the
``StatsView`` callable the endpoint is given), the hints derived from the
metrics, SLO checks, and the trace format with its reader and writer.
Imported, not importing: nothing else of ``lsp_server`` but the settings
model.
"""
