"""Measurements made by other tools, read into collie: perftest and nccl-tests logs.

The parsers here are pure: text in, frozen dataclasses out, never a print. :mod:`collie.importers.perftest`
reads the output of ``ib_write_bw``, ``ib_read_lat`` and the other perftest tools (their text, and the JSON that
``--out_json`` writes); :mod:`collie.importers.nccl_tests` reads ``all_reduce_perf`` and the other nccl-tests
programs. :mod:`collie.importers.text` holds what both need of a log's lines.

Invariants:
    * a log that is not such output, or a row that cannot be read, raises :class:`~collie.errors.InputError`
      with one sentence naming the file and the line (``run.log:42: ...``); nothing else escapes for any text;
    * a run cut short (killed before its summary) is returned with the rows it has and a warning, each warning
      one sentence that names the file and line, in the result's ``warnings``.
"""
