"""The batch jobs' library side: configuration, runner and one module per job.

``jobs/<job>.py`` are thin entry points: they call :func:`fermion.spark.jobs.runner.run`
with the job's config class and function from here. Configuration keys and overlay rules:
``conf/README.md``.
"""

from __future__ import annotations
