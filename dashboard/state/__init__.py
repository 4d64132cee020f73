"""What a session holds: its model (the one owner), the caches behind it, its baseline, its atlas,
the link that reproduces its view, the pages' own choices and one-shot messages (their one writer,
:mod:`~dashboard.state.choices`), presentation mode and the upload store.
"""
