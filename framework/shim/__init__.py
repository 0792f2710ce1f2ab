"""Module objects installed as ``dlt`` and ``pyspark.pipelines`` while a pipeline is loaded."""
