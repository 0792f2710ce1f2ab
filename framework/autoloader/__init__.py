"""Auto Loader (``cloudFiles``) for open-source Spark.

``load_cloud_files`` builds the streaming DataFrame (``reusable_source`` tells whether it may start a while
later), ``clean_source`` applies ``cloudFiles.cleanSource`` after a
committed run, ``translate_stream_error`` maps a failed query's exception to the framework's errors, and
``watch`` (in :mod:`framework.autoloader.watch`) triggers updates when files land.
"""

from framework.autoloader.api import clean_source, load_cloud_files, reusable_source, translate_stream_error
from framework.autoloader.watch import watch

__all__ = ["clean_source", "load_cloud_files", "reusable_source", "translate_stream_error", "watch"]
