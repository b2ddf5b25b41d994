"""The batch jobs' library side: configuration, runner and one module per job.

``jobs/<job>.py`` are thin entry points: they call :func:`fermion.spark.jobs.runner.run`
with the job's config class and function from here. Configuration keys and overlay rules:
``conf/README.md``.

Example:
    >>> from fermion.spark.jobs.runner import parse_args
    >>> args = parse_args("ingest", ["--config", "conf/ingest.yaml", "--env", "local"])
    >>> args.config, args.env
    ('conf/ingest.yaml', 'local')
"""

from __future__ import annotations
