"""``medallion serve``: a warm local engine, one background process per repository that holds a started
SparkSession and runs ``medallion run``, ``validate``, ``report`` and ``state`` for the command line.

Modules: ``protocol`` (framed messages over a Unix socket, pure), ``paths`` (where the socket, pid file and log
live; owner-only permissions), ``client`` (what the command line does when a server runs), ``request`` (one
request inside the server: environment, output, fresh pipeline modules, no secrets kept), ``server`` (the
process and its accept loop) and ``control`` (``medallion serve`` itself: start, ``--stop``, ``--status``).
"""

from framework.serve.errors import ServeError

__all__ = ["ServeError"]
